"""The Scheduler's in-memory due order (healerd.core.due.DueIndex) against the rule it keeps.

The rule, written the slow way: among the due sources (time <= now) not skipped, number each
host's sources by time (1st, 2nd, ...); take them by (number, time). The index must give the
same names as that rule after any sequence of changes (new times, sources leaving and coming
back, hosts moving), while the heaps hold stale entries.
"""

from __future__ import annotations

import random

from healerd.core.due import DueIndex


def reference(at: dict[str, tuple[float, str]], now: float, skip_hosts, skip_names, limit: int) -> list[str]:
    due = sorted((t, name, host) for name, (t, host) in at.items()
                 if t <= now and host not in skip_hosts and name not in skip_names)
    nth: dict[str, int] = {}
    ranked = []
    for t, name, host in due:
        nth[host] = nth.get(host, 0) + 1
        ranked.append((nth[host], t, name))
    return [name for _, _, name in sorted(ranked)[:limit]]


def test_round_robin_across_hosts_most_overdue_first():
    index = DueIndex([("a0", "h1", 1.0), ("a1", "h1", 2.0), ("a2", "h1", 3.0), ("b0", "h2", 5.0),
                      ("b1", "h2", 6.0), ("c0", "h3", 50.0)])
    assert index.due(10.0, set(), set(), 10) == ["a0", "b0", "a1", "b1", "a2"]
    assert index.due(10.0, set(), set(), 3) == ["a0", "b0", "a1"]
    assert index.due(10.0, {"h1"}, set(), 10) == ["b0", "b1"]
    assert index.due(10.0, set(), {"a0", "b0"}, 10) == ["a1", "b1", "a2"]
    assert index.due(0.5, set(), set(), 10) == []
    assert index.due(100.0, set(), set(), 0) == []
    # nothing was taken out: asking again gives the same answer
    assert index.due(10.0, set(), set(), 10) == ["a0", "b0", "a1", "b1", "a2"]


def test_a_new_time_a_pause_and_a_move_are_seen():
    index = DueIndex([("a0", "h1", 1.0), ("a1", "h1", 2.0), ("b0", "h2", 5.0)])
    index.put("a0", "h1", 99.0)       # scraped: next run later
    index.put("b0", "h2", None)       # paused (or quarantined, or removed)
    index.put("a1", "h3", 2.0)        # its URL moved to another host
    assert index.due(10.0, set(), set(), 10) == ["a1"]
    assert index.get("a1") == (2.0, "h3") and "b0" not in index and len(index) == 2
    assert index.due(10.0, {"h3"}, set(), 10) == []
    index.put("b0", "h2", 3.0)        # resumed
    assert index.due(10.0, set(), set(), 10) == ["a1", "b0"]
    assert index.due(100.0, set(), set(), 10) == ["a1", "b0", "a0"]


def test_matches_the_rule_through_random_changes():
    rng = random.Random(38)
    hosts = [f"h{i}" for i in range(12)]
    index = DueIndex()
    at: dict[str, tuple[float, str]] = {}
    for step in range(4000):
        name = f"s{rng.randrange(300)}"
        roll = rng.random()
        if roll < 0.1:
            index.put(name, rng.choice(hosts), None)
            at.pop(name, None)
        else:
            host = at[name][1] if name in at and roll < 0.8 else rng.choice(hosts)
            t = float(rng.randrange(0, 200))
            index.put(name, host, t)
            at[name] = (t, host)
        if step % 7 == 0:
            now = float(rng.randrange(0, 220))
            skip_hosts = set(rng.sample(hosts, rng.randrange(0, 3)))
            skip_names = set(rng.sample(sorted(at), min(len(at), rng.randrange(0, 20))))
            limit = rng.choice((1, 5, 32, 128, 1000))
            assert index.due(now, skip_hosts, skip_names, limit) == reference(at, now, skip_hosts, skip_names, limit), \
                f"step {step}"
    assert len(index) == len(at)
    assert index._entries <= 2 * len(at) + 1024   # stale entries are dropped, not kept for ever


def test_stale_entries_are_dropped_when_they_outnumber_the_live_ones():
    """A source whose time keeps moving later is never popped: its old entries are dropped by a
    rebuild of the heaps, not kept for ever."""
    index = DueIndex([("b", "h2", 5.0)])
    for i in range(5000):
        index.put("a", "h1", 1000.0 + i)
    assert index._entries <= 2 * len(index) + 1024
    assert index.due(10.0, set(), set(), 10) == ["b"]
    assert index.due(6000.0, set(), set(), 10) == ["b", "a"]
    index.put("a", "h1", 1.0)
    assert index.due(10.0, set(), set(), 10) == ["a", "b"]
