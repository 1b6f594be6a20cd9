"""The CPU-bound part of a scrape, and the worker processes that run it beside the daemon.

A Scraper actor fetches a page (I/O, in the daemon's process) and hands what it got to
`process_page`: decode, hash, parse and extract with the blueprint's selectors, and
compress the page for its snapshot when it differs from the last good one. The job and
the result are small picklable values (`PageJob` -> `PageResult`: page bytes, charset,
blueprint JSON, the last good page's hash -> records, raw values, item count, hash,
compressed page or one error line), so the same function runs in the Scraper's thread
(`[daemon] workers = 0`) or in a worker process, and gives the same result either way.

`WorkerPool` keeps N worker processes, each a fresh interpreter running this module
(never a fork of the multi-threaded daemon), serving one job at a time over two pipes. A Scraper
thread takes an idle worker, sends the job and waits for its answer. A worker that dies
or overruns its deadline fails that one job with a clear line and is replaced at once;
the next job gets the fresh one. The pool is started with the daemon's actors and
stopped at shutdown; when the daemon itself dies, each worker's pipe closes and the
worker exits.
"""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import zlib
from dataclasses import dataclass
from functools import lru_cache
from multiprocessing.connection import Connection

from healerd.core.extract import Extraction, PageLimits

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


@dataclass(frozen=True)
class PageJob:
    """A fetched page for extraction: what crosses to a worker."""
    body: bytes
    encoding: str                  # the charset the fetch decoded it with
    blueprint_json: str            # a selector blueprint
    good_sha: str | None = None    # the last good snapshot's hash: the page is compressed only when it differs
    limits: PageLimits = PageLimits()   # the page's work bounds ([fetch] max_items, max_elements, max_depth)


@dataclass(frozen=True)
class PageResult:
    """What a worker sends back: the extraction, or one error line."""
    page_sha: str
    extraction: Extraction | None = None
    error: str | None = None       # the parser failed on this page
    too_large: bool = False        # the error is a work bound the page passed (error class TOO_LARGE)
    snapshot_z: bytes | None = None   # the page, UTF-8, zlib: only when page_sha != good_sha
    shape_sample: list | None = None  # validate.last_good_sample of the records, kept if they pass


