"""The Scheduler's due order, kept in memory: one heap per host, and a heap of the hosts.

The Scheduler asks for up to `limit` due sources several times a second. Asked of SQLite
(a window function over every due source, sorted), each answer cost O(due): 288 ms at
100,000 sources, and the Scheduler, one thread, dispatched almost nothing. Here a pick
costs O(picked · log n): each host keeps its sources in a heap by `next_run_at`, and a
heap of hosts by their earliest source finds the hosts with something due without
looking at the others.

The order is the one the Scheduler always used: round-robin across hosts, the most
overdue source of every host first (hosts by that source's time), then the second of
every host, and so on, so a host with a long backlog cannot fill the window another
host's due source needs. Hosts that cannot take a request now and sources already being
scraped are left out.

Entries are never removed in place: `put` records a source's time and pushes a new entry;
an entry whose (time, host) is no longer the source's is dropped when it reaches the top
of its heap ("lazy deletion"). The heaps are rebuilt when such stale entries outnumber
the live ones.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterable

Entry = tuple[float, str]   # (next_run_at, source name) in a host's heap; (earliest time, host) in the hosts' heap


class DueIndex:
    """The sources that can be scheduled (not paused, ACTIVE or DEGRADED, with a next run),
    with their host and next run time."""

    def __init__(self, rows: Iterable[tuple[str, str, float | None]] = ()):
        self._at: dict[str, tuple[float, str]] = {}     # name -> (next_run_at, host)
        self._heaps: dict[str, list[Entry]] = {}        # host -> its sources' entries (some stale)
        self._heads: list[Entry] = []                   # (a host's earliest time, host), some stale
        self._head_of: dict[str, float] = {}            # host -> the time of its live entry in _heads
        self._entries = 0                               # entries in the hosts' heaps, stale ones included
        for name, host, at in rows:
            self.put(name, host, at)

    def __len__(self) -> int:
        return len(self._at)

    def __contains__(self, name: object) -> bool:
        return name in self._at

    def get(self, name: str) -> tuple[float, str] | None:
        """(next_run_at, host) of a schedulable source, else None."""
        return self._at.get(name)

    def put(self, name: str, host: str, at: float | None) -> None:
        """Record `name`'s next run on `host`; None: it cannot be scheduled (paused, quarantined,
        dead, removed)."""
        if at is None:
            self._at.pop(name, None)
            return
        at = float(at)
        if self._at.get(name) == (at, host):
            return
        self._at[name] = (at, host)
        self._push(host, (at, name))
        if self._entries > 2 * len(self._at) + 1024:
            self._rebuild()

    def discard(self, name: str) -> None:
        self._at.pop(name, None)

    def due(self, now: float, skip_hosts: Collection[str], skip_names: Collection[str], limit: int) -> list[str]:
        """Up to `limit` names due at `now`, round-robin across hosts (see the module's doc), without
        the hosts of `skip_hosts` and the sources of `skip_names`. Nothing is taken out: a source
        stays due until `put` gives it a later time."""
        if limit <= 0:
            return []
        taken: dict[str, list[Entry]] = {}   # host -> the entries popped from its heap, pushed back below
        touched: list[str] = []              # hosts whose entry in _heads was popped
        current: list[tuple[float, str, str]] = []   # this round: (time, name, host)
        seen: set[Entry] = set()             # the entries popped (a second copy of one is stale)
        try:
            # Round 1: the hosts by their earliest time, until no host left can have a candidate
            # earlier than the `limit`-th found (a host's candidate is never earlier than its entry
            # in _heads; it is later when its first sources are skipped).
            worst: list[float] = []   # the `limit` earliest candidate times, negated (a max-heap)
            while self._heads and self._heads[0][0] <= now \
                    and (len(worst) < limit or self._heads[0][0] <= -worst[0]):
                t, host = heapq.heappop(self._heads)
                if self._head_of.get(host) != t:
                    continue   # stale: the host's live entry is elsewhere in the heap
                del self._head_of[host]
                touched.append(host)
                if host in skip_hosts:
                    continue
                found = self._next(host, now, skip_names, taken, seen)
                if found is not None:
                    current.append((found[0], found[1], host))
                    if len(worst) < limit:
                        heapq.heappush(worst, -found[0])
                    elif found[0] < -worst[0]:
                        heapq.heapreplace(worst, -found[0])
            picked: list[str] = []
            while current and len(picked) < limit:
                current.sort()
                following = []
                for _t, name, host in current:
                    if len(picked) >= limit:
                        break
                    picked.append(name)
                    found = self._next(host, now, skip_names, taken, seen)
                    if found is not None:
                        following.append((found[0], found[1], host))
                current = following
            return picked
        finally:
            for host, entries in taken.items():
                heap = self._heaps[host]
                for entry in entries:
                    heapq.heappush(heap, entry)
            for host in {*touched, *taken}:
                self._refresh_head(host)

    # -- internals ------------------------------------------------------------------------------
    def _valid(self, host: str, entry: Entry) -> bool:
        return self._at.get(entry[1]) == (entry[0], host)

    def _next(self, host: str, now: float, skip_names: Collection[str],
              taken: dict[str, list[Entry]], seen: set[Entry]) -> Entry | None:
        """Pop `host`'s next due entry not in `skip_names` (kept in `taken`, to be pushed back);
        stale entries met on the way are dropped for good."""
        heap = self._heaps.get(host)
        while heap:
            entry = heap[0]
            if entry in seen:
                heapq.heappop(heap)    # a second copy (the source was set back to a time it had): stale
                self._entries -= 1
                continue
            if not self._valid(host, entry):
                heapq.heappop(heap)
                self._entries -= 1
                continue
            if entry[0] > now:
                return None
            heapq.heappop(heap)
            taken.setdefault(host, []).append(entry)
            seen.add(entry)
            if entry[1] not in skip_names:
                return entry
        return None

    def _push(self, host: str, entry: Entry) -> None:
        heapq.heappush(self._heaps.setdefault(host, []), entry)
        self._entries += 1
        head = self._head_of.get(host)
        if head is None or entry[0] < head:
            self._head_of[host] = entry[0]
            heapq.heappush(self._heads, (entry[0], host))

    def _refresh_head(self, host: str) -> None:
        """Give `host` a live entry in _heads at its earliest live time (or none when it has none)."""
        heap = self._heaps.get(host)
        while heap and not self._valid(host, heap[0]):
            heapq.heappop(heap)
            self._entries -= 1
        if not heap:
            self._heaps.pop(host, None)
            self._head_of.pop(host, None)
            return
        t = heap[0][0]
        if self._head_of.get(host) != t:
            self._head_of[host] = t
            heapq.heappush(self._heads, (t, host))

    def _rebuild(self) -> None:
        """Drop every stale entry (more of them than live ones)."""
        by_host: dict[str, list[Entry]] = {}
        for name, (at, host) in self._at.items():
            by_host.setdefault(host, []).append((at, name))
        for heap in by_host.values():
            heapq.heapify(heap)
        self._heaps = by_host
        self._entries = len(self._at)
        self._head_of = {host: heap[0][0] for host, heap in by_host.items()}
        self._heads = [(t, host) for host, t in self._head_of.items()]
        heapq.heapify(self._heads)
