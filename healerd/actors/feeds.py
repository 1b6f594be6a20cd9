"""FeedDispatcher: delivers every stored scrape to the configured feeds ([[feeds]]).

The delivery runs in a child process of its own (`python -P -m healerd.actors.feeds_process`,
a fresh interpreter at a lower CPU priority), so it never takes the daemon's GIL from the
scrapes: its threads, one per feed (a slow or failing feed holds up no other), read the stored
scrapes after their feed's cursor from SQLite (a batch at a time, oldest first: the backlog
stays in the database, not in memory), hand them to the feed's sink (healerd.adapters.feeds),
and report on a pipe how far the sink confirmed. The actor's reader thread turns each report
into a write by the StoreWriter, the one writer: the cursor moves only past what was
delivered (at least once, in order). While a feed fails it retries with exponential backoff
and jitter; the outage raises one alert when it starts and one RECOVERED when it ends
(Ledger.feed_failed / feed_advanced), not one per retry. A child that dies is started again
from the stored cursors; one left behind by a killed daemon sees its pipe close and exits.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import logging
import random
import subprocess
import sys
import threading
from collections.abc import Callable

import pykka

from healerd.actors.base import fetch_config
from healerd.actors.messages import Ping
from healerd.actors.registry import ActorRegistry
from healerd.adapters.feeds import make_sink
from healerd.adapters.fetch import FetchConfig
from healerd.config import Config, FeedSection
from healerd.core.sanitize import Secret, reveal
from healerd.store import feeds as feeds_store
from healerd.store.db import connect
from healerd.store.ledger import Ledger

log = logging.getLogger("healerd.feeds")

BATCH = 100            # stored scrapes read at once (and at most 8 MB of them: feeds_store.pending)
POLL_S = 0.25          # how often an idle feed looks for new scrapes
FIRST_RETRY_S = 1.0    # the first wait after a failure; doubles up to the feed's retry_max
RESTART_S = 5.0        # after an unexpected error in a feed's loop, or its process's death
STOP_S = 2.0           # the child's time to finish at shutdown before it is killed

Report = Callable[[dict], None]


def source_matcher(globs: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a source name matches one of the feed's shell-style globs (answers cached)."""
    if "*" in globs:
        return lambda _name: True
    seen: dict[str, bool] = {}

    def wanted(name: str) -> bool:
        hit = seen.get(name)
        if hit is None:
            if len(seen) > 100_000:
                seen.clear()
            hit = seen[name] = any(fnmatch.fnmatchcase(name, g) for g in globs)
        return hit
    return wanted


def backoff(attempt: int, cap: float, rng: random.Random) -> float:
    """The wait before try `attempt + 1` of a failing feed: doubling from FIRST_RETRY_S up to
    `cap`, each wait drawn between half and all of it (jitter: feeds that failed together do
    not all come back at once)."""
    full = min(cap, FIRST_RETRY_S * (2 ** min(attempt, 30)))
    return full * rng.uniform(0.5, 1.0)


class FeedWorker(threading.Thread):
    """One feed's delivery loop (in the feeds process); `report` sends what it did to the daemon."""

    def __init__(self, feed: FeedSection, db_path: str, fetch: FetchConfig, report: Report, stop: threading.Event):
        super().__init__(name=f"healerd-feed-{feed.name[:40]}", daemon=True)
        self.feed = feed
        self.db_path = db_path
        self.fetch = fetch
        self.report = report
        self.stop = stop
        self.wanted = source_matcher(feed.sources)
        self.rng = random.Random()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self._serve()
            except Exception:   # e.g. the database unreadable for a moment: start over from the stored cursor
                log.exception("feed %s: delivery loop failed; starting it again in %.0f s", self.feed.name, RESTART_S)
                self.stop.wait(RESTART_S)

    def _serve(self) -> None:
        feed = self.feed
        conn = connect(self.db_path, readonly=True)
        sink = make_sink(feed, self.fetch)
        try:
            state = feeds_store.get(conn, feed.name)
            if state is None:   # never: the dispatcher keeps a row per configured feed before starting it
                raise RuntimeError(f"no cursor stored for feed {feed.name}")
            cursor = state["cursor"]
            attempt = 0
            while not self.stop.is_set():
                batch = feeds_store.pending(conn, cursor, BATCH)
                if not batch:
                    self.stop.wait(POLL_S)
                    continue
                todo = [r for r in batch if self.wanted(r["source_name"])
                        and (not feed.only_changes or (r["size"] or 0) > 0)]
                done, error = sink.deliver([(r["source_name"], feeds_store.payload(r)) for r in todo],
                                           self.stop.is_set) if todo else (0, None)
                if self.stop.is_set():   # what was delivered is reported; a daemon gone reads nothing
                    if done:
                        self.report({"op": "progress", "feed": feed.name, "cursor": todo[done - 1]["id"],
                                     "delivered": done})
                    return
                if error is None:
                    cursor = batch[-1]["id"]
                    self.report({"op": "advanced", "feed": feed.name, "cursor": cursor, "delivered": done})
                    attempt = 0
                    if len(batch) < BATCH:   # caught up: let the next scrapes gather into one batch
                        self.stop.wait(POLL_S)
                    continue
                # Everything below the first scrape not delivered is done (delivered, or not for this feed).
                cursor = max(cursor, todo[done]["id"] - 1)
                if done:
                    self.report({"op": "progress", "feed": feed.name, "cursor": cursor, "delivered": done})
                if attempt == 0:
                    log.warning("feed %s: %s; retrying with backoff", feed.name, error)
                else:
                    log.debug("feed %s still failing: %s", feed.name, error)
                self.report({"op": "failed", "feed": feed.name, "error": error})
                self.stop.wait(backoff(attempt, feed.retry_max, self.rng))
                attempt += 1
        finally:
            sink.close()
            conn.close()