def decode(body: bytes, encoding: str) -> str:
    """The page's text, as the fetch decoded it."""
    try:
        return body.decode(encoding or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


SNAPSHOT_ZLIB_LEVEL = 1   # as healerd.store.snapshots stores pages (a test keeps the two equal)


def compress_page(html: str) -> bytes:
    return zlib.compress(html.encode("utf-8", errors="replace"), SNAPSHOT_ZLIB_LEVEL)


def process_page(job: PageJob, html: str | None = None) -> PageResult:
    """Hash, extract and (when changed) compress one page. Never raises for a bad page."""
    from healerd.core.extract import PageTooLarge, check_page, extract

    sha = hashlib.sha256(job.body).hexdigest()
    text = html if html is not None else decode(job.body, job.encoding)
    snapshot = None
    try:
        # Elements and nesting are bounded before anything parses the page, items before records are built.
        check_page(text, job.limits.max_elements, job.limits.max_depth)
        snapshot = compress_page(text) if sha != job.good_sha else None
        extraction = extract(text, _blueprint(job.blueprint_json), max_items=job.limits.max_items)
    except PageTooLarge as exc:
        return PageResult(page_sha=sha, error=str(exc), too_large=True)
    except Exception as exc:
        return PageResult(page_sha=sha, error=str(getattr(exc, "reason", None) or exc), snapshot_z=snapshot)
    from healerd.core.validate import last_good_sample

    return PageResult(page_sha=sha, extraction=extraction, snapshot_z=snapshot,
                      shape_sample=last_good_sample(extraction.data))


@lru_cache(maxsize=1024)
def _blueprint(body: str):
    from healerd.core.blueprint import from_json

    return from_json(body)


class WorkerError(Exception):
    """A job a worker could not answer (it died or overran its deadline); the pool has replaced it."""


def _serve(jobs, results) -> None:
    """A worker process: answer jobs until the pipe closes or a None arrives."""
    while True:
        try:
            job = jobs.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        try:
            result = process_page(job)
        except Exception as exc:   # process_page catches the page's errors; this is a bug
            result = PageResult(page_sha="", error=f"internal error in the worker: {type(exc).__name__}: {exc}")
        try:
            results.send(result)
        except (OSError, ValueError):
            return


class _Worker:
    """One worker: `python -P -m healerd.adapters.workers` (a fresh interpreter, never a fork of the
    multi-threaded daemon) speaking pickled jobs and results over two pipes."""

    def __init__(self, index: int):
        self.index = index
        job_r, job_w = os.pipe()
        res_r, res_w = os.pipe()
        try:
            self.proc = subprocess.Popen([sys.executable, "-P", "-m", "healerd.adapters.workers", str(job_r), str(res_w)],
                                         pass_fds=(job_r, res_w), stdin=subprocess.DEVNULL, close_fds=True)
        except BaseException:
            for fd in (job_r, job_w, res_r, res_w):
                os.close(fd)
            raise
        os.close(job_r)
        os.close(res_w)
        self.jobs = Connection(job_w, readable=False)
        self.results = Connection(res_r, writable=False)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def ask_to_stop(self) -> None:
        try:
            self.jobs.send(None)    # read after the job in hand, if any
        except (OSError, ValueError):
            pass

    def reap(self, timeout: float) -> None:
        try:
            self.proc.wait(max(0.0, timeout))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(1.0)
        for c in (self.jobs, self.results):
            try:
                c.close()
            except OSError:
                pass


class WorkerPool:
    """N worker processes running `process_page`; `run(job)` blocks its caller until the answer."""

    def __init__(self, size: int, deadline: float = 60.0):
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.size = size
        self.deadline = deadline
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._lock = threading.Lock()
        self._workers: list[_Worker] = []
        self._closed = False
        for i in range(size):
            w = _Worker(i)
            self._workers.append(w)
            self._idle.put(w)

    @property
    def closed(self) -> bool:
        return self._closed

    def pids(self) -> list[int]:
        with self._lock:
            return [w.pid for w in self._workers]

    def run(self, job: PageJob) -> PageResult:
        """The worker's answer to `job`; WorkerError when the worker died or overran the deadline."""
        w = self._take()
        back: _Worker | None = w   # what goes back to the idle queue: this worker, its replacement, or none
        try:
            try:
                w.jobs.send(job)
                if w.results.poll(self.deadline):   # an answer, or the end of the pipe when it died
                    return w.results.recv()
            except (EOFError, OSError):
                pass   # the worker went away mid-job: told apart below
            try:
                code = w.proc.wait(1.0)
                reason = f"the extraction worker (pid {w.pid}) died while parsing this page (exit code {code})"
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait(1.0)
                reason = f"parsing this page took longer than {self.deadline:g}s: the worker was stopped"
            back = self._replace(w)
            raise WorkerError(reason + ("; a new worker was started" if back is not None else ""))
        finally:
            if back is not None:
                self._idle.put(back)

    def _take(self) -> _Worker:
        while True:
            if self._closed:
                raise WorkerError("the worker pool is stopped (healerd is shutting down)")
            try:
                w = self._idle.get(timeout=_IDLE_POLL_S)
            except queue.Empty:
                continue
            if w.proc.poll() is None:
                return w
            log.warning("extraction worker %d (pid %s) exited while idle (exit code %s)", w.index, w.pid,
                        w.proc.returncode)
            fresh = self._replace(w)
            if fresh is not None:
                self._idle.put(fresh)

    def _replace(self, dead: _Worker) -> _Worker | None:
        for c in (dead.jobs, dead.results):
            try:
                c.close()
            except OSError:
                pass
        with self._lock:
            if self._closed:
                return None
            fresh = _Worker(dead.index)
            self._workers = [fresh if x is dead else x for x in self._workers]
        log.warning("extraction worker %d (pid %s) was replaced by pid %s", dead.index, dead.pid, fresh.pid)
        return fresh

    def close(self, timeout: float = 1.0) -> None:
        """Stop every worker: each finishes the job in hand; one still busy after `timeout` is killed."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            workers = list(self._workers)
        for w in workers:
            w.ask_to_stop()
        deadline = time.monotonic() + timeout
        for w in workers:
            w.reap(deadline - time.monotonic())


def main(argv: list[str]) -> None:
    """`python -m healerd.adapters.workers JOB_FD RESULT_FD`: one worker (started by WorkerPool)."""
    # The daemon decides when its workers stop (a None job, or its end of the pipe closing):
    # a SIGTERM sent to the whole service must not fail the scrapes it is finishing.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _serve(Connection(int(argv[1]), writable=False), Connection(int(argv[2]), readable=False))


if __name__ == "__main__":
    from healerd.adapters.workers import main as _main  # the module's own name, so results unpickle in the daemon

    _main(sys.argv)
