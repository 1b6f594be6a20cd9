"""The CPU-bound part of a scrape, and the worker processes that run it beside the daemon.

`process_page` is what a page costs once it has arrived: decode, hash, parse and extract
with the blueprint's selectors, and compress the page for its snapshot when it differs from
the last good one (`PageJob` -> `PageResult`: page bytes, charset, blueprint JSON, the last
good page's hash -> records, raw values, item count, hash, compressed page or one error line).
`fetch_and_process` puts the HTTP fetch in front of it (`FetchJob` -> `FetchOutcome`: URL,
headers, conditional-request validators, fetch settings -> status, validators, page text,
the fetch's error class or the PageResult). Jobs and answers are small picklable values,
so the same functions run in a Scraper's thread (`[daemon] workers = 0`) or in a worker
process, and give the same result either way.

`WorkerPool` keeps N worker processes, each a fresh interpreter running this module (never
a fork of the multi-threaded daemon) with a few threads, so that one worker's fetches
overlap their network waits while its parsing uses its own core. A Scraper thread sends a
job to the least busy worker and waits for the answer; a reader thread per worker hands
each answer to its caller. A worker that dies fails the jobs it had in hand with a clear
line and is replaced at once; a job over its deadline gets its worker killed and replaced.
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
import hashlib
import itertools
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from functools import lru_cache
from multiprocessing.connection import Connection
from typing import Any

from healerd.adapters.fetch import FetchConfig, Fetcher, FetchError, FetchResult, tls_context
from healerd.core import errors
from healerd.core.blueprint import from_json
from healerd.core.classify import not_html_reason
from healerd.core.drift import locus_signature
from healerd.core.extract import Extraction, PageLimits, PageTooLarge, check_page, extract, parse_html
from healerd.core.pagecodec import compress_page
from healerd.core.validate import last_good_sample

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


@dataclass(frozen=True)
class PageJob:
    """A fetched page for extraction: what crosses to a worker."""
    body: bytes
    encoding: str                  # the charset the fetch decoded it with
    blueprint_json: str            # a selector blueprint: its extraction part (Blueprint.extraction_json) will do
    good_sha: str | None = None    # the last good snapshot's hash: the page is compressed only when it differs
    limits: PageLimits = PageLimits()   # the page's work bounds ([fetch] max_items, max_elements, max_depth)
    snapshot: bool = True          # False: a trial of a candidate, nothing is kept of the page
    text: str | None = None        # the page as text already (a trial's page): `body` is then not read


@dataclass(frozen=True)
class HealJob:
    """The built-in selector healer's search on two pages (healerd.core.heal.builtin.heal), in a
    worker: the pages are untrusted and the search evaluates selectors on them."""
    blueprint_json: str            # the whole blueprint (the candidate keeps its url, headers...)
    original_html: str
    last_good_records: Any
    current_html: str


@dataclass(frozen=True)
class CallJob:
    """One of the core's page checks that evaluate a blueprint's selectors on pages nobody
    checked (CALLS), run in a worker under the extraction deadline: `name` and its arguments."""
    name: str
    args: tuple


def _core_call(name: str) -> Callable[..., Any]:
    """The core function a CallJob names (only these: the pipe carries names, never code)."""
    if name == "heal":
        from healerd.core.heal.builtin import heal
        return heal
    if name == "gone_fields":
        from healerd.core.heal.data_gone import gone_fields
        return gone_fields
    if name in ("drift_reason", "page_drift", "page_locus"):
        from healerd.core import drift
        return getattr(drift, name)
    raise ValueError(f"no such page check: {name!r}")


CALLS = ("heal", "gone_fields", "drift_reason", "page_drift", "page_locus")


@dataclass(frozen=True)
class HealAnswer:
    result: Any = None             # healerd.core.heal.evidence.HealResult
    error: str | None = None       # the healer crashed: one line


@dataclass(frozen=True)
class PageResult:
    """What a worker sends back: the extraction, or one error line."""
    page_sha: str
    extraction: Extraction | None = None
    error: str | None = None       # the parser failed on this page
    too_large: bool = False        # the error is a work bound the page passed (error class TOO_LARGE)
    snapshot_z: bytes | None = None   # the page as stored (healerd.core.pagecodec): only when page_sha != good_sha
    shape_sample: list | None = None  # validate.last_good_sample of the records, kept if they pass
    locus: str | None = None          # drift.locus_signature of the page: only when page_sha != good_sha


def decode(body: bytes, encoding: str) -> str:
    """The page's text, as the fetch decoded it."""
    try:
        return body.decode(encoding or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def process_page(job: PageJob, html: str | None = None) -> PageResult:
    """Hash, extract and (when changed) compress one page. Never raises for a bad page."""
    raw = job.body if job.body or html is None else html.encode("utf-8", "surrogatepass")   # a trial sends text only
    sha = hashlib.sha256(raw).hexdigest()
    text = html if html is not None else decode(job.body, job.encoding)
    snapshot = None
    try:
        # Elements and nesting are bounded before anything parses the page, items before records are built.
        check_page(text, job.limits.max_elements, job.limits.max_depth)
        snapshot = compress_page(text) if job.snapshot and sha != job.good_sha else None
        bp = _blueprint(job.blueprint_json)
        tree = parse_html(text)
        items: list = []
        extraction = extract(tree, bp, max_items=job.limits.max_items, items_out=items)
    except PageTooLarge as exc:
        return PageResult(page_sha=sha, error=str(exc), too_large=True)
    except Exception as exc:
        return PageResult(page_sha=sha, error=str(getattr(exc, "reason", None) or exc), snapshot_z=snapshot)
    return PageResult(page_sha=sha, extraction=extraction, snapshot_z=snapshot,
                      shape_sample=last_good_sample(extraction.data),
                      locus=_locus(tree, bp, items, snapshot is not None))


def _locus(tree, bp, items: list, changed: bool) -> str | None:
    """The structure the selectors land on (healerd.core.drift), for a page whose bytes changed:
    the Validator compares it with the last good page's. None when unchanged or not computable."""
    if not changed:
        return None
    try:
        return locus_signature(tree, bp, items if bp.items else None)
    except Exception:   # the trigger must never fail a scrape that extracted
        log.debug("locus signature failed", exc_info=True)
        return None


@lru_cache(maxsize=1024)
def _blueprint(body: str):
    return from_json(body)


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


@dataclass(frozen=True)
class FetchJob:
    """A page to fetch over HTTP and then process (`process_page`): what crosses to a worker
    that fetches as well. Everything the fetch needs travels with the job, so a worker keeps
    no source's state between jobs and a reloaded configuration applies to the next job."""
    url: str
    blueprint_json: str                 # a selector blueprint: its extraction part (Blueprint.extraction_json) will do
    fetch: FetchConfig = FetchConfig()
    headers: dict | None = None         # the blueprint's headers and cookies (sent to its own origin only)
    cookies: dict | None = None
    etag: str | None = None             # a conditional request when the last fetch gave these
    last_modified: str | None = None
    good_sha: str | None = None
    limits: PageLimits = PageLimits()


@dataclass(frozen=True)
class FetchOutcome:
    """What a fetching worker sends back: the fetch's answer (or its error class and one line),
    and when a page arrived, `process_page`'s result and the page's text unless that result
    holds it compressed (`snapshot_z`): a page that passes validation is not needed again, so
    the daemon decompresses one only when it is (ExtractedPage.page_text)."""
    status: int | None = None
    text: str | None = None             # the page as decoded, when page.snapshot_z does not hold it
    not_modified: bool = False
    etag: str | None = None
    last_modified: str | None = None
    permanent_redirect: str | None = None
    error_type: str | None = None       # the fetch failed, or the answer is not a page
    error: str | None = None
    retry_after: float | None = None
    dns_failure: bool = False
    page: PageResult | None = None


# One page parsed at a time per process: the parse holds the GIL, so a second one in parallel
# gains nothing, and each parsed page in flight is a tree of a few MB (a worker of four
# threads peaked at 54 MB parsing four at once). Fetches still overlap their network waits.
_PARSING = threading.Lock()


def fetch_answer(fetcher: Fetcher, url: str, *, headers: dict | None = None, cookies: dict | None = None,
                 etag: str | None = None, last_modified: str | None = None, via: str = "http",
                 wait_for: str | None = None) -> FetchOutcome | FetchResult:
    """Fetch `url`: the page (a FetchResult) when one arrived, else the FetchOutcome that ends the
    scrape there (the fetch's error class and line, a 304, or an answer that is not a page).
    Never raises for a bad fetch."""
    try:
        res = fetcher.fetch(url, headers=headers or None, cookies=cookies or None, etag=etag,
                            last_modified=last_modified, via=via, wait_for=wait_for)
    except FetchError as exc:
        return FetchOutcome(status=exc.status, error_type=exc.error_type, error=exc.message,
                            retry_after=exc.retry_after,
                            dns_failure=exc.error_type == errors.NETWORK and "DNS" in exc.message)
    if res.not_modified:
        return FetchOutcome(status=res.status, not_modified=True, etag=res.etag, last_modified=res.last_modified)
    binary = not_html_reason(res.body, res.headers.get("content-type"))
    if binary:
        return FetchOutcome(status=res.status, error_type=errors.NOT_HTML, error=binary)
    return res


def fetch_and_process(job: FetchJob, fetcher: Fetcher,
                      extracting: Callable[[], AbstractContextManager[None]] = nullcontext) -> FetchOutcome:
    """Fetch `job.url` with `fetcher` and process the page. Never raises for a bad fetch or page.
    `extracting()` is entered once the page has arrived, around its extraction (a worker's
    deadline: see `_serve`)."""
    res = fetch_answer(fetcher, job.url, headers=job.headers, cookies=job.cookies, etag=job.etag,
                       last_modified=job.last_modified)
    if isinstance(res, FetchOutcome):
        return res
    with _PARSING, extracting():
        page = process_page(PageJob(body=res.body, encoding=res.encoding, blueprint_json=job.blueprint_json,
                                    good_sha=job.good_sha, limits=job.limits), html=res.text)
    return FetchOutcome(status=res.status, text=res.text if page.snapshot_z is None else None,
                        etag=res.etag, last_modified=res.last_modified,
                        permanent_redirect=res.permanent_redirect, page=page)


def run_heal(job: HealJob) -> HealAnswer:
    """The built-in healer's answer to `job`. Never raises: a crash is one line."""
    from healerd.core.heal.builtin import heal

    try:
        return HealAnswer(result=heal(from_json(job.blueprint_json), job.original_html, job.last_good_records,
                                      job.current_html))
    except Exception as exc:
        return HealAnswer(error=f"the built-in healer failed: {type(exc).__name__}: {' '.join(str(exc).split())}")


def run_call(job: CallJob) -> HealAnswer:
    """A CallJob's answer: the function's result, or its failure in one line. Never raises."""
    try:
        return HealAnswer(result=_core_call(job.name)(*job.args))
    except Exception as exc:
        return HealAnswer(error=f"{job.name} failed: {type(exc).__name__}: {' '.join(str(exc).split())}")


def _answer(job, fetchers: dict, extracting: Callable[[], AbstractContextManager[None]] = nullcontext
            ) -> PageResult | FetchOutcome | HealAnswer:
    """A worker's answer to one job (a PageJob, a HealJob, or a FetchJob with this thread's fetchers).
    `extracting()` is entered around the evaluation of selectors on the page (the extraction deadline)."""
    try:
        if isinstance(job, HealJob):
            with _PARSING, extracting():
                return run_heal(job)
        if isinstance(job, CallJob):
            with _PARSING, extracting():
                return run_call(job)
        if isinstance(job, FetchJob):
            fetcher = fetchers.get(job.fetch)
            if fetcher is None:   # one client per thread and fetch configuration, kept for keep-alive
                for old in fetchers.values():
                    old.close()
                fetchers.clear()
                try:
                    fetcher = fetchers[job.fetch] = Fetcher(job.fetch)
                except Exception as exc:   # e.g. a CA bundle that cannot be read (TLSSetupError): no fetch can work
                    return FetchOutcome(error_type=errors.NETWORK, error=f"cannot set up the HTTP client: {exc}")
            return fetch_and_process(job, fetcher, extracting)
        with _PARSING, extracting():
            return process_page(job, html=job.text)
    except Exception as exc:   # both catch the page's and the fetch's errors; this is a bug
        line = f"internal error in the worker: {type(exc).__name__}: {exc}"
        if isinstance(job, FetchJob):
            return FetchOutcome(error_type=errors.PARSE_ERROR, error=line)
        if isinstance(job, (HealJob, CallJob)):
            return HealAnswer(error=line)
        return PageResult(page_sha="", error=line)


# The id of the one answer no job asked for: a worker sends (READY, None) once it has started.
READY = 0
# A note before a job's answer, (id, EXTRACTING): the selectors' evaluation on the page starts now.
EXTRACTING = "extracting"
# A worker's own alarm goes off this long after the daemon's extraction deadline: the daemon
# stops a worker that overran (after recording what it must), and the alarm (SIGALRM, whose
# default action ends the process even inside a C call holding the GIL) ends a worker whose
# daemon is gone or did not stop it. Without it, a worker busy in one selector call when its
# daemon is killed would only notice when the call returns, minutes later.
ALARM_MARGIN_S = 5.0


def _serve(jobs: Connection, results: Connection, threads: int) -> None:
    """A worker process: `threads` threads answer the (id, job) pairs read from `jobs` with
    (id, answer) pairs on `results`, until the pipe closes or a None arrives. Each thread reads
    its next pair itself, one reader at a time: no thread relays jobs, so a job reaches a free
    thread without waking another one (relaying through a queue cost ~2 % of a worker's CPU).
    Before the first job, (READY, None) says the worker has imported what a job needs, built
    the TLS context its fetchers share, and is listening."""
    try:   # before READY: the first jobs' fetches do not wait for it
        tls_context()
    except Exception:   # a CA bundle that cannot be read (SSL_CERT_FILE): each fetch says so in its answer
        pass
    send_lock = threading.Lock()
    recv_lock = threading.Lock()
    stopping = threading.Event()

    def next_job():
        """The next (id, job) pair, read by this thread itself (one reader at a time), or None
        once the pipe is closed or a None arrived."""
        with recv_lock:
            if stopping.is_set():
                return None
            try:
                item = jobs.recv()
            except (EOFError, OSError):
                item = None
            if item is None:
                stopping.set()
            return item

    def work() -> None:
        fetchers: dict = {}
        try:
            while True:
                item = next_job()
                if item is None:
                    return
                ident, job, alarm = item if len(item) == 3 else (*item, None)

                @contextmanager
                def extracting(ident=ident, alarm=alarm) -> Iterator[None]:
                    """Around one extraction (one at a time per worker: _PARSING is held): tell the
                    daemon it starts, and arm this process's own alarm for it."""
                    try:
                        with send_lock:
                            results.send((ident, EXTRACTING))
                    except (OSError, ValueError):
                        pass
                    if alarm:
                        signal.setitimer(signal.ITIMER_REAL, alarm)
                    try:
                        yield
                    finally:
                        if alarm:
                            signal.setitimer(signal.ITIMER_REAL, 0)

                answer = _answer(job, fetchers, extracting)
                try:
                    with send_lock:
                        results.send((ident, answer))
                except (OSError, ValueError):
                    return
        finally:
            for f in fetchers.values():
                f.close()

    try:   # imported and ready: what the pool's wait_ready waits for (jobs wait in the pipe meanwhile)
        with send_lock:
            results.send((READY, None))
    except (OSError, ValueError):
        return
    pool = [threading.Thread(target=work, name=f"worker-{i}", daemon=True) for i in range(max(1, threads))]
    for t in pool:
        t.start()
    for t in pool:   # each thread finishes the job in hand first
        t.join()


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
    __slots__ = ("done", "answer", "error", "overran", "too_slow", "extracting", "wake")

    def __init__(self):
        self.done = threading.Event()
        self.wake = threading.Event()   # done, or the EXTRACTING note arrived
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
                if slot is not None:
                    slot.extracting = time.monotonic()
                    slot.wake.set()
                continue
            slot = self.inflight.pop(ident, None)
            if slot is not None:
                slot.answer = answer
                slot.done.set()
                slot.wake.set()
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
        an overrun (`slot.too_slow` when it was the extraction's own deadline)."""
        end = time.monotonic() + self.deadline
        while True:
            if slot.done.is_set():
                return True
            started = slot.extracting
            if started is not None and self.extraction_timeout is not None:
                limit = started + self.extraction_timeout
                if time.monotonic() >= limit:
                    if slot.done.is_set():   # answered at the last moment
                        return True
                    slot.too_slow = True
                    return False
            else:
                limit = end
                if time.monotonic() >= limit:
                    return slot.done.is_set()
            slot.wake.clear()
            if slot.done.is_set() or (slot.extracting is not None) != (started is not None):
                continue
            slot.wake.wait(max(0.0, limit - time.monotonic()))

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
            slot.wake.set()
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


def main(argv: list[str]) -> None:
    """One worker process (`python -m healerd.adapters.workers_main JOB_FD RESULT_FD [THREADS]`, started by
    WorkerPool)."""
    # The daemon decides when its workers stop (a None job, or its end of the pipe closing):
    # a SIGTERM sent to the whole service must not fail the scrapes it is finishing.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)   # a job's own alarm ends the process (ALARM_MARGIN_S)
    threads = int(argv[3]) if len(argv) > 3 else 1
    _serve(Connection(int(argv[1]), writable=False), Connection(int(argv[2]), readable=False), threads)

