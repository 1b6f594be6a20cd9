"""Figures for browser sources beside HTTP sources.

    python bench/browser.py [--pages 40] [--rows 50]

A local site serves the same 50-row listing twice: as plain HTML (an HTTP source) and
as an empty shell whose script fetches /rows.json and builds the table after load (a
browser source, `fetch = "browser"`, `wait_for` the table). For each, at 1 and at
`max_pages` (2) concurrent fetches, it prints pages/s for fetch + extract, and CPU per
page: this process plus, for the browser, the worker process and everything under it
(Playwright's driver, Chromium, its renderers). It also prints the browser's cold start
(the first fetch, which launches Chromium). The browser lines are measured twice: with a
local Chromium, and through a real `playwright run-server` on loopback (`[browser]
endpoint`; started here, as nobody when run as root; its CPU is counted too).
No assertions: the numbers depend on the machine (the local site shares its CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
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


def start_run_server() -> tuple[subprocess.Popen, str]:
    """`playwright run-server` on 127.0.0.1, port chosen by the OS: (process, ws:// endpoint)."""
    from playwright._impl._driver import compute_driver_executable

    from healerd.adapters.sandbox import unprivileged_ids

    def demote():
        if os.geteuid() == 0:
            uid, gid = unprivileged_ids()
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
    node, cli = compute_driver_executable()
    home = f"/tmp/healerd-bench-pw-{os.getpid()}"
    os.makedirs(home, mode=0o700, exist_ok=True)
    if os.geteuid() == 0:
        os.chown(home, *unprivileged_ids())
    proc = subprocess.Popen([node, cli, "run-server", "--port", "0", "--host", "127.0.0.1", "--unsafe"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=demote,
                            env={**os.environ, "HOME": home, "TMPDIR": home}, start_new_session=True)
    m = re.search(r"(ws://\S+)", proc.stdout.readline())
    if not m:
        proc.kill()
        raise SystemExit("playwright run-server did not start")
    return proc, m.group(1)


def stop_tree(proc: subprocess.Popen) -> None:
    try:
        procs = psutil.Process(proc.pid).children(recursive=True) + [psutil.Process(proc.pid)]
    except psutil.Error:
        procs = []
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    proc.wait(10)
    subprocess.run(["rm", "-rf", f"/tmp/healerd-bench-pw-{os.getpid()}"], check=False)


def run(fetch_one, n: int, threads: int, worker_pid=None, server_pid=None) -> tuple[float, float]:
    """(pages/s, CPU ms per page) for n fetches spread over `threads` threads."""
    me = psutil.Process(os.getpid())
    cpu0 = sum(me.cpu_times()[:2]) + tree_cpu(worker_pid) + tree_cpu(server_pid)
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
    cpu = sum(me.cpu_times()[:2]) + tree_cpu(worker_pid) + tree_cpu(server_pid) - cpu0
    return n / wall, cpu / n * 1000.0


def main() -> None:
    from healerd.adapters.browser import find_executable

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=40, help="fetches per measurement")
    ap.add_argument("--rows", type=int, default=50)
    ap.add_argument("--no-remote", action="store_true", help="skip the lines through playwright run-server")
    args = ap.parse_args()
    data = rows(args.rows)
    srv, base = serve({"/static": ("text/html; charset=utf-8", static_page(data)),
                       "/js": ("text/html; charset=utf-8", JS_PAGE),
                       "/rows.json": ("application/json", json.dumps(data).encode())})
    bp_http = from_dict(BP, url=base + "/static")
    bp_browser = from_dict(dict(BP, fetch="browser", wait_for="table.stats"), url=base + "/js")
    section = BrowserSection()
    server, endpoint = (None, "") if args.no_remote else start_run_server()
    pools = {"browser": BrowserPool(section, FetchConfig(timeout=20.0))}
    if endpoint:
        pools["remote"] = BrowserPool(BrowserSection(endpoint=endpoint, executable=find_executable("") or ""),
                                      FetchConfig(timeout=20.0))
    fetchers = {name: Fetcher(FetchConfig(timeout=20.0), browser=pool) for name, pool in pools.items()}
    fetchers["http"] = Fetcher(FetchConfig(timeout=20.0))

    def one(name, bp):
        def go():
            res = fetchers[name].fetch(bp.url, via=bp.fetch, wait_for=bp.wait_for)
            got = extract(res.text, bp).data
            assert len(got) == args.rows, (name, len(got))
        return go

    try:
        for name in pools:
            t0 = time.perf_counter()
            one(name, bp_browser)()
            print(f"{name} cold start (launch Chromium + first page): {time.perf_counter() - t0:.2f} s")
        one("http", bp_http)()
        print(f"{'source':<8} {'concurrency':>11} {'pages/s':>9} {'CPU ms/page':>12}")
        for threads in (1, section.max_pages):
            for name in ["http", *pools]:
                bp = bp_http if name == "http" else bp_browser
                pid = pools[name].worker_pid() if name in pools else None
                extra = server.pid if name == "remote" and server is not None else None
                rate, cpu = run(one(name, bp), args.pages, threads, pid, extra)
                print(f"{name:<8} {threads:>11} {rate:>9.1f} {cpu:>12.1f}")
        print(f"({args.pages} fetches + extractions of a {args.rows}-row listing per line; CPU counts this process "
              f"and, for the browser, its worker, driver, Chromium and renderers (remote: also the Playwright "
              f"server and its Chromium); the local site's CPU is included for all)")
    finally:
        for f in fetchers.values():
            f.close()
        for pool in pools.values():
            pool.close()
        if server is not None:
            stop_tree(server)
        srv.shutdown()


if __name__ == "__main__":
    main()
