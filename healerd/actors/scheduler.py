"""Scheduler: decides what runs when.

On every Tick from the main thread it dispatches due sources to the Scraper pool
(respecting per-host concurrency, the politeness delay and robots.txt
crawl-delay), hands claimed FIX_SOURCE tasks to the Doctor one at a time, and
expires quarantines. It reads SQLite through its own connection and writes only
through the StoreWriter.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass

import pykka

from healerd.actors.base import ServiceActor
from healerd.actors.messages import HealTask, ScrapeDone, ScrapeJob, Tick
from healerd.actors.registry import ActorRegistry, Failure
from healerd.config import Config
from healerd.robots import RobotsPolicy
from healerd.store.db import rows
from healerd.store.sources import SourceNotFound
from healerd.waiters import Waiters

log = logging.getLogger("healerd.scheduler")

DUE_SQL = (
    "SELECT s.name, s.url, s.host, s.etag, s.last_modified, pv.version, pv.body "
    "FROM sources s JOIN source_health h ON h.source_name = s.name "
    "JOIN parser_versions pv ON pv.source_name = s.name AND pv.status = 'production' "
    "WHERE s.paused = 0 AND h.state IN ('ACTIVE','DEGRADED') AND s.next_run_at IS NOT NULL AND s.next_run_at <= ? "
    "ORDER BY s.next_run_at LIMIT ?"
)
ONE_SQL = DUE_SQL.replace("AND s.next_run_at IS NOT NULL AND s.next_run_at <= ? ORDER BY s.next_run_at LIMIT ?",
                          "AND s.name = ?").replace("WHERE s.paused = 0 AND h.state IN ('ACTIVE','DEGRADED') ", "WHERE 1 ")


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
        self.assigned: dict[str, int] = {}
        self.dispatched_at: dict[str, float] = {}
        self.ready: list[dict] = []   # due rows the last Tick found but could not dispatch yet
        self.doctor_busy = False
        self.heal_requests: list[HealNow] = []
        self.draining = False
        self.last_housekeeping = 0.0

    def handle(self, message):
        try:
            if isinstance(message, Tick):
                self._tick(message.now)
            elif isinstance(message, ScrapeDone):
                self._done(message)
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
                if self.dispatched_at:  # scrapes in flight: due again unless their outcome gets recorded
                    self.registry.write_later("requeue_unfinished", dict(self.dispatched_at))
        except Exception:  # a bad row or a dead peer must not stop scheduling
            log.exception("scheduler failed handling %s", type(message).__name__)
        return None

    # -- scraping -------------------------------------------------------------------
    def _tick(self, now: float) -> None:
        if self.draining:
            return
        if now - self.last_housekeeping >= 1.0:
            self.last_housekeeping = now
            self.registry.write_later("expire_quarantines")
        budget = max(1, self._capacity() - sum(self.in_flight.values()))
        # Sources being scraped are still due in SQLite until their outcome commits: look past them.
        due = rows(self.conn, DUE_SQL, (now, budget * 4 + len(self.running)))
        self.ready = [r for r in due if r["name"] not in self.running]
        self._dispatch_ready(now, budget)
        self._feed_doctor()

    def _capacity(self) -> int:
        return len(self.registry.scrapers()) * 4

    def _dispatch_ready(self, now: float, budget: int) -> None:
        """Dispatch rows of `ready` within the budget and the host limits; keep the rest
        for the next ScrapeDone (the next Tick replaces the list with a fresh query)."""
        per_host = self.config.fetch.per_host_concurrency
        keep = []
        for r in self.ready:
            if r["name"] in self.running:
                continue   # dispatched meanwhile (healerctl run)
            host = r["host"]
            if budget <= 0 or self.in_flight[host] >= per_host or self.next_allowed.get(host, 0.0) > now:
                keep.append(r)
                continue
            self._dispatch(r, None, now)
            budget -= 1
        self.ready = keep

    def _dispatch(self, r: dict, request_id: str | None, now: float) -> None:
        scrapers = self.registry.scrapers()
        if not scrapers:
            return
        idx = min(range(len(scrapers)), key=lambda i: self.scraper_load[i])
        host = r["host"]
        job = ScrapeJob(name=r["name"], url=r["url"], host=host, blueprint_json=r["body"], version=r["version"],
                        etag=r["etag"], last_modified=r["last_modified"], request_id=request_id)
        self.running.add(r["name"])
        self.dispatched_at[r["name"]] = now
        self.in_flight[host] += 1
        self.scraper_load[idx] += 1
        self.assigned[r["name"]] = idx
        delay = self.config.daemon.politeness_delay
        if self.robots is not None and self.config.fetch.respect_robots:
            crawl = self.robots.cached_crawl_delay(r["url"], self.config.fetch.user_agent)
            if crawl:
                delay = max(delay, crawl)
        self.next_allowed[host] = now + delay
        try:
            scrapers[idx].tell(job)
        except pykka.ActorDeadError:
            self._done(ScrapeDone(r["name"], host))

    def _done(self, msg: ScrapeDone) -> None:
        self.running.discard(msg.name)
        self.dispatched_at.pop(msg.name, None)
        if self.in_flight.get(msg.host, 0) > 0:
            self.in_flight[msg.host] -= 1
        idx = self.assigned.pop(msg.name, None)
        if idx is not None and self.scraper_load[idx] > 0:
            self.scraper_load[idx] -= 1
        queued = self.pending_runs.pop(msg.name, None)
        if queued:
            self._run_now(queued[0])
            for extra in queued[1:]:
                self.pending_runs.setdefault(msg.name, []).append(extra)
        if self.ready and not self.draining:
            # Refill the freed slot now rather than at the next Tick, which would cap the
            # throughput at (scrapers x 4) per tick.
            self._dispatch_ready(time.time(), self._capacity() - sum(self.in_flight.values()))

    def _run_now(self, msg: RunNow) -> None:
        if self.draining:
            return  # stopping: the daemon answers the waiting client
        if msg.name in self.running:
            # Already scraping: run again as soon as this one is done, for this request.
            self.pending_runs.setdefault(msg.name, []).append(msg)
            return
        found = rows(self.conn, ONE_SQL, (msg.name,))
        if not found:
            self._resolve(msg.request_id, Failure(SourceNotFound(msg.name)))
            return
        self._dispatch(found[0], msg.request_id, time.time())

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
                tid = self.registry.write("enqueue_fix", req.name, {"forced": True}, priority=1)
                task = self.registry.write("claim_task_by_id", tid, "doctor")
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
        task = self.registry.write("claim_fix", "doctor")
        if task is not None:
            self.doctor_busy = True
            self.registry.tell("doctor", HealTask(task["task_id"], task["target"], task["context"]))
