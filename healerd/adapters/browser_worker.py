"""The browser worker: a separate process that owns Playwright and one Chromium.

Started by `healerd.adapters.browser.BrowserPool` as `python -m healerd.adapters.browser_worker FD
SETTINGS_JSON`, FD being its end of a socketpair (multiprocessing's Connection framing) and the
settings `{"executable", "launch_timeout", "max_pages", "dir", "endpoint"}`. Before anything else it
sets its process up (`healerd.adapters.browser_host.prepare`: its files in `dir`, not root, the
sandbox probed) and says so: `{"op": "hello", "uid", "sandbox", "why", ...}`.

It reads requests `{"op": "fetch", "id", "url", "headers", "cookies", "wait_for", "timeout",
"max_bytes", "max_redirects", "user_agent", "block", "allow_private"}` and answers each with
`{"id", "ok": True, "status", "final_url", "headers", "html", "permanent_redirect"}` or
`{"id", "ok": False, "kind", "code", "status"}`, where `kind` names what went wrong
(`timeout_load`, `timeout_wait`, `timeout_cpu`, `net`, `crash`, `too_big`, `launch`, `left`,
`refused`, `redirects`, `other`) and `code` is Chromium's `net::ERR_…` name when there is one (or a
short phrase of ours). No message text from the browser is sent back (it may hold a URL with
credentials); `healerd.adapters.browser.error_for` turns the answer into an error class and a masked
one-line message.

Every page is treated as hostile: each fetch has a context of its own, closed with all its
pages when the fetch ends (healerd/adapters/browser_context.py), and every request its page
makes is checked (healerd/adapters/browser_guard.py: credentials to the source's origin only,
internal addresses refused, the main document's redirects followed here hop by hop). The whole
fetch has one deadline; past it the context is closed, which ends its renderer even if its
script never yields, and a renderer that no longer answers is reported as such (`timeout_cpu`).
Other fetches run in their own contexts (their own renderers) meanwhile.
When Chromium dies, the fetches in flight fail with `crash` and the next fetch launches a new
one. EOF on the pipe or `{"op": "close"}` closes the browser and ends the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from typing import Any, cast

from healerd.adapters.browser_context import _close_made, _Slot
from healerd.adapters.browser_guard import _CLOSED, _NET_CODE, _Failed, _Guard
from healerd.core import netpolicy

CHROMIUM_ARGS = ["--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage",
                 # Our own network policy decides what a page may reach (a main document is
                 # fulfilled from the route, so Chromium cannot tell its address space).
                 "--disable-features=LocalNetworkAccessChecks,PrivateNetworkAccessRespectPreflightResults,"
                 "BlockInsecurePrivateNetworkRequests,"
                 # Chromium keeps a spare renderer warm for the next navigation in the same browser
                 # context; every fetch has a context of its own, so each spare was started (and
                 # thrown away) for nothing: one renderer start per fetch (bench/browser_costs.py).
                 "SpareRendererForSitePerProcess,"
                 # Headless Chromium gives every new window (Playwright opens one per context) an
                 # omnibox popup rendered by a WebUI renderer of its own, started for each fetch and
                 # never shown: another renderer start per fetch.
                 "WebUIOmniboxPopup,WebUIOmniboxAimPopup"]
# The next fetch's context (its window, its renderer, Playwright's set-up of its page: most of
# a fetch's cost) is made while the current one renders, off the fetch's critical path; False
# makes every context on demand (bench/browser_costs.py compares both).
SPARE_CONTEXT = True
ALIVE_PROBE_S = 0.5   # a renderer that cannot evaluate `1` within this is busy with the page's script


class Worker:
    def __init__(self, conn, executable: str, launch_timeout: float, max_pages: int = 2, endpoint: str = "",
                 sandbox: bool = False):
        self.conn = conn
        self.max_pages = max_pages
        self.executable = executable
        self.launch_timeout = launch_timeout
        self.endpoint = endpoint
        self.sandbox = sandbox
        self.pw: Any = None        # playwright's Playwright, once serve() has started it
        self.browser: Any = None   # its Browser, launched (or connected) on the first fetch
        self._launch_lock = asyncio.Lock()
        self._dns: dict[tuple[str, int], tuple[float, list[str]]] = {}
        # The next fetch's context, being made or ready: (the browser, the user agent, the task making it).
        self._spare: tuple[Any, str, asyncio.Future] | None = None
        self._closing = False

    async def _browser(self):
        async with self._launch_lock:
            if self.browser is None or not self.browser.is_connected():
                old, self.browser = self.browser, None
                if old is not None:
                    with contextlib.suppress(Exception):
                        await old.close()
                try:
                    if self.endpoint:
                        options = {"headless": True, "args": CHROMIUM_ARGS, "chromiumSandbox": True}
                        if self.executable:
                            options["executablePath"] = self.executable
                        self.browser = await self.pw.chromium.connect(
                            self.endpoint, timeout=self.launch_timeout * 1000.0,
                            headers={"x-playwright-launch-options": json.dumps(options)})
                    else:
                        self.browser = await self._launch()
                except Exception as exc:
                    raise _Failed("launch", type(exc).__name__) from None
            return self.browser

    async def _launch(self):
        launch = self.pw.chromium.launch
        options = {"executable_path": self.executable, "args": CHROMIUM_ARGS, "headless": True,
                   "timeout": self.launch_timeout * 1000.0}
        if self.sandbox:
            try:
                return await launch(chromium_sandbox=True, **options)
            except Exception as exc:
                # The kernel gave us a user namespace, but something else (a seccomp filter, a
                # missing capability inside it) keeps the sandbox from starting.
                self.sandbox = False
                self._tell({"op": "notice", "why": f"Chromium's sandbox did not start ({type(exc).__name__}: "
                                                   f"{_first_line(str(exc))})"})
        return await launch(chromium_sandbox=False, **options)

    def _tell(self, msg: dict) -> None:
        try:
            self.conn.send(msg)
        except (OSError, ValueError):
            pass

    async def resolve(self, host: str, port: int) -> list[str]:
        """The addresses `host` resolves to (cached 30 s); [host] for an address, [] when it does not resolve."""
        host = host.strip("[]")
        if netpolicy.is_address(host):
            return [host]
        hit = self._dns.get((host, port))
        if hit is not None and time.monotonic() - hit[0] < 30.0:
            return hit[1]
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port)
            found = sorted({cast(str, info[4][0]) for info in infos})   # an address, for AF_INET(6)
        except OSError:
            found = []
        if len(self._dns) > 1000:
            self._dns.clear()
        self._dns[(host, port)] = (time.monotonic(), found)
        return found

    async def fetch(self, req: dict) -> dict:
        browser = await self._browser()   # a launch is bounded by launch_timeout, not by the page's deadline
        slot = await self._take_spare(browser, req["user_agent"])
        if slot is None:
            try:
                slot = await _Slot.open(browser, req["user_agent"])
            except Exception as exc:
                raise self._classify(exc, "other") from None
        self._refill(browser, req["user_agent"])   # the next fetch's context, made while this one renders
        guard = _Guard(req, self.resolve)   # the page's deadline starts with the fetch
        deadline = guard.deadline
        try:
            async with asyncio.timeout_at(asyncio.get_running_loop().time() + (deadline - time.monotonic())):
                return await self._render(slot.attach(guard), guard, req, deadline)
        except TimeoutError:
            raise await self._why_late(guard, _Failed("timeout_wait" if guard.phase == "wait" else "timeout_load")) \
                from None
        except _Failed as failed:
            if failed.kind.startswith("timeout"):
                raise await self._why_late(guard, failed) from None
            if failed.kind == "net" and failed.code == "ERR_FAILED":
                # The driver's request failed without saying why: was it Chromium dying under it?
                await asyncio.sleep(0.2)
                if not browser.is_connected():
                    raise _Failed("crash") from None
            raise
        finally:
            # Every page of this fetch (popups included) and its renderer go with the context.
            await slot.close()

    async def _take_spare(self, browser, user_agent: str) -> _Slot | None:
        """The context made ahead for this fetch (waited for when still being made), when it fits:
        the same browser, the same user agent. None when there is none or it failed."""
        spare, self._spare = self._spare, None
        if spare is None:
            return None
        made_for, agent, task = spare
        if made_for is not browser or agent != user_agent:
            task.add_done_callback(_close_made)
            return None
        try:
            slot = await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(_close_made)
            raise
        except Exception:
            return None
        if not browser.is_connected():
            await slot.close()
            return None
        return slot

    def _refill(self, browser, user_agent: str) -> None:
        if SPARE_CONTEXT and self._spare is None and not self._closing:
            task = asyncio.ensure_future(_Slot.open(browser, user_agent))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())   # never "never retrieved"
            self._spare = (browser, user_agent, task)

    async def _drop_spare(self) -> None:
        spare, self._spare = self._spare, None
        if spare is not None:
            with contextlib.suppress(Exception):
                await (await spare[2]).close()

    async def _render(self, page, guard: _Guard, req: dict, deadline: float) -> dict:
        url, first, chain, permanent = req["url"], None, [req["url"]], None
        while True:
            guard.navigating, guard.hop = url, None
            try:
                resp = await self._until_failed(guard, page.goto(url, wait_until="load", timeout=_ms_left(deadline)))
            except _Failed:
                raise
            except Exception as exc:
                if guard.hop is None:
                    raise self._classify(exc, "timeout_load") from None
                resp = None
            if guard.hop is None:
                break
            status, target = guard.hop
            if first is None:
                first = status
                if status in (301, 308):
                    permanent = target
            if netpolicy.origin(target) is None or not target.startswith(("http://", "https://")):
                raise _Failed("redirects", "unusable", status)
            if target in chain:
                raise _Failed("redirects", "loop", status)
            if len(chain) > int(req.get("max_redirects", 10)):
                raise _Failed("redirects", "too_many", status)
            chain.append(target)
            url = target
        if resp is None:
            raise _Failed("other", "NO_RESPONSE")
        status = resp.status
        headers = {k.lower(): v for k, v in (await resp.all_headers()).items()}
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > req["max_bytes"]:
            raise _Failed("too_big", "", status)
        guard.phase = "wait"
        if req.get("wait_for") and status < 400:
            try:
                await self._until_failed(guard, page.wait_for_selector(req["wait_for"], state="attached",
                                                                         timeout=_ms_left(deadline)))
            except _Failed:
                raise
            except Exception as exc:
                raise self._classify(exc, "timeout_wait") from None
        guard.phase = "content"
        html = await self._until_failed(guard, page.content())
        if guard.failure is not None:
            raise guard.failure
        if len(html.encode("utf-8", "replace")) > req["max_bytes"]:
            raise _Failed("too_big", "", status)
        return {"ok": True, "status": status, "final_url": page.url, "headers": headers, "html": html,
                "permanent_redirect": permanent}

    @staticmethod
    async def _until_failed(guard: _Guard, coro):
        """`coro`'s result, unless the guard ends the fetch first (the page left, a refused load)."""
        work = asyncio.ensure_future(coro)
        work.add_done_callback(lambda t: t.cancelled() or t.exception())   # never "never retrieved"
        ended = asyncio.ensure_future(guard.ended.wait())
        try:
            await asyncio.wait({work, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()
            if not work.done() and guard.failure is None:   # cancelled from outside (the deadline)
                work.cancel()
        if guard.failure is not None and (not work.done() or work.exception() is not None):
            work.cancel()
            raise guard.failure
        return work.result()

    @staticmethod
    async def _why_late(guard: _Guard, failed: _Failed) -> _Failed:
        """The fetch's deadline passed: `failed`, or `timeout_cpu` when the page's renderer is
        busy with its script (it cannot evaluate `1`)."""
        if guard.page is None or not guard.committed:
            return failed
        try:
            await asyncio.wait_for(guard.page.evaluate("1"), ALIVE_PROBE_S)
        except Exception:
            return _Failed("timeout_cpu", "", failed.status)
        return failed

    def _classify(self, exc: Exception, timeout_kind: str) -> _Failed:
        text = str(exc)
        if type(exc).__name__ == "TimeoutError":
            return _Failed(timeout_kind)
        if self.browser is None or not self.browser.is_connected() or any(s in text for s in _CLOSED):
            return _Failed("crash")
        m = _NET_CODE.search(text)
        if m:
            return _Failed("net", m.group(1))
        return _Failed("other", type(exc).__name__)

    async def serve(self) -> None:
        from playwright.async_api import async_playwright

        loop = asyncio.get_running_loop()
        self.pw = await async_playwright().start()
        tasks: set[asyncio.Task] = set()
        try:
            while True:
                try:
                    msg = await loop.run_in_executor(None, self.conn.recv)
                except (EOFError, OSError):
                    break
                if not isinstance(msg, dict) or msg.get("op") == "close":
                    break
                if msg.get("op") == "fetch":
                    task = asyncio.create_task(self._answer(msg))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
            for task in list(tasks):
                task.cancel()
        finally:
            self._closing = True
            await self._drop_spare()
            try:
                if self.browser is not None:
                    await self.browser.close()
            except Exception:
                pass
            try:
                await self.pw.stop()
            except Exception:
                pass

    async def _answer(self, req: dict) -> None:
        try:
            out = await self.fetch(req)
        except _Failed as f:
            out = {"ok": False, "kind": f.kind, "code": f.code, "status": f.status}
        except Exception as exc:   # never let one page end the worker
            out = {"ok": False, "kind": "other", "code": type(exc).__name__, "status": None}
        out["id"] = req["id"]
        try:
            self.conn.send(out)
        except (OSError, ValueError):
            pass


def _first_line(text: str) -> str:
    """A short first line of a browser message, with nothing that looks like a URL."""
    line = (text.strip().splitlines() or [""])[0]
    return re.sub(r"\S+://\S+", "<url>", line)[:160]


def _ms_left(deadline: float) -> float:
    return max(1.0, (deadline - time.monotonic()) * 1000.0)


def main(conn, settings: dict) -> None:
    """The worker process's entry point."""
    # Everything the worker will import, imported while it can still read any path (after the
    # drop to nobody, an interpreter installed under root's home could not be read).
    import concurrent.futures.thread  # noqa: F401  (run_in_executor's pool)
    import encodings.idna  # noqa: F401  (getaddrinfo of a host name)

    import playwright.async_api  # noqa: F401

    from healerd.adapters.browser_host import prepare

    endpoint = settings.get("endpoint") or ""
    hello = {"op": "hello", "uid": None, "sandbox": False, "why": "", "remote": bool(endpoint)}
    if settings.get("dir"):
        hello.update(prepare(settings["dir"]))
    conn.send(hello)
    asyncio.run(Worker(conn, settings.get("executable") or "", float(settings["launch_timeout"]),
                       int(settings["max_pages"]), endpoint, bool(hello["sandbox"])).serve())


if __name__ == "__main__":
    import sys
    from multiprocessing.connection import Connection

    main(Connection(int(sys.argv[1])), json.loads(sys.argv[2]))
