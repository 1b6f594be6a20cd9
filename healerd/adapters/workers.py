"""The extraction worker processes that run a scrape's page work beside the daemon.

`WorkerPool` keeps N worker processes, each a fresh interpreter (never a fork of the
multi-threaded daemon) with a few threads, so that one worker's fetches overlap their network
waits while its parsing uses its own core. A Scraper thread sends a job
(healerd/adapters/page_work.py) to the least busy worker and waits for the answer; a reader
thread per worker hands each answer to its caller (the pipes' protocol and the worker's end:
healerd/adapters/worker_protocol.py). A worker that dies fails the jobs it had in hand with a
clear line and is replaced at once; a job over its deadline gets its worker killed and replaced.
Extraction has its own wall-clock deadline (`extraction_timeout`), counted from the moment the
worker starts evaluating selectors on the page (it says so: an EXTRACTING note on the result
pipe): selectolax has no time limit of its own, and a page (or a selector) can be shaped to
make one `.css()` call take minutes. A job past it fails as "extraction too slow" (WorkerError
with `too_slow`) and its worker is killed and replaced; a caller's `on_overrun` runs first.
`HealJob` runs the built-in selector healer on two pages the same way (healerd/adapters/trials.py).
The pool is started with the daemon's actors and stopped at shutdown; when the daemon
itself dies, each worker's pipe closes and the worker exits.
"""

from __future__ import annotations

import fcntl
import itertools
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection

from healerd.adapters.page_work import CallJob, FetchJob, HealJob, PageJob
from healerd.adapters.worker_protocol import ALARM_MARGIN_S, EXTRACTING, READY

log = logging.getLogger("healerd.workers")

MAX_AUTO_WORKERS = 4
_IDLE_POLL_S = 0.5


def default_workers(cpus: int | None = None) -> int:
    """One worker per core, 1 to MAX_AUTO_WORKERS (2 on 2 cores). The daemon's own process needs
    less CPU per page than its workers (fetch, validate, persist against hash, parse, extract,
    compress), and a single worker becomes the queue every Scraper waits in."""
    cpus = cpus if cpus is not None else (os.cpu_count() or 1)
    return max(1, min(MAX_AUTO_WORKERS, cpus))


def worker_count(configured: int | str | None) -> int:
    """`[daemon] workers`: a number (0 = in the daemon's process), or "auto" (unset) for the machine's default."""
    return default_workers() if configured in (None, "auto") else int(configured)


