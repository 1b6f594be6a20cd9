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


from healerd.actors.base import ServiceActor
from healerd.actors.messages import Alert, WriteJob
from healerd.actors.registry import ActorRegistry, Failure
from healerd.config import Config
from healerd.ledger import Effects, Ledger
from healerd.waiters import Waiters

log = logging.getLogger("healerd.writer")

GROUP_MAX = 64     # scrape outcomes committed together at most


class StoreWriter(ServiceActor):
    database = "write"

    def __init__(self, db_path: str, config: Config, registry: ActorRegistry, waiters: Waiters):
        super().__init__(db_path, config, registry)
        self.waiters = waiters
        self.ledger: Ledger | None = None

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
        return (isinstance(message, WriteJob) and message.method == "record_scrape" and len(message.args) == 1
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
            try:
                results = self.ledger.record_scrapes([m.args[0] for m in batch])
            except Exception as exc:   # the group did not commit: nothing of it is kept
                log.warning("a group of %d scrape outcomes did not commit (%s); writing them one by one",
                            len(batch), exc)
                return [self._run(m) for m in batch][0]
            answers = [self._failed(m, r) if isinstance(r, Exception) else self._done(m, r)
                       for m, r in zip(batch, results)]
            return answers[0]
        finally:
            for m in batch:   # after the commit (or the one-by-one writes) only
                if m.then is not None:
                    self.registry.tell(*m.then)

    def _failed(self, message: WriteJob, exc: Exception) -> Failure:
        if not isinstance(exc, (KeyError, ValueError, LookupError)) and type(exc).__name__ not in (
                "IllegalTransition", "SourceExists", "VersionNotFound", "MemoryError_"):
            log.error("write %s failed: %s: %s", message.method, type(exc).__name__, exc,
                      exc_info=(type(exc), exc, exc.__traceback__))
        failure = Failure(exc)
        self.waiters.resolve(message.request_id, failure)
        return failure

    def _run(self, message: WriteJob):
        try:
            result = getattr(self.ledger, message.method)(*message.args, **message.kwargs)
        except Exception as exc:  # never let one bad write stop the writer
            # The transaction rolled back; a lifecycle model it had moved must follow.
            self.ledger.resync_models()
            return self._failed(message, exc)
        return self._done(message, result)

    def _done(self, message: WriteJob, result):
        if isinstance(result, Effects):
            for a in result.alerts:
                self.registry.tell("alerter", Alert(a["event"], a["source"], a["message"], a["level"],
                                                    a["details"], a["state"]))
            result = result.result
        self.waiters.resolve(message.request_id, result)
        return result
