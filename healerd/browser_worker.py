"""The browser worker: a separate process that owns Playwright and one Chromium.

Started by `healerd.browser.BrowserPool` as `python -m healerd.browser_worker FD
EXECUTABLE LAUNCH_TIMEOUT`, FD being its end of a socketpair (multiprocessing's
Connection framing). It reads requests `{"op": "fetch", "id", "url", "headers", "cookies", "wait_for",
"timeout", "max_bytes", "user_agent", "block"}` and answers each with
`{"id", "ok": True, "status", "final_url", "headers", "html", "permanent_redirect"}` or
`{"id", "ok": False, "kind", "code", "status"}`, where `kind` names what went wrong
(`timeout_load`, `timeout_wait`, `net`, `crash`, `too_big`, `launch`, `other`) and `code`
is Chromium's `net::ERR_…` name when there is one. No message text from the browser is
sent back (it may hold a URL with credentials); `healerd.browser.error_for` turns the
answer into an error class and a masked one-line message.

Pages render concurrently (one asyncio task each, one fresh browser context per fetch:
no cookie or cache survives between sources). When Chromium dies, the fetches in flight
fail with `crash` and the next fetch launches a new one. EOF on the pipe or
`{"op": "close"}` closes the browser and ends the process.
"""

from __future__ import annotations

import asyncio
import re
import time
from urllib.parse import urlsplit

CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
_NET_CODE = re.compile(r"net::(ERR_[A-Z_]+)")
_CLOSED = ("has been closed", "Target closed", "Browser closed", "browser has disconnected",
           "Target crashed", "Page crashed", "Connection closed")


def _host(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


class _Failed(Exception):
    def __init__(self, kind: str, code: str = "", status: int | None = None):
        super().__init__(kind)
        self.kind, self.code, self.status = kind, code, status


class Worker:
    def __init__(self, conn, executable: str, launch_timeout: float):
        self.conn = conn
        self.executable = executable
        self.launch_timeout = launch_timeout
        self.pw = None
        self.browser = None
        self._launch_lock = asyncio.Lock()

    async def _browser(self):
        async with self._launch_lock:
            if self.browser is None or not self.browser.is_connected():
                old, self.browser = self.browser, None
                if old is not None:
                    try:
                        await old.close()
                    except Exception:
                        pass
                try:
                    self.browser = await self.pw.chromium.launch(
                        executable_path=self.executable, args=CHROMIUM_ARGS, headless=True,
                        timeout=self.launch_timeout * 1000.0)
                except Exception as exc:
                    raise _Failed("launch", type(exc).__name__) from None
            return self.browser

    async def fetch(self, req: dict) -> dict:
        started = time.monotonic()
        url = req["url"]
        timeout_ms = max(1.0, float(req["timeout"]) * 1000.0)
        browser = await self._browser()
        context = None
        try:
            context = await browser.new_context(user_agent=req["user_agent"], service_workers="block")
            cookies = req.get("cookies") or {}
            if cookies:
                await context.add_cookies([{"name": k, "value": v, "url": url} for k, v in cookies.items()])
            page = await context.new_page()
            await page.route("**/*", self._router(_host(url), req.get("headers") or {}, set(req.get("block") or ())))
            try:
                resp = await page.goto(url, wait_until="load", timeout=timeout_ms)
            except Exception as exc:
                raise self._classify(exc, "timeout_load") from None
            if resp is None:
                raise _Failed("other", "NO_RESPONSE")
            status = resp.status
            headers = {k.lower(): v for k, v in (await resp.all_headers()).items()}
            declared = headers.get("content-length", "")
            if declared.isdigit() and int(declared) > req["max_bytes"]:
                raise _Failed("too_big", "", status)
            if req.get("wait_for") and status < 400:
                left = timeout_ms - (time.monotonic() - started) * 1000.0
                try:
                    await page.wait_for_selector(req["wait_for"], state="attached", timeout=max(1.0, left))
                except Exception as exc:
                    raise self._classify(exc, "timeout_wait") from None
            html = await page.content()
            if len(html.encode("utf-8", "replace")) > req["max_bytes"]:
                raise _Failed("too_big", "", status)
            return {"ok": True, "status": status, "final_url": page.url, "headers": headers, "html": html,
                    "permanent_redirect": await self._permanent_redirect(resp)}
        except _Failed:
            raise
        except Exception as exc:
            raise self._classify(exc, "other") from None
        finally:
            if context is not None:
                try:
                    await context.close()
                except Exception:
                    pass

    @staticmethod
    def _router(page_host: str, headers: dict, block: set):
        async def route(r):
            try:
                request = r.request
                if request.resource_type in block:
                    await r.abort("blockedbyclient")
                elif headers and _host(request.url) == page_host:
                    # The blueprint's headers go to the page's own host only, never to a third party.
                    await r.continue_(headers={**request.headers, **headers})
                else:
                    await r.continue_()
            except Exception:
                pass   # the page or the browser went away meanwhile
        return route

    @staticmethod
    async def _permanent_redirect(resp) -> str | None:
        first = resp.request
        while first.redirected_from is not None:
            first = first.redirected_from
        if first is resp.request:
            return None
        try:
            first_resp = await first.response()
        except Exception:
            return None
        if first_resp is not None and first_resp.status in (301, 308) and first.redirected_to is not None:
            return first.redirected_to.url
        return None

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


def main(conn, executable: str, launch_timeout: float) -> None:
    """The worker process's entry point."""
    asyncio.run(Worker(conn, executable, launch_timeout).serve())


if __name__ == "__main__":
    import sys
    from multiprocessing.connection import Connection

    main(Connection(int(sys.argv[1])), sys.argv[2], float(sys.argv[3]))
