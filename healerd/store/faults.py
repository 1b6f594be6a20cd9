"""Storage faults (a full disk, I/O errors) as events, not floods of tracebacks.

`StorageFaults` is the StoreWriter's bookkeeping, free of actors: a write that fails with
a storage fault opens an *episode* — one ERROR line and one SYSTEMIC_HALT alert (`details.cause` "storage") — during
which writes are refused without touching the database until a backoff (1 s, doubling up
to 60 s) has passed; the next write then tries again. The first write that succeeds *and wrote
something* ends the episode (one line, one RECOVERED alert with no source, `details.cause` "storage"):
a transaction that changed nothing commits without touching the disk, so it proves nothing about a
full one. Each write is one transaction, so a refused or failed one leaves nothing half-written.

Episodes are numbered for the life of the process (`details.episode`), so each new one raises its
own SYSTEMIC_HALT and RECOVERED, however soon after the last (the Alerter deduplicates per episode).
"""

from __future__ import annotations

import errno
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

import apsw

from healerd.core.errors import HealerdError

FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 60.0
_OS_FAULTS = (errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG, errno.EROFS)
_EPISODE_NUMBERS = itertools.count(1)   # per process: a replaced StoreWriter does not reuse a number


class StorageUnavailable(HealerdError):
    """A write refused while a storage fault episode backs off (nothing was attempted)."""


def is_storage_fault(exc: BaseException) -> bool:
    """True for a full disk, an I/O error or a read-only file system, as SQLite or the OS reports it."""
    if isinstance(exc, (apsw.FullError, apsw.IOError, apsw.ReadOnlyError, apsw.CantOpenError, StorageUnavailable)):
        return True
    return isinstance(exc, OSError) and exc.errno in _OS_FAULTS


def describe(exc: BaseException) -> str:
    if isinstance(exc, apsw.FullError):
        return "the disk is full (SQLITE_FULL)"
    if isinstance(exc, apsw.ReadOnlyError):
        return "the database became read-only"
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}"
    if isinstance(exc, StorageUnavailable):
        return str(exc)
    return f"I/O error ({type(exc).__name__}: {str(exc)[:120]})"


@dataclass
class Episode:
    started_at: float
    reason: str
    number: int = 0
    refused: int = 0
    failures: int = 1
    backoff: float = FIRST_BACKOFF_S
    retry_at: float = 0.0


class StorageFaults:
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.episode: Episode | None = None

    def may_write(self) -> bool:
        """False while backing off (the caller refuses the write without touching the database)."""
        ep = self.episode
        if ep is None or self.clock() >= ep.retry_at:
            return True
        ep.refused += 1
        return False

    def failed(self, exc: BaseException) -> bool:
        """Record a storage fault; True when it opens a new episode (log and alert once)."""
        now = self.clock()
        ep = self.episode
        if ep is None:
            self.episode = Episode(started_at=now, reason=describe(exc), number=next(_EPISODE_NUMBERS),
                                   retry_at=now + FIRST_BACKOFF_S)
            return True
        ep.failures += 1
        ep.backoff = min(ep.backoff * 2, MAX_BACKOFF_S)
        ep.retry_at = now + ep.backoff
        return False

    def succeeded(self, wrote: bool = True) -> Episode | None:
        """A write transaction committed: the episode that ended, if one was open. `wrote=False`
        (it changed no row, so nothing reached the disk) ends nothing."""
        if not wrote:
            return None
        ep, self.episode = self.episode, None
        return ep


class FaultLog:
    """For a reader (an actor's handler): storage faults are logged as one WARNING line per
    QUIET_S seconds, not as a traceback per message."""

    QUIET_S = 60.0

    def __init__(self, logger, what: str, clock: Callable[[], float] = time.monotonic):
        self.logger = logger
        self.what = what
        self.clock = clock
        self.last_logged: float | None = None

    def failed(self, exc: BaseException) -> bool:
        """True when `exc` is a storage fault (logged at most once per QUIET_S); False: the caller
        logs it as usual."""
        if not is_storage_fault(exc):
            return False
        now = self.clock()
        if self.last_logged is None or now - self.last_logged >= self.QUIET_S:
            self.last_logged = now
            self.logger.warning("%s: storage fault (%s); carrying on, the writer retries with backoff",
                                self.what, describe(exc))
        return True
