"""The browser worker's per-fetch context: a fresh one for each fetch, closed with all its pages.

Each fetch gets a fresh browser context (its own cookie jar and storage, downloads refused,
service workers blocked) with one page; any other page it opens (window.open, target=_blank)
is closed the moment it appears and its requests are refused; the context is closed with all
its pages when the fetch ends, whatever happened. The next fetch's context (its page at
about:blank, every request refused until a fetch takes it) can be made while this one renders,
off the fetch's critical path, and serves that one fetch only.
"""

from __future__ import annotations

import asyncio
import contextlib

from healerd.adapters.browser_guard import _Guard

CLOSE_TIMEOUT_S = 5.0


class _Slot:
    """One fetch's fresh context with its one page, its routes and handlers already in place.

    Made by `open` either when the fetch starts or ahead of time, while the previous fetch
    renders (its page sits at about:blank, has made no request, and every request before
    `attach` is refused). `attach` hands it to one fetch's guard; `close` ends the context
    with every page it opened. A slot serves one fetch only."""

    def __init__(self, browser, user_agent: str, context):
        self.browser, self.user_agent, self.context = browser, user_agent, context
        self.guard: _Guard | None = None
        self.page = None

    @classmethod
    async def open(cls, browser, user_agent: str) -> _Slot:
        context = await browser.new_context(user_agent=user_agent, service_workers="block", accept_downloads=False)
        slot = cls(browser, user_agent, context)
        try:
            await context.route("**/*", slot._route)     # routing also turns the HTTP cache off
            await context.route_web_socket("**/*", slot._websocket)
            page = slot.page = await context.new_page()

            def close_stranger(other) -> None:
                if other is not page:
                    asyncio.ensure_future(_close_quietly(other))
            context.on("page", close_stranger)
            page.on("download", lambda d: asyncio.ensure_future(_cancel_quietly(d)))
            page.on("request", slot._request)
        except BaseException:
            await slot.close()
            raise
        return slot

    def attach(self, guard: _Guard):
        """This slot's page, from now on under `guard`'s rules."""
        self.guard = guard
        guard.page = self.page
        return self.page

    async def _route(self, route) -> None:
        if self.guard is None:
            with contextlib.suppress(Exception):
                await route.abort("blockedbyclient")
            return
        await self.guard.route(route)

    async def _websocket(self, ws) -> None:
        if self.guard is None:
            with contextlib.suppress(Exception):
                await ws.close(code=1008, reason="refused")
            return
        await self.guard.websocket(ws)

    def _request(self, request) -> None:
        if self.guard is not None and request.redirected_from:
            asyncio.ensure_future(self.guard.redirected(request))

    async def close(self) -> None:
        try:
            await asyncio.wait_for(self.context.close(), CLOSE_TIMEOUT_S)
        except Exception:
            pass


def _close_made(task: asyncio.Future) -> None:
    """A slot made too late for its fetch (or on a browser gone since) is closed as soon as it exists."""
    if not task.cancelled() and task.exception() is None:
        asyncio.ensure_future(task.result().close())


async def _close_quietly(page) -> None:
    with contextlib.suppress(Exception):
        await page.close()


async def _cancel_quietly(download) -> None:
    with contextlib.suppress(Exception):
        await download.cancel()
