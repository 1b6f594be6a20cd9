"""The worker's end of the pipes between the daemon and an extraction worker process.

The wire: the daemon writes pickled (id, job, alarm) triples on the job pipe (a None asks the
worker to stop once the jobs in hand are done); the worker writes (id, answer) pairs on the
result pipe. Two pairs answer no job: (READY, None) once the worker has started, and
(id, EXTRACTING) before a job's answer, when the evaluation of selectors on its page starts
(the extraction deadline counts from there: selectolax has no time limit of its own, and a
page, or a selector, can be shaped to make one `.css()` call take minutes). `alarm` is the
worker's own SIGALRM for that extraction (the daemon's deadline plus ALARM_MARGIN_S).

`_serve` is a worker process's loop (`main`, run by healerd/adapters/workers_main.py): a few
threads, each reading its next job itself and answering it with healerd/adapters/page_work.py
(`_answer`). The daemon's end is healerd/adapters/workers.py (`WorkerPool`).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from multiprocessing.connection import Connection

from healerd.adapters.fetch import Fetcher, tls_context
from healerd.adapters.page_work import (
    _PARSING,
    CallJob,
    FetchJob,
    FetchOutcome,
    HealAnswer,
    HealJob,
    PageResult,
    fetch_and_process,
    process_page,
    run_call,
    run_heal,
)
from healerd.core import errors


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
