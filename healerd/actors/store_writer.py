"""StoreWriter: the one actor that writes to SQLite.

It owns the only writing connection and runs Ledger methods one message at a time
(each one transaction), then hands the alerts they raised to the Alerter and
resolves any control request waiting for the result. It never asks another actor,
so any actor may block on it.

Group commit: scrape outcomes (record_scrape jobs that nobody waits on with `ask`)
queued back to back are written in one transaction, up to GROUP_MAX at a time; their
`then` messages are told only after that commit. One outcome that fails is rolled back
alone (a savepoint); a group that cannot commit is written again one by one.
"""

from __future__ import annotations

import logging
import time

from healerd.actors.base import ServiceActor
from healerd.actors.messages import Alert, WriteJob
from healerd.actors.registry import ActorRegistry, Failure
from healerd.config import Config
from healerd.core.errors import Refusal
from healerd.store.db import write_transaction
from healerd.store.faults import StorageFaults, StorageUnavailable, is_storage_fault
from healerd.store.ledger import Ledger
from healerd.store.outcomes import Effects
from healerd.waiters import Waiters

log = logging.getLogger("healerd.writer")

GROUP_MAX = 64     # scrape outcomes committed together at most


class StoreWriter(ServiceActor):
    database = "write"

    def __init__(self, db_path: str, config: Config, registry: ActorRegistry, waiters: Waiters):
        super().__init__(db_path, config, registry)
        self.waiters = waiters
        self.ledger: Ledger | None = None
        self.faults = StorageFaults()

    def started(self) -> None:
        self.ledger = Ledger(self.conn, self.config)

    def handle(self, message):
        if not isinstance(message, WriteJob):
            log.warning("StoreWriter ignored an unknown message %r", type(message).__name__)
            return None
        batch = [message] + self._queued_scrapes(message)
        if len(batch) > 1:
            return self._run_group(batch)
        try:
            return self._run(message)
        finally:
            if message.then is not None:   # e.g. ScrapeDone: only once the outcome is in SQLite
                self.registry.tell(*message.then)

    @staticmethod
    def _groupable(message) -> bool:
        return (isinstance(message, WriteJob) and message.method is Ledger.record_scrape and len(message.args) == 1
                and not message.kwargs)

    def _queued_scrapes(self, first: WriteJob) -> list[WriteJob]:
        """The record_scrape jobs queued right behind `first`, taken off the inbox (in order, up to
        GROUP_MAX in all). Only told jobs: an asked one is answered by its own handling."""
        if not self._groupable(first):
            return []
        inbox = self.actor_inbox
        taken: list[WriteJob] = []
        with inbox.mutex:   # queue.Queue: peek at the head without disturbing anything else queued
            pending = inbox.queue
            while pending and len(taken) < GROUP_MAX - 1:
                envelope = pending[0]
                if getattr(envelope, "reply_to", True) is not None or not self._groupable(
                        getattr(envelope, "message", None)):
                    break
                taken.append(pending.popleft().message)
        return taken

    def _run_group(self, batch: list[WriteJob]):
        try:
            if not self.faults.may_write():   # each is refused as it would be alone
                return [self._run(m) for m in batch][0]
            before = self.conn.total_changes()
            try:
                with write_transaction(self.conn):   # one write transaction, one savepoint per outcome
                    results = self.ledger.record_scrapes([m.args[0] for m in batch])
            except Exception as exc:   # the group did not commit: nothing of it is kept
                self.ledger.resync_models()
                if not is_storage_fault(exc):
                    log.warning("a group of %d scrape outcomes did not commit (%s); writing them one by one",
                                len(batch), exc)
                return [self._run(m) for m in batch][0]
            self._write_succeeded(self.conn.total_changes() > before)
            answers = [self._failed(m, r) if isinstance(r, Exception) else self._done(m, r)
                       for m, r in zip(batch, results)]
            return answers[0]
        finally:
            for m in batch:   # after the commit (or the one-by-one writes) only
                if m.then is not None:
                    self.registry.tell(*m.then)

    def _failed(self, message: WriteJob, exc: Exception, *, quiet: bool = False) -> Failure:
        if not quiet and not isinstance(exc, (KeyError, ValueError, LookupError, Refusal)):
            log.error("write %s failed: %s: %s", message.method.__name__, type(exc).__name__, exc,
                      exc_info=(type(exc), exc, exc.__traceback__))
        failure = Failure(exc)
        self.waiters.resolve(message.request_id, failure)
        return failure

    def _run(self, message: WriteJob):
        if not self.faults.may_write():
            ep = self.faults.episode
            return self._failed(message, StorageUnavailable(f"storage unavailable since {ep.reason}; the write was "
                                                            f"not attempted (retrying with backoff)"), quiet=True)
        before = self.conn.total_changes()
        try:
            with write_transaction(self.conn):  # read-then-write safe against other connections' commits
                result = message.method(self.ledger, *message.args, **message.kwargs)
        except Exception as exc:  # never let one bad write stop the writer
            # The transaction rolled back; a lifecycle model it had moved must follow.
            self.ledger.resync_models()
            if is_storage_fault(exc):
                if self.faults.failed(exc):
                    self._storage_fault(message.method.__name__)
                else:
                    log.debug("write %s failed again: %s", message.method.__name__, exc)
                return self._failed(message, exc, quiet=True)
            return self._failed(message, exc)
        self._write_succeeded(self.conn.total_changes() > before)
        return self._done(message, result)

    def _write_succeeded(self, wrote: bool) -> None:
        """A transaction committed; it ends a storage episode only if it wrote something (one that
        changed nothing never touched the disk)."""
        ended = self.faults.succeeded(wrote)
        if ended is not None:
            self._storage_recovered(ended)

    def _measure(self, message: WriteJob, result: Effects) -> None:
        """The metrics of a committed write: a scrape's outcome and time, a fix attempt, a recovery."""
        metrics = self.registry.metrics
        if not metrics.enabled:
            return
        if message.method is Ledger.record_scrape and message.args:
            o = message.args[0]
            outcome = "not_modified" if o.not_modified else ("ok" if o.ok else o.error_type)
            metrics.scrape(outcome, o.finished_at - o.started_at if o.finished_at and o.started_at else None)
        elif message.method is Ledger.record_fix:
            metrics.fix_attempt(message.kwargs.get("strategy", ""), message.kwargs.get("outcome", ""))
        for a in result.alerts:
            if a["event"] == "RECOVERED" and isinstance((a["details"] or {}).get("recovery_s"), (int, float)):
                metrics.recovered(float(a["details"]["recovery_s"]))

    def _done(self, message: WriteJob, result):
        if isinstance(result, Effects):
            try:
                self._measure(message, result)
            except Exception as exc:   # a metric never costs a write its answer
                log.warning("metrics: %s", exc)
            for a in result.alerts:
                self.registry.tell("alerter", Alert(a["event"], a["source"], a["message"], a["level"],
                                                    a["details"], a["state"]))
            result = result.result
        self.waiters.resolve(message.request_id, result)
        return result

    def _storage_fault(self, method: str) -> None:
        """One ERROR line and one alert per episode (not one traceback per write): a SYSTEMIC_HALT
        with no source and `details.cause = "storage"` (nothing can be recorded, so nothing heals)."""
        ep = self.faults.episode
        text = (f"storage fault: {ep.reason} (writing {method}); writes are refused and retried with "
                f"backoff until it clears, nothing is half-written")
        log.error("%s", text)
        self.registry.tell("alerter", Alert("SYSTEMIC_HALT", None, text, "error",
                                                   {"cause": "storage", "reason": ep.reason, "episode": ep.number},
                                                   None))

    def _storage_recovered(self, ep) -> None:
        took = time.monotonic() - ep.started_at
        text = (f"storage recovered after {took:.0f}s ({ep.reason}); {ep.refused + ep.failures} write(s) were "
                f"lost meanwhile")
        log.warning("%s", text)
        self.registry.tell("alerter", Alert("RECOVERED", None, text, "info",
                                                   {"cause": "storage", "reason": ep.reason, "episode": ep.number},
                                                   None))
