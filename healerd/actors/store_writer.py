"""StoreWriter: the one actor that writes to SQLite.

It owns the only writing connection and runs Ledger methods one message at a time
(each one transaction), then hands the alerts they raised to the Alerter and
resolves any control request waiting for the result. It never asks another actor,
so any actor may block on it.
"""

from __future__ import annotations

import logging


from healerd.actors.base import ServiceActor
from healerd.actors.messages import Alert, WriteJob
from healerd.actors.registry import ActorRegistry, Failure
from healerd.config import Config
from healerd.ledger import Effects, Ledger
from healerd.store.db import write_transaction
from healerd.waiters import Waiters

log = logging.getLogger("healerd.writer")


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
        try:
            return self._run(message)
        finally:
            if message.then is not None:   # e.g. ScrapeDone: only once the outcome is in SQLite
                self.registry.tell(*message.then)

    def _run(self, message: WriteJob):
        try:
            with write_transaction(self.conn):  # read-then-write safe against other connections' commits
                result = getattr(self.ledger, message.method)(*message.args, **message.kwargs)
        except Exception as exc:  # never let one bad write stop the writer
            if not isinstance(exc, (KeyError, ValueError, LookupError)) and type(exc).__name__ not in (
                    "IllegalTransition", "SourceExists", "VersionNotFound", "MemoryError_"):
                log.exception("write %s failed", message.method)
            # The transaction rolled back; a lifecycle model it had moved must follow.
            self.ledger.resync_models()
            failure = Failure(exc)
            self.waiters.resolve(message.request_id, failure)
            return failure
        if isinstance(result, Effects):
            for a in result.alerts:
                self.registry.tell("alerter", Alert(a["event"], a["source"], a["message"], a["level"],
                                                    a["details"], a["state"]))
            result = result.result
        self.waiters.resolve(message.request_id, result)
        return result
