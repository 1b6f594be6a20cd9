"""FeedDispatcher: delivers every stored scrape to the configured feeds ([[feeds]]).

The actor owns one thread per feed, so a slow or failing feed never holds up another. Each
thread reads, on its own connection, the stored scrapes after its feed's cursor (a batch at a
time, oldest first: the backlog stays in SQLite, not in memory), hands the ones for its feed
to the feed's sink (healerd.adapters.feeds), and asks the StoreWriter to advance the cursor
past what the sink confirmed: at least once, in order. While a feed fails it retries with
exponential backoff and jitter; the outage raises one alert when it starts and one
RECOVERED when it ends (Ledger.feed_failed / feed_advanced), not one per retry.
"""

from __future__ import annotations

import fnmatch
import logging
import random
import threading
import time
from collections.abc import Callable

import pykka

from healerd.actors.base import fetch_config
from healerd.actors.messages import Ping
from healerd.actors.registry import ActorRegistry
from healerd.adapters.feeds import make_sink
from healerd.config import Config, FeedSection
from healerd.store import feeds as feeds_store
from healerd.store.db import connect
from healerd.store.ledger import Ledger

log = logging.getLogger("healerd.feeds")

BATCH = 100            # stored scrapes read at once (a listing's records come along: keep it modest)
POLL_S = 0.25          # how often an idle feed looks for new scrapes
FIRST_RETRY_S = 1.0    # the first wait after a failure; doubles up to the feed's retry_max
RESTART_S = 5.0        # after an unexpected error in a feed's loop (not a delivery failure)


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
    def __init__(self, feed: FeedSection, db_path: str, config: Config, registry: ActorRegistry,
                 stop: threading.Event):
        super().__init__(name=f"healerd-feed-{feed.name[:40]}", daemon=True)
        self.feed = feed
        self.db_path = db_path
        self.config = config
        self.registry = registry
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
        conn = connect(self.db_path)
        sink = make_sink(feed, fetch_config(self.config))
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
                done, error = sink.deliver([(r["source_name"], feeds_store.payload(r)) for r in todo]) \
                    if todo else (0, None)
                if error is None:
                    cursor = batch[-1]["id"]
                    self._write(Ledger.feed_advanced, feed.name, cursor, done)
                    attempt = 0
                    if len(batch) < BATCH:   # caught up: let the next scrapes gather into one batch
                        self.stop.wait(POLL_S)
                    continue
                # Everything below the first scrape not delivered is done (delivered, or not for this feed).
                cursor = max(cursor, todo[done]["id"] - 1)
                if done:
                    self._write(Ledger.feed_progress, feed.name, cursor, done)
                if attempt == 0:
                    log.warning("feed %s: %s; retrying with backoff", feed.name, error)
                else:
                    log.debug("feed %s still failing: %s", feed.name, error)
                self._write(Ledger.feed_failed, feed.name, error)
                self.stop.wait(backoff(attempt, feed.retry_max, self.rng))
                attempt += 1
        finally:
            sink.close()
            conn.close()

    def _write(self, method, *args) -> None:
        try:
            self.registry.write(method, *args)
        except Exception as exc:   # the cursor stays behind: those scrapes may be delivered twice, never lost
            log.warning("feed %s: could not record its progress (%s)", self.feed.name, exc)


class FeedDispatcher(pykka.ThreadingActor):
    """Receives only Ping; its feed threads do the work (see the module's docstring)."""

    use_daemon_thread = True

    def __init__(self, db_path: str, config: Config, registry: ActorRegistry):
        super().__init__()
        self.db_path = db_path
        self.config = config
        self.registry = registry
        self.stop_event = threading.Event()
        self.workers: list[FeedWorker] = []

    def on_start(self) -> None:
        # From a thread of its own: the first write waits for the StoreWriter, which may be refusing
        # writes for a while (a full disk); the actor itself never blocks, nor dies of it.
        threading.Thread(target=self._start_feeds, name="healerd-feeds-start", daemon=True).start()

    def _start_feeds(self) -> None:
        """Keep one cursor per configured feed (and drop those of feeds no longer configured,
        which would hold records retention back), then start a thread per feed."""
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
        for feed in feeds:
            if self.stop_event.is_set():
                return
            w = FeedWorker(feed, self.db_path, self.config, self.registry, self.stop_event)
            w.start()
            self.workers.append(w)

    def on_stop(self) -> None:
        self.stop_event.set()
        until = time.monotonic() + 2.0
        for w in self.workers:   # a POST in flight ends by its own deadline; the threads are daemon threads
            w.join(timeout=max(0.0, until - time.monotonic()))

    def on_receive(self, message):
        if isinstance(message, Ping):
            return all(w.is_alive() for w in self.workers)
        return None
