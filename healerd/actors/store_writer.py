"""StoreWriter: the one actor that writes to SQLite.

It owns the only writing connection and runs Ledger methods one message at a time
(each one transaction), then hands the alerts they raised to the Alerter and
resolves any control request waiting for the result. It never asks another actor,
so any actor may block on it.
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
from healerd.store.ledger import Effects, Ledger
from healerd.waiters import Waiters

log = logging.getLogger("healerd.writer")


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
        try:
            return self._run(message)
        finally:
            if message.then is not None:   # e.g. ScrapeDone: only once the outcome is in SQLite
                self.registry.tell(*message.then)

    def _run(self, message: WriteJob):
        if not self.faults.may_write():
            ep = self.faults.episode
            return self._fail(message, StorageUnavailable(f"storage unavailable since {ep.reason}; the write was "
                                                          f"not attempted (retrying with backoff)"))
        try:
            with write_transaction(self.conn):  # read-then-write safe against other connections' commits
                result = message.method(self.ledger, *message.args, **message.kwargs)
        except Exception as exc:  # never let one bad write stop the writer
            if is_storage_fault(exc):
                if self.faults.failed(exc):
                    self._storage_fault(message.method.__name__)
                else:
                    log.debug("write %s failed again: %s", message.method.__name__, exc)
            elif not isinstance(exc, (KeyError, ValueError, LookupError, Refusal)):
                log.exception("write %s failed", message.method.__name__)
            # The transaction rolled back; a lifecycle model it had moved must follow.
            self.ledger.resync_models()
            failure = Failure(exc)
            self.waiters.resolve(message.request_id, failure)
            return failure
        ended = self.faults.succeeded()
        if ended is not None:
            self._storage_recovered(ended)
        if isinstance(result, Effects):
            for a in result.alerts:
                self.registry.tell("alerter", Alert(a["event"], a["source"], a["message"], a["level"],
                                                    a["details"], a["state"]))
            result = result.result
        self.waiters.resolve(message.request_id, result)
        return result

    def _fail(self, message: WriteJob, exc: Exception):
        failure = Failure(exc)
        self.waiters.resolve(message.request_id, failure)
        return failure

    def _storage_fault(self, method: str) -> None:
        """One ERROR line and one alert per episode (not one traceback per write): a SYSTEMIC_HALT
        with no source and `details.cause = "storage"` (nothing can be recorded, so nothing heals)."""
        ep = self.faults.episode
        text = (f"storage fault: {ep.reason} (writing {method}); writes are refused and retried with "
                f"backoff until it clears, nothing is half-written")
        log.error("%s", text)
        self.registry.tell("alerter", Alert("SYSTEMIC_HALT", None, text, "error",
                                                   {"cause": "storage", "reason": ep.reason}, None))

    def _storage_recovered(self, ep) -> None:
        took = time.monotonic() - ep.started_at
        text = (f"storage recovered after {took:.0f}s ({ep.reason}); {ep.refused + ep.failures} write(s) were "
                f"lost meanwhile")
        log.warning("%s", text)
        self.registry.tell("alerter", Alert("RECOVERED", None, text, "info",
                                                   {"cause": "storage", "reason": ep.reason}, None))
