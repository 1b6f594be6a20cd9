"""The browser worker: a separate process that owns Playwright and one Chromium.

Started by `healerd.adapters.browser.BrowserPool` as `python -m healerd.adapters.browser_worker FD
EXECUTABLE LAUNCH_TIMEOUT MAX_PAGES`, FD being its end of a socketpair (multiprocessing's
Connection framing). It reads requests `{"op": "fetch", "id", "url", "headers", "cookies", "wait_for",
"timeout", "max_bytes", "user_agent", "block"}` and answers each with
`{"id", "ok": True, "status", "final_url", "headers", "html", "permanent_redirect"}` or
`{"id", "ok": False, "kind", "code", "status"}`, where `kind` names what went wrong
(`timeout_load`, `timeout_wait`, `net`, `crash`, `too_big`, `launch`, `other`) and `code`
is Chromium's `net::ERR_…` name when there is one. No message text from the browser is
sent back (it may hold a URL with credentials); `healerd.adapters.browser.error_for` turns the
answer into an error class and a masked one-line message.

Pages render concurrently (one asyncio task each), each in a browser context of its
own. A context is reused (a new one costs a renderer start: about 3x the CPU of the
page itself), but between two fetches it is cleaned: blank page, no cookie, no storage
of the origins visited; the HTTP cache is off (request routing disables it); after
SLOT_USES fetches it is replaced. When Chromium dies, the fetches in flight
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
SLOT_USES = 100   # fetches one browser context serves (cleaned in between) before a fresh one
_NET_CODE = re.compile(r"net::(ERR_[A-Z_]+)")
_CLOSED = ("has been closed", "Target closed", "Browser closed", "browser has disconnected",
           "Target crashed", "Page crashed", "Connection closed")


def _origin(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}" if parts.scheme in ("http", "https") else ""


def _host(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


class _Failed(Exception):
    def __init__(self, kind: str, code: str = "", status: int | None = None):
        super().__init__(kind)
        self.kind, self.code, self.status = kind, code, status


class _Slot:
    """A browser context with one page, serving one fetch at a time (cleaned between fetches)."""

    def __init__(self, browser, user_agent: str, context, page, cdp):
        self.browser, self.user_agent, self.context, self.page, self.cdp = browser, user_agent, context, page, cdp
        self.host, self.headers, self.block = "", {}, set()
        self.origins: set[str] = set()
        self.uses = 0


class Worker:
    def __init__(self, conn, executable: str, launch_timeout: float, max_pages: int = 2):
        self.conn = conn
        self.max_pages = max_pages
        self._ready: list[_Slot] = []        # cleaned contexts waiting for the next fetches
        self._background: set[asyncio.Task] = set()
        self._releasing = 0                  # slots being cleaned right now
        self._slot_changed = asyncio.Condition()
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
        slot = None
        try:
            slot = await self._take(browser, req["user_agent"])
            slot.host, slot.headers, slot.block = _host(url), req.get("headers") or {}, set(req.get("block") or ())
            cookies = req.get("cookies") or {}
            if cookies:
                await slot.context.add_cookies([{"name": k, "value": v, "url": url} for k, v in cookies.items()])
            page = slot.page
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
            if slot is not None:
                # Cleaned up for the next fetch once this answer is on its way.
                slot.origins.update({_origin(url), _origin(slot.page.url)})
                asyncio.get_running_loop().call_soon(self._spawn, self._release(slot))

    def _spawn(self, coro) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _new_slot(self, browser, user_agent: str) -> _Slot:
        context = await browser.new_context(user_agent=user_agent, service_workers="block")
        try:
            page = await context.new_page()
            slot = _Slot(browser, user_agent, context, page, await context.new_cdp_session(page))
            await page.route("**/*", self._router(slot))   # routing also turns the HTTP cache off
        except BaseException:
            await context.close()
            raise
        return slot

    async def _take(self, browser, user_agent: str) -> _Slot:
        async with self._slot_changed:
            # A slot being cleaned is ready in milliseconds; a new one costs a renderer start.
            await self._slot_changed.wait_for(lambda: self._ready or not self._releasing)
        while self._ready:
            slot = self._ready.pop()
            if slot.browser is browser and browser.is_connected() and slot.user_agent == user_agent \
                    and not slot.page.is_closed():
                return slot
            self._spawn(self._close(slot))
        return await self._new_slot(browser, user_agent)

    async def _release(self, slot: _Slot) -> None:
        """Make the slot ready for the next fetch with nothing of this one left: the page is
        blank, every cookie is gone, and so is all storage of the origins it visited (local
        storage, IndexedDB, cache storage, service workers). A slot used SLOT_USES times, or
        one that cannot be cleaned, is closed instead."""
        slot.uses += 1
        self._releasing += 1
        try:
            await slot.page.goto("about:blank")
            await slot.context.clear_cookies()
            for origin in slot.origins - {""}:
                await slot.cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
            slot.origins.clear()
            slot.host, slot.headers = "", {}
            if slot.uses < SLOT_USES and slot.browser is self.browser and self.browser.is_connected() \
                    and len(self._ready) < self.max_pages:
                self._ready.append(slot)
                slot = None
        except Exception:
            pass
        finally:
            self._releasing -= 1
            async with self._slot_changed:
                self._slot_changed.notify_all()
        if slot is not None:
            await self._close(slot)

    @staticmethod
    async def _close(slot: _Slot) -> None:
        try:
            await slot.context.close()
        except Exception:
            pass

    @staticmethod
    def _router(slot: _Slot):
        async def route(r):
            try:
                request = r.request
                if request.resource_type in slot.block:
                    await r.abort("blockedbyclient")
                elif slot.headers and _host(request.url) == slot.host:
                    # The blueprint's headers go to the page's own host only, never to a third party.
                    await r.continue_(headers={**request.headers, **slot.headers})
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


def main(conn, executable: str, launch_timeout: float, max_pages: int) -> None:
    """The worker process's entry point."""
    asyncio.run(Worker(conn, executable, launch_timeout, max_pages).serve())


if __name__ == "__main__":
    import sys
    from multiprocessing.connection import Connection

    main(Connection(int(sys.argv[1])), sys.argv[2], float(sys.argv[3]), int(sys.argv[4]))
