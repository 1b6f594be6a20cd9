"""Where a browser fetch's CPU goes: one thing toggled at a time.

    python bench/browser_costs.py [--pages 15] [--only NAME,...]

Drives Playwright directly (no daemon, no worker pipe) against the same script-built
listing as bench/browser.py, and for each variant prints pages/s and CPU ms per page split
by process: this Python process (Playwright's client), Node (Playwright's driver),
Chromium's browser process, its renderers (live ones plus those already reaped by the
zygote), and the rest (GPU/utility/network service). Variants, from the cheapest:
- `ctx-only`: a context made and closed, no page (not a fetch: the context's own cost);
- `ctx+blank`: a context and a page at about:blank (not a fetch: adds the renderer's start);
- `page`: one page reused for every fetch (no isolation at all);
- `ctx-reuse`: one context, a new page per fetch;
- `fresh`: a new context + page per fetch, nothing routed;
- `fresh+route`: as `fresh`, every request routed to Python and continued;
- `fresh+ws`: as `fresh`, with WebSockets routed (Playwright adds a script to every page);
- `fresh+ua`: as `fresh`, with the context's own user agent;
- `fresh+fulfill`: as `fresh+route`, the main document fetched by the driver and fulfilled
  (what the worker does, to check every redirect hop);
- `worker`: the browser worker's own fetch (`Worker.fetch`: every rule on, the next fetch's
  context made ahead while this one renders);
- `worker-nospare`: the same with every context made on demand (SPARE_CONTEXT off);
No assertions: figures only (the machine's load is printed with them).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time

import psutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser import JS_PAGE, rows, serve  # noqa: E402

from healerd.adapters import browser_worker  # noqa: E402
from healerd.adapters.browser import find_executable  # noqa: E402
from healerd.adapters.browser_worker import CHROMIUM_ARGS, Worker  # noqa: E402


def split_cpu() -> dict[str, float]:
    """CPU seconds by kind of process, for this process and everything under it."""
    me = psutil.Process(os.getpid())
    out = {"python": sum(me.cpu_times()[:2]), "node": 0.0, "browser": 0.0, "renderer": 0.0, "other": 0.0}
    for p in me.children(recursive=True):
        try:
            t = p.cpu_times()
            name, cmd = p.name(), " ".join(p.cmdline())
        except psutil.Error:
            continue
        own, reaped = t.user + t.system, t.children_user + t.children_system
        if name == "node" or "run-driver" in cmd:
            out["node"] += own
        elif "--type=renderer" in cmd:
            out["renderer"] += own
        elif "--type=zygote" in cmd:
            out["renderer"] += own + reaped      # renderers are the zygote's children
        elif "--type=" in cmd:
            out["other"] += own + reaped
        else:
            out["browser"] += own
    return out


class _Pipe:
    def send(self, msg):
        pass


async def _watch_renderers(seen: set[int]) -> None:
    me = psutil.Process(os.getpid())
    while True:
        for p in me.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if p.pid not in seen and "--type=renderer" in " ".join(p.cmdline()):
                    seen.add(p.pid)
        await asyncio.sleep(0.02)


async def measure(name: str, fetch_one, n: int) -> None:
    await fetch_one()   # warm
    seen: set[int] = set()
    await _watch_renderers_once(seen)
    before = len(seen)
    watcher = asyncio.ensure_future(_watch_renderers(seen))
    c0, t0 = split_cpu(), time.perf_counter()
    for _ in range(n):
        await fetch_one()
    wall = time.perf_counter() - t0
    watcher.cancel()
    c1 = split_cpu()
    per = {k: (c1[k] - c0[k]) / n * 1000.0 for k in c0}
    parts = " ".join(f"{k}={v:6.1f}" for k, v in per.items())
    print(f"{name:<14} {n / wall:6.2f} pages/s  CPU ms/page {sum(per.values()):7.1f}  ({parts}) "
          f"renderers started/page {(len(seen) - before) / n:.1f}", flush=True)


async def _watch_renderers_once(seen: set[int]) -> None:
    task = asyncio.ensure_future(_watch_renderers(seen))
    await asyncio.sleep(0.05)
    task.cancel()


async def main() -> None:
    from playwright.async_api import async_playwright

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=15)
    ap.add_argument("--only", default="")
    ap.add_argument("--arg", action="append", default=[], help="one more Chromium flag (repeatable)")
    args = ap.parse_args()
    data = rows(50)
    srv, base = serve({"/js": ("text/html; charset=utf-8", JS_PAGE),
                       "/rows.json": ("application/json", json.dumps(data).encode())})
    url = base + "/js"
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=find_executable("") or None, args=CHROMIUM_ARGS + args.arg,
                                           headless=True, chromium_sandbox=False)
        shared = await browser.new_context()
        kept = await shared.new_page()

        async def render(page):
            await page.goto(url, wait_until="load")
            await page.wait_for_selector("table.stats", state="attached")
            return await page.content()

        async def v_page():
            await render(kept)

        async def v_ctx_reuse():
            page = await shared.new_page()
            try:
                await render(page)
            finally:
                await page.close()

        def v_fresh(route: str = ""):
            async def go():
                ctx = await browser.new_context(service_workers="block", accept_downloads=False)
                try:
                    if route == "continue":
                        await ctx.route("**/*", lambda r: r.continue_())
                    elif route == "ws":
                        async def ws(w):
                            w.connect_to_server()
                        await ctx.route_web_socket("**/*", ws)
                    elif route == "ua":
                        await ctx.close()
                        ctx = await browser.new_context(service_workers="block", accept_downloads=False,
                                                        user_agent="bench")
                    elif route == "fulfill":
                        async def handler(r):
                            if r.request.is_navigation_request():
                                resp = await r.fetch(max_redirects=0)
                                await r.fulfill(response=resp)
                            else:
                                await r.continue_()
                        await ctx.route("**/*", handler)
                    await render(await ctx.new_page())
                finally:
                    await ctx.close()
            return go

        async def v_ctx_only():
            ctx = await browser.new_context(service_workers="block", accept_downloads=False)
            await ctx.close()

        async def v_blank():
            ctx = await browser.new_context(service_workers="block", accept_downloads=False)
            try:
                await (await ctx.new_page()).goto("about:blank")
            finally:
                await ctx.close()

        worker = Worker(_Pipe(), find_executable("") or "", 30.0)
        worker.pw, worker.browser = pw, browser
        req = {"id": 1, "url": url, "headers": {}, "cookies": {}, "wait_for": "table.stats", "timeout": 20.0,
               "max_bytes": 1_000_000, "max_redirects": 10, "user_agent": "bench", "block": [],
               "allow_private": False}

        async def v_worker():
            out = await worker.fetch(dict(req))
            assert out["ok"] and "Player 49" in out["html"], out

        variants = {"ctx-only": v_ctx_only, "ctx+blank": v_blank, "page": v_page, "ctx-reuse": v_ctx_reuse, "fresh": v_fresh(), "fresh+route": v_fresh("continue"),
                    "fresh+ws": v_fresh("ws"), "fresh+ua": v_fresh("ua"),
                    "fresh+fulfill": v_fresh("fulfill"), "worker": v_worker}

        async def v_no_spare():
            browser_worker.SPARE_CONTEXT = False
            try:
                await worker._drop_spare()
                await v_worker()
            finally:
                browser_worker.SPARE_CONTEXT = True
        variants["worker-nospare"] = v_no_spare
        only = [s for s in args.only.split(",") if s]
        for name, fn in variants.items():
            if not only or name in only:
                await measure(name, fn, args.pages)
        await worker._drop_spare()
        await browser.close()
    srv.shutdown()
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
