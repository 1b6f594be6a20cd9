"""The browser worker's network policy: one fetch's rules, applied to every request its page makes.

- the source's headers and cookies go only to the source's origin (scheme, host and port): the
  cookies as a `Cookie` header on those requests, never in a jar the page's script can read;
- every request (navigation, fetch/XHR, subresource, WebSocket) is checked against
  `healerd.core.netpolicy` with its host resolved by the worker: internal addresses other than
  the source's own origin are refused unless `allow_private`;
- the main document is fetched here one hop at a time, so that the worker follows its
  redirects itself (each hop checked, credentials to the source's origin only); a navigation
  the page makes away from the source's origin fails the fetch (`left`);
- requests from any other page (a popup's, a service worker's) are refused.
A fetch that fails says so as `_Failed(kind, code)`, with Chromium's `net::ERR_…` name when
there is one and never the browser's message text (it may hold a URL with credentials).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from urllib.parse import urljoin

from healerd.core import netpolicy

REDIRECTS = (301, 302, 303, 307, 308)
_NET_CODE = re.compile(r"net::(ERR_[A-Z_]+)")
_CLOSED = ("has been closed", "Target closed", "Browser closed", "browser has disconnected",
           "Target crashed", "Page crashed", "Connection closed")


class _Failed(Exception):
    def __init__(self, kind: str, code: str = "", status: int | None = None):
        super().__init__(kind)
        self.kind, self.code, self.status = kind, code, status


class _Guard:
    """One fetch's rules, applied to every request its page makes."""

    def __init__(self, req: dict, resolve):
        self.source = req["url"]
        self.headers = dict(req.get("headers") or {})
        cookies = req.get("cookies") or {}
        self.cookie = "; ".join(f"{k}={v}" for k, v in cookies.items())
        self.block = set(req.get("block") or ())
        self.allow_private = bool(req.get("allow_private"))
        self.resolve = resolve
        self.page = None
        self.deadline = time.monotonic() + max(0.001, float(req["timeout"]))
        self.phase = "load"                      # load, wait (for wait_for), content
        self.navigating: str | None = None       # the URL the fetch itself is loading
        self.hop: tuple[int, str] | None = None  # a redirect of that load, to follow here
        self.committed = False                   # the page's document was handed to the renderer
        self.failure: _Failed | None = None      # what ends the fetch early
        self.ended = asyncio.Event()

    def ms_left(self) -> float:
        return max(1.0, (self.deadline - time.monotonic()) * 1000.0)

    def fail(self, failure: _Failed) -> None:
        if self.failure is None:
            self.failure = failure
            self.ended.set()

    async def refusal(self, url: str) -> str | None:
        if netpolicy.same_origin(self.source, url):
            return None
        hp = netpolicy.host_port(url)
        addresses = await self.resolve(*hp) if hp is not None else []
        return netpolicy.refusal(url, self.source, addresses, self.allow_private)

    def credentials(self, url: str, headers: dict) -> dict:
        """The request's headers plus the source's headers and cookies when it goes to the source's origin."""
        if not netpolicy.same_origin(self.source, url) or not (self.headers or self.cookie):
            return headers
        out = {k: v for k, v in headers.items()}
        out.update(self.headers)
        if self.cookie:
            jar = headers.get("cookie")
            out["cookie"] = f"{jar}; {self.cookie}" if jar else self.cookie
        return out

    async def route(self, route) -> None:
        try:
            await self._route(route)
        except Exception:
            with contextlib.suppress(Exception):
                await route.abort("blockedbyclient")

    async def _route(self, route) -> None:
        request = route.request
        url = request.url
        try:
            page = request.frame.page
        except Exception:
            page = None
        if page is None or page is not self.page:   # a popup's, a worker's: never
            return await route.abort("blockedbyclient")
        if request.resource_type in self.block:
            return await route.abort("blockedbyclient")
        main = request.is_navigation_request() and request.frame.parent_frame is None
        if main and self.navigating is None and not netpolicy.same_origin(self.source, url):
            hp = netpolicy.host_port(url)
            self.fail(_Failed("left", f"{hp[0]}:{hp[1]}" if hp else "another scheme"))
            return await route.abort("blockedbyclient")
        why = await self.refusal(url)
        if why:
            if main:
                self.fail(_Failed("refused", why))
            return await route.abort("addressunreachable")
        headers = self.credentials(url, request.headers)
        if not main:
            if not self.cookie or not netpolicy.same_origin(self.source, url):
                return await route.continue_(headers=headers)
            # Chromium takes a request's Cookie header from its jar only, and a cookie in the jar
            # would be the page script's to read (and, not being port-scoped, sent to other ports
            # of the host): the source's own requests that carry its cookies are made here.
            resp = await route.fetch(headers=headers, max_redirects=0, max_retries=0, timeout=self.ms_left())
            location = resp.headers.get("location")
            if resp.status in REDIRECTS and location and await self.refusal(urljoin(url, location.strip())):
                return await route.abort("addressunreachable")
            return await route.fulfill(response=resp)
        # The main document: fetched here one hop at a time, so every redirect is checked.
        self.navigating = None
        try:
            resp = await route.fetch(headers=headers, max_redirects=0, max_retries=0, timeout=self.ms_left())
        except Exception as exc:
            text = str(exc)
            if any(s in text for s in _CLOSED):
                self.fail(_Failed("crash"))
            elif type(exc).__name__ != "TimeoutError":
                self.fail(_Failed("net", _node_code(text)))
            return await route.abort("failed")
        location = resp.headers.get("location")
        if resp.status in REDIRECTS and location:
            self.hop = (resp.status, urljoin(url, location.strip()))
            await resp.dispose()
            return await route.abort("aborted")
        await route.fulfill(response=resp)
        self.committed = True

    async def redirected(self, request) -> None:
        """A subresource's redirect hop is followed by Chromium, not routed: one to a refused
        address fails the fetch, so nothing read from there can become records."""
        try:
            why = await self.refusal(request.url)
        except Exception:
            return
        if why:
            self.fail(_Failed("refused", why))

    async def websocket(self, ws) -> None:
        try:
            why = await self.refusal(ws.url)
            if why:
                await ws.close(code=1008, reason="refused")
            else:
                ws.connect_to_server()
        except Exception:
            pass


# What Node's HTTP client (the main document is fetched by Playwright's driver) says, as
# Chromium would have said it.
_NODE_CODES = (("ECONNREFUSED", "ERR_CONNECTION_REFUSED"), ("ECONNRESET", "ERR_CONNECTION_RESET"),
               ("ENOTFOUND", "ERR_NAME_NOT_RESOLVED"), ("EAI_AGAIN", "ERR_NAME_RESOLUTION_FAILED"),
               ("ETIMEDOUT", "ERR_CONNECTION_TIMED_OUT"), ("EHOSTUNREACH", "ERR_ADDRESS_UNREACHABLE"),
               ("ENETUNREACH", "ERR_ADDRESS_UNREACHABLE"), ("socket hang up", "ERR_EMPTY_RESPONSE"),
               ("CERT_", "ERR_CERT_INVALID"), ("certificate", "ERR_CERT_INVALID"), ("SSL", "ERR_SSL_PROTOCOL_ERROR"),
               ("TLS", "ERR_SSL_PROTOCOL_ERROR"))


def _node_code(text: str) -> str:
    m = _NET_CODE.search(text)
    if m:
        return m.group(1)
    for needle, code in _NODE_CODES:
        if needle in text:
            return code
    return "ERR_FAILED"