def worker_threads(scrapers: int, workers: int) -> int:
    """Threads per worker: enough that every Scraper can have a job in hand at once."""
    return max(1, -(-scrapers // max(1, workers)))


class WorkerError(Exception):
    """A job a worker could not answer (it died or overran its deadline); the pool has replaced it.

    `died_under` is True when the worker died with the job in hand: another job's page may
    have been what killed it, so the job is worth one more try; False when this job itself
    overran its deadline (or the pool is stopped). `too_slow` is True when the overrun was
    the extraction's own deadline (the selectors on this page), not the fetch's."""

    def __init__(self, message: str, died_under: bool = False, too_slow: bool = False):
        super().__init__(message)
        self.died_under = died_under
        self.too_slow = too_slow


# An answer carries a page's records and compressed snapshot (~25-150 KB). With the default
# 64 KB pipe the worker's write and the reader's read take several turns each, and every turn
# waits for the daemon's GIL; a pipe that holds a whole answer takes one.
PIPE_BYTES = 1 << 20


def _widen(fd: int) -> None:
    """Let the pipe behind `fd` hold PIPE_BYTES (or as much as the system allows; Linux only)."""
    if not hasattr(fcntl, "F_SETPIPE_SZ"):
        return
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:   # above /proc/sys/fs/pipe-max-size for an unprivileged user: keep the default
        pass


class _Slot:
    """One job in flight: its caller waits on `done`; `extracting` is when the worker said it
    started evaluating selectors on the page (monotonic clock), None before."""
    __slots__ = ("done", "answer", "error", "overran", "too_slow", "extracting")

    def __init__(self):
        self.done = threading.Event()
        self.answer = None
        self.error: str | None = None
        self.overran = False
        self.too_slow = False
        self.extracting: float | None = None


class _Worker:
    """One worker: `python -P -m healerd.adapters.workers_main` (a fresh interpreter, never a fork of the
    multi-threaded daemon) speaking pickled (id, job) and (id, answer) pairs over two pipes, with
    up to `threads` jobs in flight. A reader thread hands each answer to the caller waiting for it."""

    def __init__(self, index: int, threads: int, on_exit):
        self.index = index
        self.threads = threads
        self.inflight: dict[int, _Slot] = {}
        self.send_lock = threading.Lock()
        self.dead = False
        self.ready = threading.Event()   # the worker said READY
        job_r, job_w = os.pipe()
        res_r, res_w = os.pipe()
        _widen(res_r)
        try:
            self.proc = subprocess.Popen([sys.executable, "-P", "-m", "healerd.adapters.workers_main", str(job_r),
                                          str(res_w), str(threads)],
                                         pass_fds=(job_r, res_w), stdin=subprocess.DEVNULL, close_fds=True)
        except BaseException:
            for fd in (job_r, job_w, res_r, res_w):
                os.close(fd)
            raise
        os.close(job_r)
        os.close(res_w)
        self.jobs = Connection(job_w, readable=False)
        self.results = Connection(res_r, writable=False)
        self._on_exit = on_exit
        self.reader = threading.Thread(target=self._read, name=f"workers-reader-{index}", daemon=True)
        self.reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self) -> None:
        while True:
            try:
                ident, answer = self.results.recv()
            except (EOFError, OSError, ValueError, TypeError):
                break
            if ident == READY:
                self.ready.set()
                continue
            if isinstance(answer, str) and answer == EXTRACTING:
                slot = self.inflight.get(ident)
                if slot is not None:   # noted only: the caller looks at it when the deadline could pass
                    slot.extracting = time.monotonic()
                continue
            slot = self.inflight.pop(ident, None)
            if slot is not None:
                slot.answer = answer
                slot.done.set()
        self._on_exit(self)

    def ask_to_stop(self) -> None:
        try:
            with self.send_lock:
                self.jobs.send(None)    # read after the jobs in hand, if any
        except (OSError, ValueError):
            pass

    def close_pipes(self) -> None:
        for c in (self.jobs, self.results):
            try:
                c.close()
            except OSError:
                pass

    def reap(self, timeout: float) -> None:
        try:
            self.proc.wait(max(0.0, timeout))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(1.0)
        self.reader.join(1.0)
        self.close_pipes()


class WorkerPool:
    """N worker processes of `threads` threads each; `run(job)` blocks its caller until the answer.

    A job goes to the least busy worker with a free thread (its caller waits while none has
    one). When a worker dies, every job it had in hand fails with one line (WorkerError) and a
    new worker takes its place; a job over the deadline gets its worker killed and replaced."""

    def __init__(self, size: int, deadline: float = 60.0, threads: int = 1, extraction_timeout: float | None = None):
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.size = size
        self.threads = max(1, threads)
        self.deadline = deadline
        # From the EXTRACTING note on; None: the job's whole deadline covers the extraction too.
        self.extraction_timeout = extraction_timeout
        self._cond = threading.Condition()
        self._workers: list[_Worker] = []
        self._closed = False
        self._ids = itertools.count(READY + 1)
        for i in range(size):
            self._workers.append(_Worker(i, self.threads, self._exited))

    @property
    def closed(self) -> bool:
        return self._closed

    def pids(self) -> list[int]:
        with self._cond:
            return [w.pid for w in self._workers]

    def wait_ready(self, timeout: float, stop: threading.Event | None = None) -> bool:
        """Wait, up to `timeout` seconds or until `stop` is set, until every worker has started
        (a fresh interpreter importing the parser, the fetcher and the compressor takes a few
        tenths of a second). True when all are ready; jobs sent before then just wait for their worker."""
        deadline = time.monotonic() + timeout
        while True:
            with self._cond:
                pending = [w for w in self._workers if not w.ready.is_set()]
            if not pending:
                return True
            left = deadline - time.monotonic()
            if left <= 0 or (stop is not None and stop.is_set()):
                return False
            pending[0].ready.wait(min(left, _IDLE_POLL_S))   # a worker replaced meanwhile is looked at again

    def run(self, job: PageJob | FetchJob | HealJob | CallJob, on_overrun: Callable[[str], None] | None = None):
        """The worker's answer to `job` (PageResult for a PageJob, FetchOutcome for a FetchJob,
        HealAnswer for a HealJob); WorkerError when its worker died or the job overran a deadline.

        `on_overrun(line)` is called when the job overran, before its worker is killed: what must
        be recorded about the job (a candidate "too slow on this page") is kept even should the
        daemon die with the worker."""
        slot = _Slot()
        ident = next(self._ids)
        w = self._take(ident, slot)
        try:
            alarm = self.extraction_timeout + ALARM_MARGIN_S if self.extraction_timeout else None
            try:
                with w.send_lock:
                    w.jobs.send((ident, job, alarm))
            except (OSError, ValueError):
                self._kill(w)       # a worker whose pipe refuses a job is dead: its reader fails the slot
            if not self._wait(slot):
                slot.overran = True
                if slot.too_slow:
                    slot.error = (f"extraction too slow: the selectors took longer than {self.extraction_timeout:g}s "
                                  f"on this page; the worker was stopped")
                else:
                    slot.error = f"this page took longer than {self.deadline:g}s in the worker: the worker was stopped"
                if on_overrun is not None:
                    try:
                        on_overrun(slot.error)
                    except Exception:
                        log.exception("recording an overrun job failed")
                self._kill(w)
                slot.done.wait(5.0)
        finally:
            with self._cond:   # its thread is free again: a caller waiting in _take may have it
                self._cond.notify()
        if slot.error is not None:
            raise WorkerError(slot.error, died_under=not slot.overran, too_slow=slot.too_slow)
        return slot.answer

    def _wait(self, slot: _Slot) -> bool:
        """Wait for the answer: True when it came (or the worker died) within the deadlines; False on
        an overrun (`slot.too_slow` when it was the extraction's own deadline).

        The EXTRACTING note does not wake the caller: the extraction deadline cannot pass before
        `extraction_timeout` after the job was sent (the note comes later), so the caller sleeps
        until then (or the answer), reads the note's time, and sleeps on to that deadline. The same
        deadlines as being woken by the note, with one wake-up less per job."""
        end = time.monotonic() + self.deadline
        ext = self.extraction_timeout
        while True:
            if slot.done.is_set():
                return True
            started = slot.extracting
            now = time.monotonic()
            if started is not None and ext is not None:
                limit = started + ext
                if now >= limit:
                    if slot.done.is_set():   # answered at the last moment
                        return True
                    slot.too_slow = True
                    return False
            else:
                if now >= end:
                    return slot.done.is_set()
                limit = end if ext is None else min(end, now + ext)
            slot.done.wait(max(0.0, limit - now))

    def _take(self, ident: int, slot: _Slot) -> _Worker:
        with self._cond:
            while True:
                if self._closed:
                    raise WorkerError("the worker pool is stopped (healerd is shutting down)")
                # A worker that died while idle may not be marked dead yet (its reader has not seen
                # its pipe end): ask the process itself, so no job is handed to a dead one.
                ready = [w for w in self._workers
                         if not w.dead and len(w.inflight) < w.threads and w.proc.poll() is None]
                if ready:
                    w = min(ready, key=lambda x: len(x.inflight))
                    w.inflight[ident] = slot
                    return w
                self._cond.wait(_IDLE_POLL_S)

    def _kill(self, w: _Worker) -> None:
        try:
            w.proc.kill()
        except OSError:
            pass

    def _exited(self, w: _Worker) -> None:
        """A worker's reader saw its pipe end: fail its jobs in hand, start a replacement."""
        try:
            code = w.proc.wait(2.0)
        except subprocess.TimeoutExpired:
            w.proc.kill()
            code = w.proc.wait(2.0)
        with self._cond:
            w.dead = True
            replace = not self._closed
            if replace:
                try:
                    fresh = _Worker(w.index, self.threads, self._exited)
                except OSError as exc:
                    log.error("could not start a new extraction worker: %s", exc)
                    fresh = None
                if fresh is not None:
                    self._workers = [fresh if x is w else x for x in self._workers]
            self._cond.notify_all()
        lost = list(w.inflight.items())
        w.inflight.clear()
        for _, slot in lost:
            if slot.error is None:
                slot.error = (f"the extraction worker (pid {w.pid}) died while working on this page (exit code "
                              f"{code})" + ("; a new worker was started" if replace else ""))
            slot.done.set()
        w.close_pipes()
        if replace and not self._closed:
            log.warning("extraction worker %d (pid %s, exit code %s) was replaced", w.index, w.pid, code)

    def close(self, timeout: float = 1.0) -> None:
        """Stop every worker: each finishes the jobs in hand; one still busy after `timeout` is killed."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            workers = list(self._workers)
            self._cond.notify_all()
        for w in workers:
            w.ask_to_stop()
        deadline = time.monotonic() + timeout
        for w in workers:
            w.reap(deadline - time.monotonic())