def to_wire(feed: FeedSection) -> dict:
    """A feed as the feeds process is sent it (its secrets revealed: the pipe is the daemon's own)."""
    d = dataclasses.asdict(feed)
    d["url"] = reveal(feed.url)
    d["headers"] = {k: reveal(v) for k, v in feed.headers.items()}
    return d


def from_wire(d: dict) -> FeedSection:
    return FeedSection(**{**d, "url": Secret(d["url"]), "headers": {k: Secret(v) for k, v in d["headers"].items()},
                          "sources": tuple(d["sources"])})


def child_main() -> None:
    """The feeds process: one line of set-up on stdin (database, feeds, fetch settings), then a
    thread per feed until stdin closes (the daemon stopping it, or gone); reports on stdout."""
    import signal

    from healerd import logsetup

    # A stop signal sent to the whole service (systemd's SIGTERM to the cgroup, Ctrl-C's SIGINT to
    # the process group) is the daemon's to handle: it closes our stdin once it stops the feeds.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    setup = json.loads(sys.stdin.readline())
    logsetup.setup(setup.get("log_level", "INFO"))
    fetch = FetchConfig(**setup["fetch"])
    stop = threading.Event()
    lock = threading.Lock()

    def report(msg: dict) -> None:
        with lock:
            sys.stdout.write(json.dumps(msg) + "\n")
            sys.stdout.flush()

    workers = [FeedWorker(from_wire(d), setup["db_path"], fetch, report, stop) for d in setup["feeds"]]
    for w in workers:
        w.start()
    try:
        sys.stdin.read()
    finally:
        stop.set()
        for w in workers:
            w.join(timeout=STOP_S)


class FeedDispatcher(pykka.ThreadingActor):
    """Receives only Ping; the feeds process does the work (see the module's docstring)."""

    use_daemon_thread = True

    def __init__(self, db_path: str, config: Config, registry: ActorRegistry):
        super().__init__()
        self.db_path = db_path
        self.config = config
        self.registry = registry
        self.stop_event = threading.Event()
        self.proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def on_start(self) -> None:
        # From a thread of its own: the first write waits for the StoreWriter, which may be refusing
        # writes for a while (a full disk); the actor itself never blocks, nor dies of it.
        threading.Thread(target=self._supervise, name="healerd-feeds", daemon=True).start()

    def _supervise(self) -> None:
        """Keep one cursor per configured feed (and drop those of feeds no longer configured,
        which would hold records retention back), then keep the feeds process running."""
        feeds = self.config.feeds
        attempt = 0
        while not self.stop_event.is_set():
            try:
                added = self.registry.write(Ledger.sync_feeds, [f.name for f in feeds])
                break
            except Exception as exc:
                if attempt == 0:
                    log.warning("feeds: cannot record the configured feeds yet (%s); retrying", exc)
                self.stop_event.wait(backoff(attempt, 30.0, random.Random()))
                attempt += 1
        else:
            return
        for name in added:
            log.info("feed %s: new, delivers the scrapes stored from now on", name)
        while feeds and not self.stop_event.is_set():
            code = self._run_child()
            if self.stop_event.is_set():
                return
            log.error("the feeds process exited (%s); starting it again in %.0f s from the stored cursors",
                      code, RESTART_S)
            self.stop_event.wait(RESTART_S)

    def _run_child(self) -> int | None:
        setup = {"db_path": self.db_path, "feeds": [to_wire(f) for f in self.config.feeds],
                 "fetch": dataclasses.asdict(fetch_config(self.config)), "log_level": self.config.daemon.log_level}
        with self._lock:
            if self.stop_event.is_set():
                return None
            self.proc = proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "healerd.actors.feeds_process"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, close_fds=True, text=True, encoding="utf-8")
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(setup) + "\n")
            proc.stdin.flush()
        except OSError:
            pass
        for line in proc.stdout:
            try:
                self._record(json.loads(line))
            except Exception as exc:   # the cursor stays behind: those scrapes may come twice, never lost
                log.warning("feeds: could not record a delivery report (%s)", exc)
        return proc.wait()

    def _record(self, msg: dict) -> None:
        op, feed = msg["op"], msg["feed"]
        if op == "advanced":
            self.registry.write(Ledger.feed_advanced, feed, int(msg["cursor"]), int(msg["delivered"]))
        elif op == "progress":
            self.registry.write(Ledger.feed_progress, feed, int(msg["cursor"]), int(msg["delivered"]))
        elif op == "failed":
            self.registry.write(Ledger.feed_failed, feed, str(msg["error"]))

    def on_stop(self) -> None:
        with self._lock:
            self.stop_event.set()
            proc = self.proc
        if proc is None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.close()   # the feeds process finishes the delivery in hand, then exits
        except OSError:
            pass
        try:
            proc.wait(timeout=STOP_S + 1.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def on_receive(self, message):
        if isinstance(message, Ping):
            return self.proc is None or self.proc.poll() is None
        return None
