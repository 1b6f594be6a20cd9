"""Scheduler: decides what runs when.

On every Tick from the main thread it dispatches due sources to the Scraper pool
(respecting per-host concurrency, the politeness delay and robots.txt
crawl-delay), hands claimed FIX_SOURCE tasks to the Doctor one at a time, and
expires quarantines. It reads SQLite through its own connection and writes only
through the StoreWriter.

One bad site must not hurt the others, so:
- the due sources are taken round-robin across hosts, without the hosts that cannot
  take a request now, so a host with a long backlog cannot fill the window that another
  host's due source needs; the order is kept in memory (healerd.core.due.DueIndex, one
  heap per host), so a pick costs O(picked) at any fleet size;
- a job goes only to an idle Scraper: a Scraper works one job at a time, so a job
  queued behind a page that trickles until its deadline would wait as long;
- a job whose outcome never comes back (the actor holding it was replaced after a
  crash, its queue lost) is given up after `stale_after`, so the source runs again
  and its host gets its slot back.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass

import pykka

from healerd.actors.base import ServiceActor
from healerd.actors.messages import HealTask, ScrapeDone, ScrapeJob, ScraperFree, Tick
from healerd.actors.registry import ActorRegistry, Failure
from healerd.actors.scraper import cached_blueprint
from healerd.adapters.fetch import DEADLINE_FACTOR
from healerd.adapters.robots import RobotsPolicy
from healerd.config import Config
from healerd.core.due import DueIndex
from healerd.store import due as due_store
from healerd.store.faults import FaultLog
from healerd.store.ledger import Ledger
from healerd.store.sources import SourceNotFound
from healerd.waiters import Waiters

log = logging.getLogger("healerd.scheduler")

# Due rows fetched per Tick, per Scraper: those not dispatched at once wait in `ready`
# and refill a Scraper the moment it is free, so the pool is not idle until the next Tick.
READY_ROWS_PER_SCRAPER = 16
# Scrapes dispatched and not yet committed, per Scraper at most: a Scraper is free again once
# it has handed its page on (ScraperFree), so this bounds the pages waiting for validation
# and the StoreWriter (and the memory they hold).
IN_FLIGHT_PER_SCRAPER = 4
# How long the StoreWriter may take to commit an outcome (ActorRegistry.write's timeout).
WRITER_SLACK_S = 30.0

def hosts_in_delay(next_allowed: dict[str, float], now: float) -> set[str]:
    """Hosts still in their politeness delay: none of their rows is worth fetching before the next
    Tick. A host at its concurrency limit is not one of them: a slot frees the moment one of its
    scrapes is committed, and its rows must be in `ready` then (skipping them until the next Tick
    left a busy host's scrapers idle for up to a tick each time a Tick found it full)."""
    return {h for h, t in next_allowed.items() if t > now}


def uses_browser(blueprint_json: str) -> bool:
    return cached_blueprint(blueprint_json).fetch == "browser"


def stale_after(config: Config) -> float:
    """Seconds after which a dispatched job with no outcome is taken as lost.

    A job that is alive ends well before: a robots.txt fetch and the page fetch, each
    cut at its total deadline (timeout x DEADLINE_FACTOR), a third deadline for the
    parser and the queues, and the StoreWriter's time to commit the outcome.
    """
    return 3 * config.fetch.timeout * DEADLINE_FACTOR + WRITER_SLACK_S


def stale_jobs(dispatched_at: dict[str, float], now: float, bound: float) -> list[str]:
    """Names of the jobs dispatched more than `bound` seconds before `now`."""
    return [name for name, at in dispatched_at.items() if now - at > bound]


@dataclass(frozen=True)
class RunNow:
    """Control plane -> Scheduler: scrape `name` now (healerctl run)."""
    name: str
    request_id: str | None = None


@dataclass(frozen=True)
class HealNow:
    """Control plane -> Scheduler: run the Doctor on `name` now (healerctl heal)."""
    name: str
    request_id: str | None = None


@dataclass(frozen=True)
class DoctorIdle:
    """Doctor -> Scheduler: the Doctor finished its task and can take the next."""


@dataclass(frozen=True)
class Drain:
    """Main thread -> Scheduler at shutdown: dispatch nothing more."""


class Scheduler(ServiceActor):
    def __init__(self, db_path: str, config: Config, registry: ActorRegistry, robots: RobotsPolicy | None,
                 waiters: Waiters | None = None):
        super().__init__(db_path, config, registry)
        self.waiters = waiters
        self.pending_runs: dict[str, list[RunNow]] = {}
        self.robots = robots
        self.running: set[str] = set()
        self.in_flight: dict[str, int] = defaultdict(int)
        self.next_allowed: dict[str, float] = {}
        self.scraper_load: dict[int, int] = defaultdict(int)
        self.assigned: dict[str, tuple[int, str]] = {}   # source -> (scraper index, host) while in flight
        self.browser_jobs: set[str] = set()   # in flight with fetch = "browser": at most [browser] max_pages
        self.dispatched_at: dict[str, float] = {}
        self.ready: list[dict] = []   # due rows the last Tick found but could not dispatch yet
        # The due order in memory, read whole at the first Tick, then kept by the changes noted
        # in `status_changes` since `due_rev`: a pick costs O(picked), whatever the fleet's size.
        self.due_index: DueIndex | None = None
        self.due_rev = 0
        self.manual: list[tuple[dict, str | None]] = []   # `healerctl run` rows waiting for an idle scraper
        self.stale_after = stale_after(config)
        self.doctor_busy = False
        self.heal_requests: list[HealNow] = []
        self.draining = False
        self.last_housekeeping = 0.0
        self._faults = FaultLog(log, "scheduler")

    def handle(self, message):
        try:
            if isinstance(message, Tick):
                self._tick(message.now)
            elif isinstance(message, ScrapeDone):
                self._done(message)
            elif isinstance(message, ScraperFree):
                self._scraper_free(message)
            elif isinstance(message, RunNow):
                self._run_now(message)
            elif isinstance(message, HealNow):
                self.heal_requests.append(message)
                self._feed_doctor()
            elif isinstance(message, DoctorIdle):
                self.doctor_busy = False
                self._feed_doctor()
            elif isinstance(message, Drain):
                self.draining = True
                self.ready = []
                self.manual = []
                if self.dispatched_at:  # scrapes in flight: due again unless their outcome gets recorded
                    self.registry.write_later(Ledger.requeue_unfinished, dict(self.dispatched_at))
        except Exception as exc:  # a bad row or a dead peer must not stop scheduling
            if not self._faults.failed(exc):   # a full disk: one line per episode, not one per tick
                log.exception("scheduler failed handling %s", type(message).__name__)
        return None

    # -- scraping -------------------------------------------------------------------
    def _tick(self, now: float) -> None:
        if self.draining:
            return
        if now - self.last_housekeeping >= 1.0:
            self.last_housekeeping = now
            self.registry.write_later(Ledger.expire_quarantines)
        self._expire_stale(now)
        self.next_allowed = {h: t for h, t in self.next_allowed.items() if t > now}
        index = self._refresh_due()
        names = index.due(now, hosts_in_delay(self.next_allowed, now), self.running,
                          len(self.registry.scrapers()) * READY_ROWS_PER_SCRAPER)
        self.ready = due_store.jobs(self.conn, names, now)
        self._dispatch_ready(now)
        self._feed_doctor()

    def _refresh_due(self) -> DueIndex:
        """The due index, brought up to date with the sources changed since the last Tick (every
        change of a schedule, a pause or a lifecycle state is noted in `status_changes`)."""
        if self.due_index is None:
            self.due_rev, found = due_store.schedulable(self.conn)
            self.due_index = DueIndex(found)
            log.debug("due index: %d schedulable sources", len(self.due_index))
        else:
            self.due_rev, changed = due_store.changed_since(self.conn, self.due_rev)
            for name, host, at in changed:
                self.due_index.put(name, host or "", at)
        return self.due_index

    def _idle_scrapers(self) -> list[int]:
        n = len(self.registry.scrapers())
        if len(self.running) >= n * IN_FLIGHT_PER_SCRAPER:
            return []
        return [i for i in range(n) if self.scraper_load[i] == 0]

    def _scraper_free(self, msg: ScraperFree) -> None:
        """The Scraper handed `msg.name`'s page on: it may take the next job (the source and its
        host slot stay held until ScrapeDone)."""
        idx, host = self.assigned.get(msg.name, (None, None))
        if idx != msg.index:
            return
        self.assigned[msg.name] = (None, host)
        if self.scraper_load[idx] > 0:
            self.scraper_load[idx] -= 1
        if (self.ready or self.manual) and not self.draining:
            self._dispatch_ready(time.time())

    def _dispatch_ready(self, now: float) -> None:
        """Give the waiting `healerctl run` rows, then the rows of `ready` within the host limits,
        to the idle scrapers; keep the rest for the next ScrapeDone (the next Tick replaces
        `ready` with a fresh query)."""
        idle = self._idle_scrapers()
        while self.manual and idle:
            r, request_id = self.manual.pop(0)
            self._dispatch(r, request_id, now, idle.pop(0))
        per_host = self.config.fetch.per_host_concurrency
        keep = []
        for pos, r in enumerate(self.ready):
            if not idle:   # every scraper busy: the rest stays ready as it is
                keep.extend(self.ready[pos:])
                break
            if r["name"] in self.running:
                continue   # dispatched meanwhile (healerctl run)
            host = r["host"]
            if self.in_flight[host] >= per_host or self.next_allowed.get(host, 0.0) > now \
                    or (uses_browser(r["body"]) and len(self.browser_jobs) >= self.config.browser.max_pages):
                # (a browser source beyond the browser's pages would hold a scraper waiting for one)
                keep.append(r)
                continue
            self._dispatch(r, None, now, idle.pop(0))
        self.ready = keep

    def _dispatch(self, r: dict, request_id: str | None, now: float, idx: int) -> None:
        """Send the job to scraper `idx`, which must be idle: a job queued behind another
        would wait for that one, however long its page takes."""
        scrapers = self.registry.scrapers()
        host = r["host"]
        job = ScrapeJob(name=r["name"], url=r["url"], host=host, blueprint_json=r["body"], version=r["version"],
                        etag=r["etag"], last_modified=r["last_modified"], request_id=request_id,
                        good_sha=r.get("good_sha"))
        self.running.add(r["name"])
        self.dispatched_at[r["name"]] = now
        self.in_flight[host] += 1
        self.scraper_load[idx] += 1
        self.assigned[r["name"]] = (idx, host)
        if uses_browser(r["body"]):
            self.browser_jobs.add(r["name"])
        delay = self.config.daemon.politeness_delay
        if self.robots is not None and self.config.fetch.respect_robots:
            crawl = self.robots.cached_crawl_delay(r["url"], self.config.fetch.user_agent)
            if crawl:
                delay = max(delay, crawl)
        if delay > 0:
            # No entry without a delay: a Tick stamped before this dispatch and handled after it
            # would find the host "in its delay" (now + 0 > the Tick's now) and fetch none of its
            # rows, leaving the scrapers idle for a whole tick.
            self.next_allowed[host] = now + delay
        try:
            scrapers[idx].tell(job)
        except pykka.ActorDeadError:   # being replaced: a due source is found again by the next Tick
            self._release(r["name"])
            if request_id is not None:
                self.manual.append((r, request_id))   # a waiting client's run goes to the next idle scraper

    def _release(self, name: str) -> None:
        """Free the scraper and the host slot of `name`'s job."""
        self.running.discard(name)
        self.browser_jobs.discard(name)
        self.dispatched_at.pop(name, None)
        idx, host = self.assigned.pop(name, (None, None))
        if host is not None and self.in_flight.get(host, 0) > 0:
            self.in_flight[host] -= 1
        if idx is not None and self.scraper_load[idx] > 0:
            self.scraper_load[idx] -= 1

    def _done(self, msg: ScrapeDone) -> None:
        if msg.name not in self.running:
            return   # the outcome of a job given up on (_expire_stale) or of a former Scheduler: nothing held
        self._release(msg.name)
        self._run_pending(msg.name)
        if (self.ready or self.manual) and not self.draining:
            # Refill the freed scraper now rather than at the next Tick, which would cap the
            # throughput at one job per scraper per tick.
            self._dispatch_ready(time.time())

    def _run_pending(self, name: str) -> None:
        """Start the first `healerctl run` that waited for `name`'s scrape to end."""
        queued = self.pending_runs.pop(name, None)
        if queued:
            self._run_now(queued[0])
            for extra in queued[1:]:
                self.pending_runs.setdefault(name, []).append(extra)

    def _expire_stale(self, now: float) -> None:
        """Give up on jobs whose outcome never came: the Scraper, Validator or StoreWriter holding
        one was replaced after a crash and its queue lost. Without this the source would never be
        scheduled again and its host would keep a slot taken until a restart. The bound is far
        above what a live job takes, so a source does not run twice at once."""
        for name in stale_jobs(self.dispatched_at, now, self.stale_after):
            idx, host = self.assigned.get(name, (None, None))
            log.warning("no outcome for %s %.0fs after it was sent to scraper %s (an actor holding it was "
                        "probably replaced): freeing its slot on %s; it runs again when due",
                        name, now - self.dispatched_at[name], idx, host)
            self._release(name)
            self._run_pending(name)

    def _run_now(self, msg: RunNow) -> None:
        if self.draining:
            return  # stopping: the daemon answers the waiting client
        if msg.name in self.running or any(r["name"] == msg.name for r, _ in self.manual):
            # Already scraping (or about to): run again as soon as this one is done, for this request.
            self.pending_runs.setdefault(msg.name, []).append(msg)
            return
        found = due_store.job(self.conn, msg.name)
        if found is None:
            self._resolve(msg.request_id, Failure(SourceNotFound(msg.name)))
            return
        idle = self._idle_scrapers()
        if idle:
            self._dispatch(found, msg.request_id, time.time(), idle[0])
        else:   # the next scraper to be free takes it, before the due sources
            self.manual.append((found, msg.request_id))

    def _resolve(self, request_id, result) -> None:
        if self.waiters is not None:
            self.waiters.resolve(request_id, result)

    # -- healing ----------------------------------------------------------------------
    def _feed_doctor(self) -> None:
        if self.doctor_busy or self.draining:
            return
        if not self.config.doctor.enabled and not self.heal_requests:
            return  # the feature flag is off: FIX tasks wait in the queue
        if self.heal_requests:
            req = self.heal_requests.pop(0)
            try:
                tid = self.registry.write(Ledger.enqueue_fix, req.name, {"forced": True}, priority=1)
                task = self.registry.write(Ledger.claim_task_by_id, tid, "doctor")
            except Exception as exc:
                self._resolve(req.request_id, Failure(exc))
                return
            if task is None:  # the Doctor is already on it
                self._resolve(req.request_id, {"name": req.name, "outcome": "declined", "strategy": None,
                                               "reason": "a fix for this source is already in progress",
                                               "version": None, "state": None})
                return
            self.doctor_busy = True
            self.registry.tell("doctor", HealTask(task["task_id"], req.name, task["context"], req.request_id, True))
            return
        task = self.registry.write(Ledger.claim_fix, "doctor")
        if task is not None:
            self.doctor_busy = True
            self.registry.tell("doctor", HealTask(task["task_id"], task["target"], task["context"]))
