"""Figures for browser sources beside HTTP sources.

    python bench/browser.py [--pages 40] [--rows 50]

A local site serves the same 50-row listing twice: as plain HTML (an HTTP source) and
as an empty shell whose script fetches /rows.json and builds the table after load (a
browser source, `fetch = "browser"`, `wait_for` the table). For each, at 1 and at
`max_pages` (2) concurrent fetches, it prints pages/s for fetch + extract, and CPU per
page: this process plus, for the browser, the worker process and everything under it
(Playwright's driver, Chromium, its renderers). It also prints the browser's cold start
(the first fetch, which launches Chromium).
No assertions: the numbers depend on the machine (the local site shares its CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psutil

from healerd.adapters.browser import BrowserPool
from healerd.adapters.fetch import FetchConfig, Fetcher
from healerd.config import BrowserSection
from healerd.core.blueprint import from_dict
from healerd.core.extract import extract

BP = {"items": "table.stats tr.player",
      "fields": {"name": {"css": "td.name"}, "score": {"css": "td.score", "type": "int"}}}


def rows(n: int) -> list[list]:
    return [[f"Player {i}", i * 7 % 101] for i in range(n)]


def static_page(data) -> bytes:
    body = "".join(f'<tr class="player"><td class="name">{n}</td><td class="score">{s}</td></tr>' for n, s in data)
    return (f"<html><head><title>League</title></head><body><table class='stats'><tr><th>Name</th><th>Score</th>"
            f"</tr>{body}</table></body></html>").encode()


JS_PAGE = b"""<html><head><title>League</title></head><body><div id="app"></div><script>
fetch('/rows.json').then(function (r) { return r.json(); }).then(function (rows) {
  var t = document.createElement('table'); t.className = 'stats';
  var html = '<tr><th>Name</th><th>Score</th></tr>';
  rows.forEach(function (r) { html += '<tr class="player"><td class="name"></td><td class="score"></td></tr>'; });
  t.innerHTML = html;
  for (var i = 0; i < rows.length; i++) {
    t.rows[i + 1].cells[0].textContent = rows[i][0]; t.rows[i + 1].cells[1].textContent = rows[i][1];
  }
  document.getElementById('app').appendChild(t);
});
</script></body></html>"""


def serve(pages: dict[str, tuple[str, bytes]]) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            ctype, body = pages.get(self.path, ("text/html", b"not found"))
            self.send_response(200 if self.path in pages else 404)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}"


def tree_cpu(pid: int | None) -> float:
    """CPU seconds of `pid` and everything under it, including children it has reaped."""
    if pid is None:
        return 0.0
    total = 0.0
    try:
        root = psutil.Process(pid)
        procs = [root] + root.children(recursive=True)
    except psutil.Error:
        return 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return total


def run(fetch_one, n: int, threads: int, worker_pid=None) -> tuple[float, float]:
    """(pages/s, CPU ms per page) for n fetches spread over `threads` threads."""
    me = psutil.Process(os.getpid())
    cpu0 = sum(me.cpu_times()[:2]) + tree_cpu(worker_pid)
    left = [n]
    lock = threading.Lock()

    def loop():
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            fetch_one()

    started = time.perf_counter()
    ts = [threading.Thread(target=loop) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - started
    cpu = sum(me.cpu_times()[:2]) + tree_cpu(worker_pid) - cpu0
    return n / wall, cpu / n * 1000.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=40, help="fetches per measurement")
    ap.add_argument("--rows", type=int, default=50)
    args = ap.parse_args()
    data = rows(args.rows)
    srv, base = serve({"/static": ("text/html; charset=utf-8", static_page(data)),
                       "/js": ("text/html; charset=utf-8", JS_PAGE),
                       "/rows.json": ("application/json", json.dumps(data).encode())})
    bp_http = from_dict(BP, url=base + "/static")
    bp_browser = from_dict(dict(BP, fetch="browser", wait_for="table.stats"), url=base + "/js")
    section = BrowserSection()
    pool = BrowserPool(section, FetchConfig(timeout=20.0))
    fetcher = Fetcher(FetchConfig(timeout=20.0), browser=pool)

    def one(bp):
        def go():
            res = fetcher.fetch(bp.url, via=bp.fetch, wait_for=bp.wait_for)
            got = extract(res.text, bp).data
            assert len(got) == args.rows, (bp.fetch, len(got))
        return go

    try:
        t0 = time.perf_counter()
        one(bp_browser)()
        cold = time.perf_counter() - t0
        one(bp_http)()
        print(f"browser cold start (launch Chromium + first page): {cold:.2f} s")
        print(f"{'source':<8} {'concurrency':>11} {'pages/s':>9} {'CPU ms/page':>12}")
        for threads in (1, section.max_pages):
            for name, bp in (("http", bp_http), ("browser", bp_browser)):
                pid = pool.worker_pid() if bp.fetch == "browser" else None
                rate, cpu = run(one(bp), args.pages, threads, pid)
                print(f"{name:<8} {threads:>11} {rate:>9.1f} {cpu:>12.1f}")
        print(f"({args.pages} fetches + extractions of a {args.rows}-row listing per line; CPU counts this process "
              f"and, for the browser, its worker, driver, Chromium and renderers; the local site's CPU is included "
              f"for both)")
    finally:
        fetcher.close()
        pool.close()
        srv.shutdown()


if __name__ == "__main__":
    main()
