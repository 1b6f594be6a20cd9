"""Where selectors no person wrote meet pages nobody checked: in a worker process, under a deadline.

selectolax (lexbor) has no time limit: one `.css()` call of a selector shaped for a page
(nested `:has()`, long descendant chains) on a page shaped for it (hundreds of nested
elements) runs for minutes, holding the GIL of the process it runs in. So nothing in the
daemon's process evaluates such a selector: the Doctor's diagnosis and relocation, the
built-in healer's search, the Deployer's trial of a candidate (and of production on the
same live page), merges and their proofs, and the Validator's trial of the previous version
all go through `Trials`, one extraction worker process of its own (the same worker as the
scrapes', `healerd.adapters.workers`), started on first use.

Each job has a wall-clock deadline, `[daemon] extraction_timeout`, counted from the moment
the worker starts evaluating selectors on the page. A job past it raises `TooSlow` ("too
slow on this page") and its worker is killed and replaced; the caller's `on_overrun` runs
before the kill, so what it records (the candidate rejected) holds even if the daemon dies
with it. Code parsers are not run here: they run in the sandbox (healerd/adapters/sandbox.py),
which has its own wall-clock limit.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from healerd.adapters.page_work import (
    CALLS,
    CallJob,
    HealAnswer,
    HealJob,
    PageJob,
    PageResult,
)
from healerd.adapters.workers import WorkerError, WorkerPool
from healerd.core.blueprint import Blueprint
from healerd.core.errors import HealerdError
from healerd.core.extract import Extraction, PageLimits, PageTooLarge

log = logging.getLogger("healerd.trials")

TOO_SLOW = "too slow on this page"
# Before a job's extraction starts it may wait for the worker to start (a fresh interpreter) and
# for the other threads' pages (one page is evaluated at a time per worker).
START_ALLOWANCE_S = 60.0
THREADS = 3   # the Doctor, the Deployer and the Validator may each have a trial in hand


class TooSlow(HealerdError):
    """The selectors ran past the extraction deadline on this page; the worker was replaced."""

    def __init__(self, line: str):
        super().__init__(f"{TOO_SLOW} ({line})")
        self.reason = str(self)


class TrialFailed(HealerdError):
    """The parser failed on the page (or its worker died twice): one line in `reason`."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Trials:
    """One worker process (started on the first job) for the evaluation of untrusted selectors."""

    def __init__(self, timeout: float, threads: int = THREADS):
        self.timeout = timeout
        self.threads = threads
        self._pool: WorkerPool | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _get(self) -> WorkerPool:
        with self._lock:
            if self._closed:
                raise TrialFailed("healerd is shutting down")
            if self._pool is None or self._pool.closed:
                self._pool = WorkerPool(1, deadline=START_ALLOWANCE_S + self.timeout * self.threads,
                                        threads=self.threads, extraction_timeout=self.timeout)
            return self._pool

    def _run(self, job: PageJob | HealJob | CallJob, on_overrun: Callable[[str], None] | None) -> Any:
        for attempt in (1, 2):
            try:
                return self._get().run(job, on_overrun=on_overrun)
            except WorkerError as exc:
                if exc.too_slow:
                    log.warning("a trial was stopped: %s", exc)
                    raise TooSlow(str(exc)) from None
                if attempt == 2 or not exc.died_under:
                    raise TrialFailed(str(exc)) from None
        raise AssertionError("unreachable")

    def extract(self, bp: Blueprint, html: str, limits: PageLimits | None = None,
                on_overrun: Callable[[str], None] | None = None) -> Extraction:
        """`bp`'s selectors on `html`, in the worker: the Extraction, or PageTooLarge (a work bound),
        TooSlow (past the deadline) or TrialFailed (the parser failed on the page)."""
        job = PageJob(body=b"", encoding="utf-8", blueprint_json=bp.extraction_json, limits=limits or PageLimits(),
                      snapshot=False, text=html)
        res: PageResult = self._run(job, on_overrun)
        if res.too_large:
            raise PageTooLarge(res.error or "the page passes a work bound")
        if res.error is not None or res.extraction is None:
            raise TrialFailed(res.error or "no extraction")
        return res.extraction

    def heal(self, bp: Blueprint, original_html: str, last_good_records: Any, current_html: str,
             on_overrun: Callable[[str], None] | None = None) -> Any:
        """The built-in healer's HealResult for these pages, found in the worker; TooSlow past the
        deadline, TrialFailed when it crashed."""
        ans: HealAnswer = self._run(HealJob(blueprint_json=bp.to_json(), original_html=original_html,
                                            last_good_records=last_good_records, current_html=current_html),
                                    on_overrun)
        if ans.error is not None:
            raise TrialFailed(ans.error)
        return ans.result

    def call(self, name: str, *args: Any, on_overrun: Callable[[str], None] | None = None) -> Any:
        """One of the core's page checks (`page_work.CALLS`: the built-in healer, drift, data gone)
        on pages nobody checked, in the worker: its result; TooSlow past the deadline, TrialFailed
        when it raised."""
        if name not in CALLS:
            raise ValueError(f"no such page check: {name!r}")
        ans: HealAnswer = self._run(CallJob(name, args), on_overrun)
        if ans.error is not None:
            raise TrialFailed(ans.error)
        return ans.result

    def pids(self) -> list[int]:
        with self._lock:
            return self._pool.pids() if self._pool is not None and not self._pool.closed else []

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
