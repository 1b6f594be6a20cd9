"""Fetching a page with a real browser, for sources whose data a script renders.

A blueprint with `fetch = "browser"` has its page loaded by Chromium (driven by
Playwright, in a worker process: `healerd.adapters.browser_worker`); the rendered DOM
(`page.content()` after the load event and the optional `wait_for` selector) is then
handled exactly like an HTTP page: same FetchResult, same error classes, same
extraction, validation, snapshots, diff and healing. Only the GET is replaced: the
robots check, politeness and scheduling around it are the HTTP ones.

`BrowserPool` is the daemon's side, shared by every actor and thread-safe:
- one worker process (spawned on first use, so a daemon without browser sources never
  starts one) renders up to `[browser] max_pages` pages at once;
- a fetch waits at most `[fetch] timeout` for the page (load + wait_for) inside the
  browser, and the pool gives up on a worker silent for 10 s more (plus `launch_timeout`
  on a new worker's first page): it is killed with its browser, the fetch fails as
  TIMEOUT and the next fetch starts a fresh one;
- a worker that dies (or whose browser dies) fails the fetches in flight with one clear
  error; the next fetch works again;
- after `recycle_after` pages, or when the worker's process tree (Playwright's driver,
  Chromium and its renderers; looked at every 10 s) grows above `max_memory_mb`, the worker is retired: new
  fetches go to a new worker, the old one ends when its last page is done.

Nothing the browser says is passed on as text: error messages are built here from an
error kind and Chromium's `net::ERR_…` code, with the URL masked.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

from healerd.adapters.fetch import FetchConfig, FetchResult
from healerd.adapters.fetch_errors import FetchError, _host, _host_port, _reason, parse_retry_after
from healerd.config import BrowserSection
from healerd.core import errors
from healerd.core.classify import detect_block
from healerd.core.sanitize import mask_url

log = logging.getLogger("healerd.browser")

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL_HINT = "pip install 'healerd[browser]' and apt-get install chromium"
NOT_BLOCKS = (404, 410, 429)
CLOSE_GRACE_S = 5.0
ANSWER_GRACE_S = 10.0   # beyond the fetch timeout before a silent worker is taken for hung
MEMORY_CHECK_S = 10.0   # reading every process's smaps costs milliseconds: not after every page

_DNS = ("ERR_NAME_NOT_RESOLVED", "ERR_NAME_RESOLUTION_FAILED")
_TIMEOUTS = ("ERR_TIMED_OUT", "ERR_CONNECTION_TIMED_OUT")
_NET_TEXT = {
    "ERR_CONNECTION_REFUSED": "connection refused by {where}",
    "ERR_CONNECTION_RESET": "connection reset by {where}",
    "ERR_CONNECTION_CLOSED": "{where} closed the connection",
    "ERR_EMPTY_RESPONSE": "{where} closed the connection without a response",
    "ERR_ADDRESS_UNREACHABLE": "{where} is unreachable",
    "ERR_INTERNET_DISCONNECTED": "no network to reach {where}",
}


# -- finding the browser ---------------------------------------------------------------
def find_executable(configured: str = "") -> str | None:
    """The browser binary: `configured` when it is one, else the first candidate on PATH."""
    if configured:
        return shutil.which(configured)   # a path, or a name looked up on PATH
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def unavailable(section: BrowserSection) -> str | None:
    """Why a browser source cannot run here (one line saying what to install), or None."""
    if importlib.util.find_spec("playwright") is None:
        return f"a browser fetch needs Playwright, which is not installed: {INSTALL_HINT}"
    from healerd.adapters.browser_host import mdwe_problem

    problem = mdwe_problem()   # Playwright's driver runs here even with a remote endpoint
    if problem:
        return problem
    if section.endpoint:
        return None            # the browser runs where the Playwright server is
    if find_executable(section.executable) is None:
        if section.executable:
            return f"[browser] executable {section.executable} is not an executable file: apt-get install chromium " \
                   f"or point it at a Chromium/Chrome binary"
        return f"a browser fetch needs Chromium and none was found on PATH ({', '.join(CANDIDATES[:3])}): " \
               f"apt-get install chromium, or set [browser] executable"
    return None


def check_source(bp, section: BrowserSection) -> None:
    """Refuse a `fetch = "browser"` blueprint (BlueprintError on `fetch`) when no browser can run here."""
    if getattr(bp, "fetch", "http") == "browser":
        problem = unavailable(section)
        if problem:
            from healerd.core.blueprint import BlueprintError

            raise BlueprintError("fetch", problem)


# -- answers to results (pure) -----------------------------------------------------------
def error_for(reply: dict, url: str, timeout: float, max_bytes: int, wait_for: str | None) -> FetchError:
    """The FetchError for a failed answer from the worker."""
    kind, code, status = reply.get("kind"), reply.get("code") or "", reply.get("status")
    where = _host_port(url)
    if kind == "timeout_load":
        return FetchError(errors.TIMEOUT, f"the page at {mask_url(url)} did not finish loading in the browser "
                                          f"within {timeout:g}s", url=url)
    if kind == "timeout_wait":
        return FetchError(errors.TIMEOUT, f"wait_for {wait_for!r} matched nothing on {mask_url(url)} within "
                                          f"{timeout:g}s (the page loaded; its script never rendered that)",
                          url=url, status=status)
    if kind == "too_big":
        return FetchError(errors.HTTP_ERROR, f"response body larger than max_bytes ({max_bytes}) from "
                                             f"{mask_url(url)}", url=url, status=status)
    if kind == "crash":
        return FetchError(errors.NETWORK, f"the browser crashed while loading {mask_url(url)} (a new one is "
                                          f"started for the next fetch)", url=url)
    if kind == "timeout_cpu":
        return FetchError(errors.TIMEOUT, f"the page at {mask_url(url)} kept the browser busy past the {timeout:g}s "
                                          f"deadline (its script never yielded): the page was closed", url=url,
                          status=status)
    if kind == "launch":
        return FetchError(errors.NETWORK, f"the browser could not be started ({code}); {INSTALL_HINT}", url=url)
    if kind == "left":
        return FetchError(errors.HTTP_ERROR, f"the page at {mask_url(url)} navigated away from the source's origin "
                                             f"(to {code}): refused", url=url, status=status)
    if kind == "refused":
        return FetchError(errors.HTTP_ERROR, f"the page at {mask_url(url)} was redirected to {code}, which a page "
                                             f"may not reach ([browser] allow_private)", url=url, status=status)
    if kind == "redirects":
        what = {"loop": "a redirect loop", "too_many": "too many redirects",
                "unusable": "a redirect to an unusable URL"}.get(code, "a bad redirect")
        return FetchError(errors.HTTP_ERROR, f"{what} starting at {mask_url(url)}", url=url, status=status)
    if kind == "net":
        if code in _DNS:
            return FetchError(errors.NETWORK, f"DNS lookup failed for host {_host(url)} ({code})", url=url)
        if code in _TIMEOUTS:
            return FetchError(errors.TIMEOUT, f"connect timeout: {where} did not answer in time ({code})", url=url)
        if code == "ERR_TOO_MANY_REDIRECTS":
            return FetchError(errors.HTTP_ERROR, f"too many redirects starting at {mask_url(url)}", url=url)
        if code.startswith("ERR_CERT_") or code.startswith("ERR_SSL_"):
            return FetchError(errors.NETWORK, f"TLS with {where} failed ({code})", url=url)
        if code == "ERR_ABORTED":
            return FetchError(errors.HTTP_ERROR, f"the browser did not render {mask_url(url)} (not a page, "
                                                 f"e.g. a download)", url=url)
        text = _NET_TEXT.get(code, "network error talking to {where}")
        return FetchError(errors.NETWORK, f"{text.format(where=where)} ({code})", url=url)
    return FetchError(errors.NETWORK, f"the browser failed to load {mask_url(url)} ({code or kind})", url=url)


def result_for(reply: dict, url: str) -> FetchResult:
    """The FetchResult for a rendered page, or the FetchError its status means (as for HTTP)."""
    status = int(reply["status"])
    headers = dict(reply.get("headers") or {})
    html = reply.get("html") or ""
    final = reply.get("final_url") or url
    where = mask_url(final)
    if 200 <= status < 300:
        body = html.encode("utf-8")
        return FetchResult(url=final, status=status, headers=headers, body=body, text=html, encoding="utf-8",
                           not_modified=False, etag=None, last_modified=None,
                           elapsed_ms=float(reply.get("elapsed_ms", 0.0)),
                           permanent_redirect=reply.get("permanent_redirect"))
    retry_after = parse_retry_after(headers.get("retry-after"))
    if status == 429:
        wait = f"; retry after {retry_after:.0f}s" if retry_after is not None else ""
        raise FetchError(errors.RATE_LIMIT, f"HTTP 429 Too Many Requests from {where}{wait}", url=url,
                         status=status, retry_after=retry_after)
    if (400 <= status < 500 and status not in NOT_BLOCKS) or status == 503:
        blocked = detect_block(html, status, headers)
        if blocked:
            raise FetchError(errors.BLOCKED, f"HTTP {status} from {where}: {blocked}", url=url, status=status,
                             retry_after=retry_after)
    reason = _reason(status)
    raise FetchError(errors.HTTP_ERROR, f"HTTP {status} {reason + ' ' if reason else ''}from {where}",
                     url=url, status=status, retry_after=retry_after)


# -- the worker process, seen from the daemon --------------------------------------------
class _Call:
    __slots__ = ("done", "reply")

    def __init__(self):
        self.done = threading.Event()
        self.reply: dict | None = None


class _WorkerHandle:
    """One worker process, its pipe, and the fetches waiting for its answers."""

    def __init__(self, settings: dict, on_hello=None):
        # A plain subprocess (not multiprocessing's spawn, which re-runs the caller's __main__)
        # speaking multiprocessing's Connection framing over a socketpair.
        ours, theirs = socket.socketpair()
        self.on_hello = on_hello
        self.hello: dict | None = None
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "healerd.adapters.browser_worker", str(theirs.fileno()), json.dumps(settings)],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.pending: dict[int, _Call] = {}
        self.lock = threading.Lock()
        self.served = 0
        self.memory_checked = time.monotonic()
        self.retiring = False
        self.dead = False
        self.reader = threading.Thread(target=self._read, name="healerd-browser-reader", daemon=True)
        self.reader.start()

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def submit(self, call_id: int, request: dict) -> _Call:
        call = _Call()
        with self.lock:
            if self.dead:
                call.reply = {"ok": False, "kind": "crash"}
                call.done.set()
                return call
            self.pending[call_id] = call
            try:
                self.conn.send(request)
            except (OSError, ValueError):
                # The worker is gone: say so now, so the next fetch starts a new one instead of
                # waiting for the reader thread to notice the closed pipe.
                self.dead = True
                self.pending.pop(call_id, None)
                call.reply = {"ok": False, "kind": "crash"}
                call.done.set()
        return call

    def forget(self, call_id: int) -> None:
        with self.lock:
            self.pending.pop(call_id, None)
            idle = self.retiring and not self.pending
        if idle:
            self.close()

    def _read(self) -> None:
        while True:
            try:
                reply = self.conn.recv()
            except (EOFError, OSError, ValueError):
                break
            except Exception:   # an answer that does not unpickle: the worker is not trustworthy
                log.exception("unreadable answer from the browser worker")
                break
            if reply.get("op") in ("hello", "notice"):
                if reply.get("op") == "hello":
                    self.hello = reply
                if self.on_hello is not None:
                    self.on_hello(self, reply)
                continue
            with self.lock:
                call = self.pending.pop(reply.get("id"), None)
                self.served += 1
                idle = self.retiring and not self.pending
            if call is not None:
                call.reply = reply
                call.done.set()
            if idle:
                self.close()
        with self.lock:
            self.dead = True
            calls, self.pending = list(self.pending.values()), {}
        for call in calls:
            call.reply = {"ok": False, "kind": "crash"}
            call.done.set()
        self.kill()

    def memory_bytes(self) -> int:
        """Memory of the worker and everything under it (driver, Chromium, renderers), shared pages
        counted once (the sum of PSS; Chromium's processes share much, so summing RSS would double it)."""
        if self.process.poll() is not None:
            return 0
        try:
            import psutil

            root = psutil.Process(self.pid)
            total = 0
            for proc in [root] + root.children(recursive=True):
                try:
                    info = proc.memory_full_info()
                    total += getattr(info, "pss", info.rss)
                except psutil.Error:
                    pass
            return total
        except Exception:
            return 0

    def retire(self) -> None:
        """Take no more work; end once the pages in flight are done."""
        with self.lock:
            self.retiring = True
            idle = not self.pending
        if idle:
            self.close()

    def close(self) -> None:
        """Ask the worker to close its browser and exit; kill what is left after a grace period."""
        try:
            self.conn.send({"op": "close"})
        except (OSError, ValueError):
            pass
        threading.Thread(target=self._reap, name="healerd-browser-reap", daemon=True).start()

    def _reap(self) -> None:
        try:
            self.process.wait(CLOSE_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def kill(self) -> None:
        """Kill the worker and every process under it (Chromium would otherwise outlive it).

        Only while the worker is not reaped: until then its pid cannot name another process."""
        if self.process.poll() is not None:
            return self._close_conn()
        procs = []
        try:
            import psutil

            root = psutil.Process(self.pid)
            procs = root.children(recursive=True) + [root]
        except Exception:
            pass
        for p in procs:
            try:
                p.kill()
            except Exception:
                pass
        if not procs:
            self.process.kill()
        try:
            self.process.wait(2.0)
        except subprocess.TimeoutExpired:
            pass
        self._close_conn()

    def _close_conn(self) -> None:
        try:
            self.conn.close()
        except OSError:
            pass


class BrowserPool:
    """The daemon's browser: one worker process, started on first use, shared by all actors."""

    def __init__(self, section: BrowserSection, fetch: FetchConfig, state_dir: str | os.PathLike | None = None):
        self.section = section
        self.fetch_config = fetch
        # The workers' files (Chromium's profile, Playwright's temp files), one directory per worker.
        self._own_dir = state_dir is None
        self.dir = str(Path(tempfile.mkdtemp(prefix="healerd-browser-")) if state_dir is None
                       else Path(state_dir) / "browser")
        if not self._own_dir and os.path.isdir(self.dir):   # what killed workers of an earlier run left
            self._remove_leftovers()
        self._warned = False
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(section.max_pages)
        self._worker: _WorkerHandle | None = None
        self._ids = itertools.count(1)
        self._closed = False

    def _current(self) -> _WorkerHandle:
        with self._lock:
            if self._closed:
                raise FetchError(errors.NETWORK, "the browser is shut down (the daemon is stopping)", url="")
            w = self._worker
            if w is None or w.dead or w.retiring:
                problem = unavailable(self.section)
                if problem:
                    raise FetchError(errors.NETWORK, problem, url="")
                s = self.section
                executable = s.executable if s.endpoint else find_executable(s.executable)
                w = self._worker = _WorkerHandle(
                    {"executable": executable or "", "launch_timeout": s.launch_timeout, "max_pages": s.max_pages,
                     "dir": "" if s.endpoint else self.dir, "endpoint": s.endpoint}, self._hello)
                log.info("browser worker started (pid %s)", w.pid)
            return w

    def _hello(self, worker: _WorkerHandle, hello: dict) -> None:
        """The worker says who it runs as and whether Chromium's sandbox can start: one WARNING when not."""
        if hello.get("op") == "notice":   # the sandbox was found not to start after all
            if not self._warned:
                self._warned = True
                log.warning("Chromium runs with --no-sandbox: %s", hello.get("why"))
            return
        if hello.get("remote"):
            log.info("browser worker (pid %s) uses the Playwright server at %s", worker.pid,
                     mask_url(self.section.endpoint))
            return
        log.info("browser worker (pid %s) runs as uid %s, Chromium's sandbox %s", worker.pid, hello.get("uid"),
                 "on" if hello.get("sandbox") else "off")
        if not hello.get("sandbox") and not self._warned:
            self._warned = True
            log.warning("Chromium runs with --no-sandbox: %s", hello.get("why") or "its sandbox cannot start here")

    def worker_pid(self) -> int | None:
        with self._lock:
            return self._worker.pid if self._worker is not None and not self._worker.dead else None

    def fetch(self, url: str, *, headers: dict | None = None, cookies: dict | None = None,
              wait_for: str | None = None) -> FetchResult:
        """Render `url`; a FetchResult for 2xx, else FetchError (the error classes of an HTTP fetch)."""
        cfg = self.fetch_config
        started = time.monotonic()
        with self._slots:
            try:
                worker = self._current()
            except FetchError as exc:
                exc.url = url
                raise
            call_id = next(self._ids)
            request = {"op": "fetch", "id": call_id, "url": url, "headers": dict(headers or {}),
                       "cookies": dict(cookies or {}), "wait_for": wait_for, "timeout": cfg.timeout,
                       "max_bytes": cfg.max_bytes, "max_redirects": cfg.max_redirects, "user_agent": cfg.user_agent,
                       "block": list(self.section.block), "allow_private": self.section.allow_private}
            call = worker.submit(call_id, request)
            # The worker's own deadline is cfg.timeout; a new worker's first page also starts the browser.
            allowance = cfg.timeout + ANSWER_GRACE_S + (0.0 if worker.served else self.section.launch_timeout)
            if not call.done.wait(allowance):
                worker.forget(call_id)
                log.warning("the browser worker (pid %s) did not answer in time: killed", worker.pid)
                self._drop(worker)
                worker.kill()
                raise FetchError(errors.TIMEOUT, f"the browser did not answer for {mask_url(url)} within "
                                                 f"{allowance:g}s (restarted)", url=url)
            reply = call.reply or {"ok": False, "kind": "crash"}
            self._maybe_recycle(worker)
        if not reply.get("ok"):
            raise error_for(reply, url, cfg.timeout, cfg.max_bytes, wait_for)
        reply["elapsed_ms"] = (time.monotonic() - started) * 1000.0
        return result_for(reply, url)

    def _drop(self, worker: _WorkerHandle) -> None:
        with self._lock:
            if self._worker is worker:
                self._worker = None

    def _maybe_recycle(self, worker: _WorkerHandle) -> None:
        if worker.dead or worker.retiring:
            self._drop(worker)
            return
        why = None
        if worker.served >= self.section.recycle_after:
            why = f"after {worker.served} pages"
        elif time.monotonic() - worker.memory_checked >= MEMORY_CHECK_S:
            worker.memory_checked = time.monotonic()
            used = worker.memory_bytes()
            if used > self.section.max_memory_mb * 1_048_576:
                why = f"its processes use {used / 1_048_576:.0f} MB (max_memory_mb {self.section.max_memory_mb})"
        if why:
            log.info("browser worker (pid %s) recycled %s", worker.pid, why)
            self._drop(worker)
            worker.retire()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            w, self._worker = self._worker, None
        if w is not None:
            w.retire()
        self._remove_dir(w)

    def _remove_dir(self, w: _WorkerHandle | None) -> None:
        """At a clean stop, once the worker has ended: the workers' files are removed (a pool made
        without a state dir, a script's or a test's, removes its temp dir whole)."""
        if w is not None:
            try:
                w.process.wait(CLOSE_GRACE_S + 3.0)
            except subprocess.TimeoutExpired:
                pass
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        elif os.path.isdir(self.dir):   # a worker still running (past the grace) keeps its files
            self._remove_leftovers()

    def _remove_leftovers(self) -> None:
        from healerd.adapters.browser_host import remove_leftovers

        try:
            remove_leftovers(self.dir)
        except Exception as exc:   # e.g. a browser/ that is not ours: refused, said once, the daemon runs on
            log.warning("the browser's work directory %s was not cleaned: %s", self.dir, exc)
