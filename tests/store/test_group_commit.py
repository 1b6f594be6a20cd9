"""Group commit: scrape outcomes queued back to back are written in one transaction.

The Ledger's record_scrapes on a real SQLite file, and the real StoreWriter actor
draining its inbox, with the `then` messages told only once the group is committed.
"""

from __future__ import annotations

import threading
import time

import apsw
import pykka
import pytest

from healerd.actors.messages import ScrapeDone
from healerd.actors.registry import ActorRegistry
from healerd.actors.store_writer import StoreWriter
from healerd.store.db import connect, open_db
from healerd.store.ledger import Ledger
from healerd.store.sql import scalar
from healerd.waiters import Waiters
from tests.support.ledger_kit import Clock, add, bad, config, good, health


def count_commits(c) -> list[int]:
    commits = [0]

    def hook():
        commits[0] += 1
        return False   # let it commit

    c.set_commit_hook(hook)
    return commits


def test_several_outcomes_commit_in_one_transaction_and_a_failing_one_alone_rolls_back(conn, make_ledger):
    led = make_ledger()
    for name in ("a", "b", "c"):
        add(led, name, good_past=False)   # counts start at zero: only this group's outcomes are counted
    commits = count_commits(conn)
    poison = good(led, "c", data=[{"name": object()}])     # its records cannot be serialised
    results = led.record_scrapes([good(led, "a"), bad(led, "b"), poison])
    conn.set_commit_hook(None)

    assert commits[0] == 1
    assert not isinstance(results[0], Exception) and results[0].result["ok"] is True
    assert not isinstance(results[1], Exception) and [a["event"] for a in results[1].alerts] == ["DEGRADED"]
    assert isinstance(results[2], TypeError)
    assert health(conn, "a")["success_count"] == 1 and health(conn, "a")["last_error"] is None
    assert health(conn, "b")["failure_count"] == 1 and health(conn, "b")["state"] == "DEGRADED"
    assert health(conn, "c")["success_count"] == 0
    assert scalar(conn, "SELECT count(*) FROM records WHERE source_name = 'c'") == 0
    assert scalar(conn, "SELECT count(*) FROM records WHERE source_name = 'a'") == 1


def test_a_group_that_cannot_commit_keeps_nothing(conn, make_ledger):
    led = make_ledger()
    for name in ("a", "b"):
        add(led, name, good_past=False)   # counts start at zero: only this group's outcomes are counted
    conn.set_commit_hook(lambda: True)   # every commit turns into a rollback
    with pytest.raises(apsw.ConstraintError):
        led.record_scrapes([good(led, "a"), bad(led, "b")])
    conn.set_commit_hook(None)
    assert health(conn, "a")["success_count"] == 0 and health(conn, "b")["failure_count"] == 0
    assert health(conn, "b")["state"] == "ACTIVE"
    assert led.model("b").state == "ACTIVE"     # the cached lifecycle model followed the rollback


class Collector(pykka.ThreadingActor):
    """Receives the `then` messages; notes whether each outcome was already committed then."""

    def __init__(self, db_path: str):
        super().__init__()
        self.db_path = db_path
        self.seen: list[tuple[str, bool]] = []

    def on_receive(self, message):
        if isinstance(message, ScrapeDone):
            c = connect(self.db_path, readonly=True)
            try:
                n = scalar(c, "SELECT success_count + failure_count FROM source_health WHERE source_name = ?",
                           (message.name,))
            finally:
                c.close()
            self.seen.append((message.name, n == 1))
            return None
        return list(self.seen)


@pytest.fixture
def writer(tmp_path):
    db_path = str(tmp_path / "healerd.db")
    open_db(db_path).close()
    reg = ActorRegistry()
    ref = StoreWriter.start(db_path, config(), reg, Waiters())
    reg.set("writer", ref)
    collector = Collector.start(db_path)
    reg.set("scheduler", collector)
    yield reg, ref, collector
    ref.stop()
    collector.stop()


def test_the_writer_commits_queued_outcomes_together_and_tells_then_after_the_commit(writer):
    reg, ref, collector = writer
    led_clock = Clock(time.time())

    class Fake:   # what good()/bad() need of a ledger: its clock
        clock = led_clock

    names = [f"s{i}" for i in range(6)]
    for name in names:
        reg.write(Ledger.call, lambda c, n=name: add_source(c, n))
    gate = threading.Event()
    held: list = []

    def hold(c):   # hold the writer while the outcomes queue up; count commits from here on
        held.append(count_commits(c))
        gate.wait(10)

    reg.write_later(Ledger.call, hold)
    for i, name in enumerate(names):
        outcome = good(Fake, name) if i % 2 == 0 else bad(Fake, name)
        reg.write_then(("scheduler", ScrapeDone(name, "shop.example")), None, Ledger.record_scrape, outcome)
    gate.set()
    deadline = time.time() + 15
    while len(collector.ask("seen")) < len(names) and time.time() < deadline:
        time.sleep(0.02)
    seen = collector.ask("seen")
    assert sorted(n for n, _ in seen) == names
    assert all(committed for _, committed in seen), seen     # never told before its outcome is in SQLite
    # Every write is one transaction: the holding call's own, then the six outcomes' one.
    assert held[0][0] == 2


def test_a_group_that_cannot_commit_is_written_one_by_one(writer):
    reg, ref, collector = writer
    led_clock = Clock(time.time())

    class Fake:
        clock = led_clock

    names = ["x", "y", "z"]
    for name in names:
        reg.write(Ledger.call, lambda c, n=name: add_source(c, n))
    vetoed = []
    gate = threading.Event()

    def veto_the_group(c):
        commits = [0]

        def hook():
            commits[0] += 1
            if commits[0] == 2:   # the first is this call's own transaction; the second, the group's
                vetoed.append(True)
                return True    # the group's commit becomes a rollback
            return False
        c.set_commit_hook(hook)
        gate.wait(10)          # hold the writer while the outcomes queue up

    reg.write_later(Ledger.call, veto_the_group)
    for name in names:
        reg.write_then(("scheduler", ScrapeDone(name, "shop.example")), None, Ledger.record_scrape, good(Fake, name))
    gate.set()
    deadline = time.time() + 15
    while len(collector.ask("seen")) < len(names) and time.time() < deadline:
        time.sleep(0.02)
    seen = collector.ask("seen")
    assert vetoed == [True]
    assert sorted(n for n, _ in seen) == names and all(ok for _, ok in seen), seen


def add_source(c, name: str) -> None:
    from healerd.core.blueprint import from_dict
    from healerd.store import sources

    bp = from_dict({"url": f"http://shop.example/{name}", "every": 600, "items": "li.p",
                    "fields": {"name": {"css": ".n"}, "price": {"css": ".v", "type": "float"}}})
    with c:
        sources.add(c, name, bp)
