"""Figures for the scrape path: fetch throughput and extract+validate cost.

    python bench/fetch_parse.py [--seconds 3] [--threads 4]

Prints:
- pages/s of Fetcher.fetch against a local server serving a ~100 KB page, with N
  threads each owning a Fetcher (as the Scraper pool does), and with N threads
  sharing one Fetcher;
- ms per extract+validate of a 50-row listing page (selectors), and per validate alone.
No assertions: the numbers depend on the machine (the local server shares its CPU).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from healerd.adapters.fetch import FetchConfig, Fetcher
from healerd.core.blueprint import from_dict
from healerd.core.extract import extract
from healerd.core.validate import validate


def big_page(target: int = 100_000) -> bytes:
    rows, i = [], 0
    while sum(len(r) for r in rows) < target:
        rows.append(f'<tr class="player"><td class="name"><a href="/p/{i}">Player {i}</a></td>'
                    f'<td class="score">{i * 7 % 101}</td><td class="team">Team {i % 17}</td></tr>\n')
        i += 1
    return (f"<html><head><title>Stats</title></head><body><table class='stats'>{''.join(rows)}</table>"
            f"</body></html>").encode()


def listing(n: int = 50) -> str:
    rows = "".join(f'<tr class="player"><td class="name"><a href="/p/{i}">Player {i}</a></td>'
                   f'<td class="score">{i * 7 % 101}</td><td class="team">Team {i % 17}</td></tr>' for i in range(n))
    nav = "".join(f'<a href="/section/{k}">Section {k}</a> ' for k in range(30))
    return (f"<html><head><title>League</title><script>var x = 1;</script></head><body><nav>{nav}</nav>"
            f"<main><h1>Standings</h1><table class='stats'><tr><th>Name</th><th>Score</th></tr>{rows}</table>"
            f"<p>{'Some text about the season. ' * 80}</p></main><footer>(c) League</footer></body></html>")


def serve(body: bytes) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}/page"


def fetch_rate(url: str, threads: int, seconds: float, shared: bool) -> tuple[float, int]:
    one = Fetcher(FetchConfig()) if shared else None
    counts = [0] * threads
    errors = [0] * threads
    stop = time.monotonic() + seconds

    def work(k: int) -> None:
        f = one or Fetcher(FetchConfig())
        try:
            while time.monotonic() < stop:
                try:
                    f.fetch(url)
                    counts[k] += 1
                except Exception:
                    errors[k] += 1
        finally:
            if one is None:
                f.close()

    started = time.monotonic()
    ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    took = time.monotonic() - started
    if one is not None:
        one.close()
    return sum(counts) / took, sum(errors)


def per_call_ms(fn, repeat: int) -> tuple[float, float]:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(times), statistics.mean(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=300)
    args = ap.parse_args()

    body = big_page()
    srv, url = serve(body)
    try:
        for shared in (False, True):
            rate, errs = fetch_rate(url, args.threads, args.seconds, shared)
            how = "sharing one Fetcher" if shared else "one Fetcher each"
            print(f"fetch: {rate:8.1f} pages/s  ({len(body) / 1000:.0f} KB page, {args.threads} threads, {how}, "
                  f"{errs} errors)")
    finally:
        srv.shutdown()
        srv.server_close()

    bp = from_dict({"items": "table.stats tr.player", "fields": {
        "name": {"css": "td.name"}, "score": {"css": "td.score", "type": "int"},
        "profile": {"css": "td.name a", "attr": "href"}, "team": {"css": "td.team", "required": False}}})
    html = listing(50)
    ex = extract(html, bp)
    last_good = ex.data
    assert validate(ex, bp, recent_counts=[50, 50], last_good=last_good, html=html).passed
    med, mean = per_call_ms(lambda: validate(extract(html, bp), bp, recent_counts=[50, 50], last_good=last_good,
                                             html=html), args.repeat)
    print(f"extract+validate: {med:.3f} ms median, {mean:.3f} ms mean  (50-row listing, {len(html) / 1000:.0f} KB)")
    med, mean = per_call_ms(lambda: validate(ex, bp, recent_counts=[50, 50], last_good=last_good, html=html),
                            args.repeat)
    print(f"validate alone:   {med:.3f} ms median, {mean:.3f} ms mean")


if __name__ == "__main__":
    main()
