"""End-to-end scrape benchmark: one full cycle of N sources through the real actors, then Scrapy
and the bare two-process loop on the same pages.

    python bench/scrape.py [--sources 1000] [--scrapers 8] [--workers N] [--cycles 2] [--no-scrapy] [--no-bare]
                           [--scrapy-concurrency 32] [--stages K] [--tick SECONDS]
    python bench/scrape.py --compare REV [--rounds 3] [...]   this tree and commit REV interleaved
                                                               (bench/scrape_compare.py)

1. A separate process (so it does not compete for this process's GIL) renders N
   deterministic listing pages of 50-150 KB each (50 product rows, a header, a mega
   navigation, facet filters, inline <style> and <script> blocks, a JSON state blob, a
   footer; distinct data per page) and serves them from memory over HTTP/1.1 (asyncio,
   Content-Length, keep-alive when the client wants it).
2. healerd, in this process: `healerd.daemon.Daemon` with a temporary state dir starts
   its real actors (Scheduler, the Scraper pool, Validator, StoreWriter, Alerter,
   Doctor, Deployer) and its extraction worker processes (`--workers`, default the
   daemon's own for this machine; 0 = in-process). N sources (one blueprint: 5 fields
   per row, 50 rows per page) are registered before the clock starts, all due at once.
   Timed: from the first Tick until the StoreWriter has persisted every source's outcome
   (records, last-good snapshot, health, next run). Then every source's stored records
   are checked against the rows the page was rendered from.
3. Scrapy (an optional bench dependency: `pip install '.[bench]'`), in a subprocess so
   its reactor is its own: a spider over the same N URLs extracting the same fields
   with its default parsel CSS selectors, one item per page, counted in memory; no
   robots, no autothrottle, no delay. Its rows are checked the same way.
4. The bare loop, the machine's practical limit: 2 processes x 4 threads, each thread
   with its own sync httpx client, fetching the same pages and extracting the same
   fields with lexbor, nothing else (no validation, no persistence). Checked the same way.

Prints a table, then one JSON line with the figures. healerd's CPU seconds are its
process's (user + system, all actor threads, also split by actor) plus its worker
processes'; "CPU in the daemon's own process" is shown apart. Peak RSS is the daemon's
ru_maxrss plus each worker's VmHWM; since that counts the shared libraries once per
process, a separate sampler process also reads the three processes' PSS (shared pages
divided among the processes that map them) every 100 ms and reports the peak of their
sum: the memory they take together. The page server runs in another process and is
excluded (its CPU is shown apart). `--stages K` also times each step of one scrape
(the worker's fetch, the worker's hash + bounds + parse + extract + compress, validate,
persist in groups) one after another on one thread over K pages, with the actors' own
functions: where a source's CPU goes. No assertions: the figures depend on the machine (and on what else
runs on it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time

ROWS_PER_PAGE = 50
MIN_PAGE, MAX_PAGE = 50_000, 148_000
FIELDS = ("title", "url", "price", "reviews", "seller")
NUMBER = re.compile(r"-?\d[\d,]*(\.\d+)?")   # the documented first-number rule (docs/REFERENCE.md)

BLUEPRINT = {
    "every": "1h",
    "items": "ul.results li.result",
    "fields": {
        "title": {"css": "h2.title a"},
        "url": {"css": "h2.title a", "attr": "href"},
        "price": {"css": "span.price", "type": "float"},
        "reviews": {"css": "span.reviews", "type": "int"},
        "seller": {"css": "span.seller-name", "required": False},
    },
}

# -- the pages -------------------------------------------------------------------------------

_WORDS = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et "
          "dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris nisi aliquip ex ea "
          "commodo consequat duis aute irure in reprehenderit voluptate velit esse cillum fugiat nulla pariatur "
          "excepteur sint occaecat cupidatat non proident sunt culpa qui officia deserunt mollit anim id est "
          "laborum durable compact wireless premium classic organic stainless portable ergonomic").split()
_NOUNS = ("Kettle Lamp Backpack Headphones Blender Chair Desk Monitor Keyboard Mouse Jacket Boots Tent Drill "
          "Camera Speaker Watch Bottle Pan Knife Router Charger Cable Sofa Rug Mirror Shelf Heater Fan Vacuum").split()
_ADJS = ("Compact Deluxe Classic Pro Ultra Smart Eco Heavy-Duty Slim Vintage Modern Rugged Foldable Cordless "
         "Premium Basic Wireless Ergonomic Portable Quiet").split()
_BRANDS = ("Acme Globex Initech Umbrella Hooli Vandelay Stark Wayne Wonka Tyrell Cyberdyne Soylent Aperture "
           "Massive Dynamic Gringotts Oscorp Monarch Nakatomi Virtucon").split()
_CATEGORIES = ("Home Kitchen Outdoor Electronics Office Garden Sports Toys Tools Fashion Books Music Health "
               "Beauty Auto Pets Baby Grocery Travel Gaming").split()


def _corpus(size: int = 400_000, seed: int = 1) -> str:
    rng = random.Random(seed)
    words, n = [], 0
    while n < size:
        w = rng.choice(_WORDS)
        words.append(w)
        n += len(w) + 1
    return " ".join(words)


_TEXT = _corpus()


def _text(rng: random.Random, length: int) -> str:
    """`length` characters of filler prose, starting at a word."""
    start = _TEXT.find(" ", rng.randrange(0, len(_TEXT) - length - 64)) + 1
    return _TEXT[start:start + length].rsplit(" ", 1)[0]


def _style(rng: random.Random, rules: int) -> str:
    out = []
    for k in range(rules):
        sel = rng.choice(("header", "nav", "main", "aside", "footer", ".result", ".toolbar", ".facet", ".badge",
                          ".price", ".title", ".thumb", ".pagination", ".btn"))
        out.append(f"{sel} .c{k}-{rng.randrange(1000)}{{margin:{rng.randrange(24)}px {rng.randrange(24)}px;"
                   f"padding:{rng.randrange(16)}px;color:#{rng.randrange(0x1000000):06x};"
                   f"font-size:{rng.randrange(11, 22)}px;line-height:1.{rng.randrange(2, 8)};"
                   f"border:1px solid #{rng.randrange(0x1000000):06x}}}")
    return "\n".join(out)


def _script(rng: random.Random, size: int) -> str:
    parts, n = [], 0
    while n < size:
        k = rng.randrange(10_000)
        p = (f"function f{k}(a,b){{var x=a.querySelectorAll('.c{k}');for(var i=0;i<x.length;i++){{"
             f"x[i].addEventListener('click',function(e){{b.push({{id:{k},t:Date.now(),v:'{_text(rng, 24)}'}});}});}}"
             f"return x.length>{rng.randrange(50)}?'{_text(rng, 16)}':null;}}\n")
        parts.append(p)
        n += len(p)
    return "".join(parts)


def render_page(i: int) -> tuple[bytes, list[dict]]:
    """Page `i` (deterministic) and the typed rows a correct extraction gives."""
    rng = random.Random(1_000_003 * (i + 1))
    target = rng.randrange(MIN_PAGE, MAX_PAGE + 1)
    category = rng.choice(_CATEGORIES)
    rows, items = [], []
    desc_len = 16 + (target - MIN_PAGE) // 350          # longer descriptions on bigger pages
    for pos in range(ROWS_PER_PAGE):
        sku = f"{i:05d}-{pos:02d}-{rng.randrange(10 ** 6):06d}"
        title = f"{rng.choice(_BRANDS)} {rng.choice(_ADJS)} {rng.choice(_NOUNS)} {rng.randrange(100, 9999)}"
        href = f"/item/{sku}/{title.lower().replace(' ', '-')}"
        cents = rng.randrange(199, 250_000)
        price = cents / 100
        price_text = f"${cents // 100:,}.{cents % 100:02d}"
        reviews = rng.randrange(0, 25_000)
        seller = f"{rng.choice(_BRANDS)} {rng.choice(('Store', 'Outlet', 'Direct', 'Shop', 'Official'))}"
        stars = rng.randrange(10, 51) / 10
        was = f'<span class="was">${(cents * 13 // 10) // 100:,}.{(cents * 13 // 10) % 100:02d}</span>' \
            if rng.random() < 0.3 else ""
        badges = "".join(f'<li class="badge">{b}</li>' for b in rng.sample(
            ("Free shipping", "Best seller", "New", "Limited", "Eco", "Top rated", "Deal"), rng.randrange(0, 3)))
        items.append(
            f'<li class="result" data-id="{sku}" data-pos="{pos}">'
            f'<a class="thumb" href="{href}"><img src="/img/{sku}.jpg" alt="{title}" loading="lazy" width="160" '
            f'height="160"></a><div class="body"><h2 class="title"><a href="{href}">{title}</a></h2>'
            f'<div class="meta"><span class="price">{price_text}</span>{was}'
            f'<span class="rating" aria-label="{stars} out of 5"></span>'
            f'<span class="reviews">{reviews:,} reviews</span></div>'
            f'<p class="desc">{_text(rng, desc_len)}</p>'
            f'<div class="seller">Sold by <span class="seller-name">{seller}</span></div>'
            f'<ul class="badges">{badges}</ul>'
            f'<button class="add" type="button" data-sku="{sku}">Add to cart</button></div></li>\n')
        rows.append({"title": title, "url": href, "price": price, "reviews": reviews, "seller": seller})
    nav = "".join(
        f'<li class="menu"><a href="/c/{c.lower()}">{c}</a><ul>'
        + "".join(f'<li><a href="/c/{c.lower()}/{w}-{k}">{w.title()} {k}</a></li>'
                  for k, w in enumerate(rng.sample(_WORDS, 8)))
        + "</ul></li>" for c in rng.sample(_CATEGORIES, 6))
    facets = "".join(
        f'<fieldset class="facet"><legend>{name}</legend>'
        + "".join(f'<label><input type="checkbox" name="{name.lower()}" value="{v}"> {v} '
                  f'<span class="count">({rng.randrange(1, 900)})</span></label>' for v in rng.sample(values, 6))
        + "</fieldset>"
        for name, values in (("Brand", _BRANDS), ("Category", _CATEGORIES), ("Feature", _ADJS)))
    footer = "".join(f'<div class="col"><h4>{h}</h4>'
                     + "".join(f'<a href="/help/{w}">{w.title()}</a>' for w in rng.sample(_WORDS, 8)) + "</div>"
                     for h in ("Help", "Company", "Shop", "Legal"))
    head = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{category} - page {i} | Shop</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="stylesheet" href="/static/site.{i % 97}.css"><link rel="canonical" href="/c/{i}/page">'
            f'<style>\n{_style(rng, 12 + (target - MIN_PAGE) // 2500)}\n</style>'
            f'<script>window.dataLayer=window.dataLayer||[];function gtag(){{dataLayer.push(arguments);}}'
            f"gtag('js',new Date());gtag('config','G-{rng.randrange(10 ** 8)}');</script>"
            f'<script>\n{_script(rng, 600)}</script></head>')
    body = (f'<body class="listing cat-{category.lower()}"><header class="site"><a class="logo" href="/">Shop</a>'
            f'<form class="search" action="/search"><input name="q" placeholder="Search"><button>Go</button></form>'
            f'<a class="cart" href="/cart">Cart (0)</a></header><nav class="mega"><ul>{nav}</ul></nav>'
            f'<div class="layout"><aside class="filters">{facets}</aside><main><h1>{category}</h1>'
            f'<div class="toolbar"><span class="found">{rng.randrange(500, 20000):,} results</span>'
            f'<select name="sort"><option>Relevance</option><option>Price</option><option>Rating</option></select>'
            f'</div><ul class="results">\n{"".join(items)}</ul><nav class="pagination">'
            + "".join(f'<a href="/c/{i}/page?p={p}">{p}</a>' for p in range(1, 11))
            + f'</nav></main></div><footer class="site">{footer}<p class="legal">{_text(rng, 400)}</p></footer>')
    so_far = len(head) + len(body) + 200
    state = {"page": i, "category": category, "skus": [r["url"] for r in rows],
             "copy": _text(rng, max(200, target - so_far - 500))}
    tail = (f'<script type="application/json" id="__STATE__">{json.dumps(state)}</script>'
            f'<script>\n{_script(rng, 300)}</script></body></html>')
    return (head + body + tail).encode("utf-8"), rows


def rows_digest(rows: list[dict]) -> str:
    canon = [{k: r.get(k) for k in FIELDS} for r in rows]
    return hashlib.sha256(json.dumps(canon, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def page_path(i: int) -> str:
    return f"/c/{i}/page"


# -- the page server (its own process) --------------------------------------------------------

def serve_pages(n: int, pipe) -> None:
    import asyncio

    pages: dict[bytes, tuple[bytes, bytes]] = {}
    digests, sizes = [], []
    for i in range(n):
        body, rows = render_page(i)
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
                f"Cache-Control: no-store\r\n\r\n").encode()
        pages[page_path(i).encode()] = (head, body)
        digests.append(rows_digest(rows))
        sizes.append(len(body))
    missing = b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\nnot found"

    class Conn(asyncio.Protocol):
        def connection_made(self, transport):
            self.transport = transport
            self.buf = b""

        def data_received(self, data):
            self.buf += data
            while True:
                end = self.buf.find(b"\r\n\r\n")
                if end < 0:
                    return
                head, self.buf = self.buf[:end], self.buf[end + 4:]
                line, _, rest = head.partition(b"\r\n")
                parts = line.split(b" ")
                path = parts[1].split(b"?", 1)[0] if len(parts) > 1 else b"/"
                page = pages.get(path)
                if page is None:
                    self.transport.write(missing)
                else:
                    self.transport.writelines(page)
                if b"connection: close" in rest.lower():
                    self.transport.close()
                    return

    async def main():
        server = await asyncio.get_running_loop().create_server(Conn, "127.0.0.1", 0, backlog=1024)
        port = server.sockets[0].getsockname()[1]
        pipe.send({"port": port, "digests": digests, "sizes": sizes})
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def start_server(n: int):
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=serve_pages, args=(n, child), daemon=True)
    proc.start()
    info = parent.recv()
    return proc, f"http://127.0.0.1:{info['port']}", info


# -- healerd ----------------------------------------------------------------------------------------

def rss_mb_now() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) another process has used so far."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_peak_rss_mb(pid: int) -> float:
    """Another process's peak resident set (VmHWM), MB."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def pss_sampler(pids: list[int], conn) -> None:
    """A separate process: the peak, over the run, of the summed PSS of `pids` (sampled every 100 ms)."""
    peak = 0.0
    while not conn.poll(0.1):
        total = 0.0
        for pid in pids:
            try:
                with open(f"/proc/{pid}/smaps_rollup") as fh:
                    total += next(int(line.split()[1]) for line in fh if line.startswith("Pss:")) / 1024
            except (OSError, StopIteration):
                pass
        peak = max(peak, total)
    conn.send(peak)


def start_pss_sampler(pids: list[int]):
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=pss_sampler, args=(pids, child), daemon=True)
    proc.start()
    return proc, parent


def stop_pss_sampler(sampler) -> float:
    proc, conn = sampler
    conn.send("stop")
    peak = conn.recv()
    proc.join(5)
    return peak


def thread_cpu() -> dict[str, float]:
    """CPU seconds of each live thread of this process, summed by role: each thread's CPU clock,
    to the nanosecond (/proc's per-thread figures count in 10 ms ticks, which over a dozen
    threads and a 2 s cycle left a tenth of a second unaccounted for)."""
    import threading

    out: dict[str, float] = {}
    for t in threading.enumerate():
        if t.ident is None:   # not started yet
            continue
        try:
            seconds = time.clock_gettime(time.pthread_getcpuclockid(t.ident))
        except OSError:   # the thread ended meanwhile
            continue
        role = "main" if t is threading.main_thread() else t.name.split("-")[0].split(" ")[0]
        out[role] = out.get(role, 0.0) + seconds
    return out


def run_healerd(base: str, n: int, scrapers: int, digests: list[str], tick: float | None = None,
                server_pid: int | None = None, workers: int | None = None, cycles: int = 1) -> dict:
    import logging

    from healerd.adapters.lean_process import import_httpx

    import_httpx()   # as `healerd run` does, before the daemon's modules import it
    from healerd.actors.messages import Ping, Tick
    from healerd.config import from_dict as config_from_dict
    from healerd.core.blueprint import from_dict as blueprint_from_dict
    from healerd.daemon import Daemon
    from healerd.store import sources
    from healerd.store.db import connect, open_db
    try:
        from healerd.store.sql import rows
    except ImportError:   # an older tree (`--compare REV`): the helper lived in store.db
        from healerd.store.db import rows  # type: ignore[no-redef]

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    config = config_from_dict({
        # No artificial throttle on the one local host: no politeness delay, no jitter,
        # per-host concurrency as high as the Scheduler's own in-flight budget.
        "daemon": {"scrapers": scrapers, "politeness_delay": 0, "jitter": 0.0, "log_level": "WARNING",
                   **({"tick": tick} if tick else {}), **({"workers": workers} if workers is not None else {})},
        "fetch": {"per_host_concurrency": scrapers * 4, "respect_robots": False},
    })
    with tempfile.TemporaryDirectory(prefix="healerd-bench-") as state:
        daemon = Daemon(config, state, os.path.join(state, "healerd.sock"), state)
        daemon.prepare_database()
        conn = open_db(daemon.db_path)
        t0 = time.time()
        with conn:   # registration is not part of the timed cycle
            for i in range(n):
                bp = blueprint_from_dict(dict(BLUEPRINT, url=base + page_path(i)))
                sources.add(conn, f"s{i:05d}", bp, origin="cli", now=t0)
        conn.close()
        register_s = time.time() - t0

        rss_before = rss_mb_now()
        daemon.start_actors()
        for ref in list(daemon.registry.roles().values()) + daemon.registry.scrapers():
            ref.ask(Ping(), timeout=10)   # every actor is up, its connection and client open
        if daemon.workers is not None:   # and every worker has started, as `healerd run` waits before "ready"
            daemon.workers.wait_ready(30)
        reader = connect(daemon.db_path, readonly=True)
        done_sql = "SELECT count(*) FROM source_health WHERE success_count + failure_count > 0"
        tick = config.daemon.tick

        worker_pids = daemon.workers.pids() if daemon.workers is not None else []
        sampler = start_pss_sampler([os.getpid()] + worker_pids)
        workers0 = {pid: process_cpu(pid) for pid in worker_pids}
        by_thread0 = thread_cpu()
        server0 = process_cpu(server_pid) if server_pid else 0.0
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.time()
        next_tick = start
        done = 0
        while done < n:
            now = time.time()
            if now >= next_tick:   # the daemon's main loop: a Tick every [daemon] tick seconds
                daemon.registry.tell("scheduler", Tick(now))
                next_tick = now + tick
            time.sleep(0.01)
            done = reader.execute(done_sql).fetchall()[0][0]
            if time.time() - start > 60 + n:
                break
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        workers_cpu = sum(process_cpu(pid) - c0 for pid, c0 in workers0.items())
        workers_rss = [process_peak_rss_mb(pid) for pid in worker_pids]
        by_thread = thread_cpu()
        server_cpu = process_cpu(server_pid) - server0 if server_pid else 0.0
        kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak_pss_mb = stop_pss_sampler(sampler)   # after kids1: the sampler's own CPU is not healerd's
        peak_rss_mb = cpu1.ru_maxrss / 1024
        # The last outcome's commit time, as the StoreWriter stamped it.
        finished = reader.execute("SELECT max(max(coalesce(last_success_at, 0), coalesce(last_failure_at, 0))) "
                                  "FROM source_health").fetchall()[0][0]
        wall = max(finished, start) - start
        cpu = (cpu1.ru_utime - cpu0.ru_utime + cpu1.ru_stime - cpu0.ru_stime
               + kids1.ru_utime - kids0.ru_utime + kids1.ru_stime - kids0.ru_stime)
        per_thread = {k: v - by_thread0.get(k, 0.0) for k, v in by_thread.items()}
        per_thread = dict(sorted(per_thread.items(), key=lambda kv: -kv[1]))
        per_thread["threads that exited"] = cpu - sum(per_thread.values())
        again = second_cycle(daemon, reader, n, tick, worker_pids) if cycles > 1 else None
        daemon.stop_actors(8.0)
        daemon.stop_workers()

        # Check what was persisted against what each page was rendered from.
        ok = reader.execute("SELECT count(*) FROM source_health WHERE success_count > 0").fetchall()[0][0]
        scrapes = reader.execute("SELECT sum(success_count + failure_count) FROM source_health").fetchall()[0][0]
        errors = rows(reader, "SELECT last_error_type AS t, count(*) AS n FROM source_health "
                              "WHERE failure_count > 0 GROUP BY last_error_type")
        matched = 0
        stored = 0
        for name, data in reader.execute("SELECT source_name, data FROM records ORDER BY source_name"):
            stored += 1
            if rows_digest(json.loads(data)) == digests[int(name[1:])]:
                matched += 1
        snaps = reader.execute("SELECT count(*) FROM snapshots WHERE kind = 'last_good'").fetchall()[0][0]
        reader.close()
    return {
        "sources": n, "done": done, "ok": ok, "scrapes": scrapes, "errors": {e["t"]: e["n"] for e in errors},
        "records": stored, "records_matching": matched, "snapshots": snaps, "wall_s": wall, "cpu_s": cpu,
        "sources_per_s": done / wall if wall > 0 else 0.0, "cpu_s_per_source": (cpu + workers_cpu) / max(done, 1),
        "own_cpu_s_per_source": cpu / max(done, 1), "workers": len(worker_pids), "workers_cpu_s": workers_cpu,
        "workers_peak_rss_mb": workers_rss, "daemon_peak_rss_mb": peak_rss_mb,
        "peak_rss_mb": peak_rss_mb + sum(workers_rss), "peak_pss_mb": peak_pss_mb, "rss_before_actors_mb": rss_before, "register_s": register_s,
        "cpu_by_thread": per_thread, "server_cpu_s": server_cpu, "second_cycle": again,
    }


def second_cycle(daemon, reader, n: int, tick: float, worker_pids: list[int]) -> dict:
    """Every source due again at once, the pages unchanged (the steady state: the snapshot is
    not rewritten, so the workers do not compress): wall time and CPU of that cycle."""
    from healerd.actors.messages import Tick
    from healerd.store.db import connect

    conn = connect(daemon.db_path)
    with conn:
        conn.execute("UPDATE sources SET next_run_at = ?", (time.time(),))
    conn.close()
    sql = "SELECT count(*) FROM source_health WHERE success_count + failure_count >= 2"
    workers0 = {pid: process_cpu(pid) for pid in worker_pids}
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.time()
    next_tick = start
    done = 0
    while done < n and time.time() - start < 60 + n:
        now = time.time()
        if now >= next_tick:
            daemon.registry.tell("scheduler", Tick(now))
            next_tick = now + tick
        time.sleep(0.01)
        done = reader.execute(sql).fetchall()[0][0]
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    finished = reader.execute("SELECT max(max(coalesce(last_success_at, 0), coalesce(last_failure_at, 0))) "
                              "FROM source_health").fetchall()[0][0]
    wall = max(finished, start) - start
    own = cpu1.ru_utime - cpu0.ru_utime + cpu1.ru_stime - cpu0.ru_stime
    workers_cpu = sum(process_cpu(pid) - c0 for pid, c0 in workers0.items())
    return {"done": done, "wall_s": wall, "sources_per_s": done / wall if wall > 0 else 0.0,
            "cpu_s_per_source": (own + workers_cpu) / max(done, 1), "own_cpu_s_per_source": own / max(done, 1)}


def stage_costs(base: str, n: int) -> dict[str, float]:
    """CPU ms per page of each step of one scrape, run one after another on this thread with
    the actors' own functions (no actors, so no GIL contention): where a source's time goes.
    The worker step is what a worker process does with [daemon] workers > 0 (in-process with 0)."""
    from healerd.actors.base import fetch_config
    from healerd.actors.messages import ExtractedPage, ScrapeJob
    from healerd.actors.validator import judge
    from healerd.adapters.fetch import Fetcher
    try:
        from healerd.adapters.page_work import PageJob, process_page
    except ImportError:   # an older tree (`--compare REV`)
        from healerd.adapters.workers import PageJob, process_page  # type: ignore[no-redef]
    from healerd.config import Config
    from healerd.core.blueprint import from_dict as blueprint_from_dict
    from healerd.store import sources
    from healerd.store.db import open_db
    from healerd.store.ledger import Ledger

    config = Config()
    steps = ("worker: fetch", "worker: hash+bounds+parse+extract+compress", "validate", "persist (groups of 16)")
    cpu = dict.fromkeys(steps, 0.0)
    with tempfile.TemporaryDirectory(prefix="healerd-bench-") as state:
        conn = open_db(os.path.join(state, "healerd.db"))
        ledger = Ledger(conn, config)
        fetcher = Fetcher(fetch_config(config))
        bps = [blueprint_from_dict(dict(BLUEPRINT, url=base + page_path(i))) for i in range(n)]
        with conn:
            for i, bp in enumerate(bps):
                sources.add(conn, f"s{i:05d}", bp)
        fetcher.fetch(base + page_path(0))   # warm up

        def timed(step, fn, *a, **kw):
            t = time.thread_time()
            out = fn(*a, **kw)
            cpu[step] += time.thread_time() - t
            return out

        group = []
        for i, bp in enumerate(bps):
            url = base + page_path(i)
            res = timed(steps[0], fetcher.fetch, url)
            job = ScrapeJob(name=f"s{i:05d}", url=url, host="127.0.0.1", blueprint_json=bp.to_json(), version=1,
                            etag=None, last_modified=None)
            out = timed(steps[1], process_page, PageJob(res.body, res.encoding, job.blueprint_json), html=res.text)
            page = ExtractedPage(job=job, started_at=time.time(), finished_at=time.time(), status=res.status,
                                 html=res.text, page_sha=out.page_sha, extraction=out.extraction,
                                 snapshot_z=out.snapshot_z)
            group.append(timed("validate", judge, page, [], None))
            if len(group) == 16 or i == n - 1:
                timed(steps[3], ledger.record_scrapes, group)
                group = []
        fetcher.close()
        conn.close()
    return {k: v / n * 1000 for k, v in cpu.items()}


# -- the bare loop: the machine's practical limit ------------------------------------------------------

def bare_child(base: str, indices: list[int], threads: int, conn) -> None:
    """One process of the bare loop: `threads` threads, each with its own sync httpx client,
    fetching its share of the pages and extracting the same fields with lexbor. Nothing else."""
    import queue
    import threading

    import httpx
    from selectolax.lexbor import LexborHTMLParser

    def text(node):
        return " ".join(node.text(deep=True, separator="").split()) if node is not None else None

    def number(s, kind):
        m = NUMBER.search(s) if s is not None else None
        if not m:
            return None
        v = float(m.group(0).replace(",", ""))
        return int(v) if kind is int else v

    todo: queue.Queue = queue.Queue()
    for i in indices:
        todo.put(i)
    found: dict[int, str] = {}

    def work():
        with httpx.Client(timeout=30.0) as client:
            while True:
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                tree = LexborHTMLParser(client.get(base + page_path(i)).text)
                rows = []
                for item in tree.css("ul.results li.result"):
                    a = item.css_first("h2.title a")
                    rows.append({"title": text(a), "url": a.attributes.get("href") if a is not None else None,
                                 "price": number(text(item.css_first("span.price")), float),
                                 "reviews": number(text(item.css_first("span.reviews")), int),
                                 "seller": text(item.css_first("span.seller-name"))})
                found[i] = rows_digest(rows)

    conn.send("ready")
    conn.recv()   # go
    start, cpu = time.time(), time.process_time()
    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    conn.send({"start": start, "end": time.time(), "cpu": time.process_time() - cpu, "digests": found,
               "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})


def run_bare(base: str, n: int, procs: int, threads: int, digests: list[str]) -> dict:
    """The bare loop in `procs` processes x `threads` threads over the same pages, started together."""
    ctx = multiprocessing.get_context("spawn")
    children = []
    for k in range(procs):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=bare_child, args=(base, list(range(k, n, procs)), threads, child), daemon=True)
        proc.start()
        children.append((proc, parent))
    for _, parent in children:
        parent.recv()   # imported and ready
    for _, parent in children:
        parent.send("go")
    outs = [parent.recv() for _, parent in children]
    for proc, _ in children:
        proc.join(10)
    got: dict[int, str] = {}
    for o in outs:
        got.update(o["digests"])
    wall = max(o["end"] for o in outs) - min(o["start"] for o in outs)
    cpu = sum(o["cpu"] for o in outs)
    return {"procs": procs, "threads": threads, "pages": len(got), "wall_s": wall, "cpu_s": cpu,
            "pages_per_s": len(got) / wall if wall > 0 else 0.0,
            "pages_matching": sum(1 for i, d in got.items() if d == digests[i]),
            "peak_rss_mb": sum(o["peak_rss_mb"] for o in outs)}


# -- Scrapy (a subprocess) --------------------------------------------------------------------------

def scrapy_child(base: str, n: int, concurrency: int) -> None:
    """Runs in its own process: crawl the N pages with a plain Scrapy spider, print one JSON line."""
    import scrapy
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    def collapse(s):
        return " ".join(s.split()) if s is not None else None

    def number(s, kind):
        m = NUMBER.search(s) if s is not None else None
        if not m:
            return None
        v = float(m.group(0).replace(",", ""))
        return int(v) if kind is int else v

    found: dict[int, str] = {}
    clock: dict[str, float] = {}

    class Listing(scrapy.Spider):
        name = "listing"

        async def start(self):
            for i in range(n):
                yield scrapy.Request(base + page_path(i), cb_kwargs={"i": i}, dont_filter=True)

        def parse(self, response, i):
            rows = []
            for item in response.css("ul.results li.result"):
                rows.append({
                    "title": collapse(item.css("h2.title a::text").get()),
                    "url": item.css("h2.title a::attr(href)").get(),
                    "price": number(item.css("span.price::text").get(), float),
                    "reviews": number(item.css("span.reviews::text").get(), int),
                    "seller": collapse(item.css("span.seller-name::text").get()),
                })
            yield {"i": i, "rows": rows}

    class Count:
        def process_item(self, item, spider=None):
            found[item["i"]] = rows_digest(item["rows"])
            clock["last_item"] = time.time()
            clock["cpu_last_item"] = time.process_time()
            return item

    def opened(spider):
        clock["start"] = time.time()
        clock["cpu"] = time.process_time()

    def closed(spider, reason):
        clock["end"] = time.time()
        clock["cpu_end"] = time.process_time()
        clock["reason"] = reason

    process = CrawlerProcess(settings={
        "LOG_LEVEL": "WARNING",
        "ROBOTSTXT_OBEY": False,
        "AUTOTHROTTLE_ENABLED": False,
        "DOWNLOAD_DELAY": 0,
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
        "TELNETCONSOLE_ENABLED": False,
        "ITEM_PIPELINES": {Count: 100},
    })
    crawler = process.create_crawler(Listing)
    crawler.signals.connect(opened, signal=signals.spider_opened)
    crawler.signals.connect(closed, signal=signals.spider_closed)
    process.crawl(crawler)
    process.start()
    # The crawl's work ends with its last item (the engine's idle close comes a little later).
    wall = clock.get("last_item", clock["end"]) - clock["start"]
    print(json.dumps({
        "pages": len(found), "wall_s": wall, "cpu_s": clock.get("cpu_last_item", clock["cpu_end"]) - clock["cpu"],
        "pages_per_s": len(found) / wall if wall > 0 else 0.0,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "digests": [found.get(i) for i in range(n)], "reason": clock.get("reason"),
        "scrapy": scrapy.__version__,
    }))


def run_scrapy(base: str, n: int, concurrency: int, digests: list[str]) -> dict | None:
    import importlib.util

    if importlib.util.find_spec("scrapy") is None:
        print("scrapy is not installed (pip install '.[bench]'): skipping the Scrapy run", file=sys.stderr)
        return None
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--scrapy-child", base, str(n),
                           str(concurrency)], capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        print(f"the Scrapy run failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}", file=sys.stderr)
        return None
    out = json.loads(lines[-1])
    got = out.pop("digests")
    out["pages_matching"] = sum(1 for a, b in zip(got, digests) if a == b)
    return out


# -- main ----------------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=int, default=1000, help="number of sources (pages), default 1000")
    ap.add_argument("--scrapers", type=int, default=8, help="size of the Scraper pool, default 8 (the daemon's)")
    ap.add_argument("--no-scrapy", action="store_true", help="skip the Scrapy comparison")
    ap.add_argument("--no-bare", action="store_true", help="skip the bare two-process loop")
    ap.add_argument("--cycles", type=int, default=1, choices=(1, 2),
                    help="2: also time a second cycle over the unchanged pages (the steady state)")
    ap.add_argument("--tick", type=float, default=None, help="[daemon] tick in seconds (default: the daemon's)")
    ap.add_argument("--workers", type=int, default=None,
                    help="[daemon] workers: extraction processes (default: the daemon's, for this machine; 0 = in-process)")
    ap.add_argument("--stages", type=int, default=0, metavar="K",
                    help="also time each step of a scrape one after another on K pages (CPU ms per page)")
    ap.add_argument("--scrapy-concurrency", type=int, default=32, help="Scrapy CONCURRENT_REQUESTS, default 32")
    ap.add_argument("--compare", metavar="REV", help="run this tree and commit REV interleaved (bench/scrape_compare.py)")
    ap.add_argument("--rounds", type=int, default=3, help="with --compare: runs of each side, default 3")
    ap.add_argument("--scrapy-child", nargs=3, metavar=("BASE", "N", "CONCURRENCY"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.scrapy_child:
        base, n, conc = args.scrapy_child
        scrapy_child(base, int(n), int(conc))
        return
    if args.compare:
        os.execv(sys.executable, [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                               "scrape_compare.py"), args.compare,
                                  "--rounds", str(args.rounds), "--sources", str(args.sources),
                                  "--scrapers", str(args.scrapers)]
                 + ([] if args.no_scrapy else ["--scrapy"]) + ([] if args.no_bare else ["--bare"]))
    if args.sources < 1 or args.scrapers < 1 or args.scrapy_concurrency < 1:
        ap.error("--sources, --scrapers and --scrapy-concurrency must be at least 1")

    t0 = time.time()
    server, base, info = start_server(args.sources)
    sizes = info["sizes"]
    print(f"pages: {args.sources} listing pages of {ROWS_PER_PAGE} rows, {min(sizes) / 1000:.0f}-"
          f"{max(sizes) / 1000:.0f} KB (mean {sum(sizes) / len(sizes) / 1000:.0f} KB), rendered and served by "
          f"process {server.pid} at {base} in {time.time() - t0:.1f} s")
    try:
        hd = run_healerd(base, args.sources, args.scrapers, info["digests"], args.tick, server.pid, args.workers, args.cycles)
        stages = stage_costs(base, min(args.stages, args.sources)) if args.stages > 0 else None
        sc = None if args.no_scrapy else run_scrapy(base, args.sources, args.scrapy_concurrency, info["digests"])
        bare = None if args.no_bare else run_bare(base, args.sources, 2, 4, info["digests"])
    finally:
        server.terminate()
        server.join(5)

    errs = ", ".join(f"{k} {v}" for k, v in hd["errors"].items()) or "none"
    print()
    print(f"healerd, one full cycle through the real actors ({args.scrapers} scrapers; fetch + parse + validate + "
          f"persist):")
    print(f"  sources done        {hd['done']:>10} / {hd['sources']}  (passed {hd['ok']}, failures: {errs}; "
          f"{hd['scrapes']} scrapes in all)")
    print(f"  records stored      {hd['records']:>10}  (matching the rendered rows: {hd['records_matching']}; "
          f"last-good snapshots {hd['snapshots']})")
    print(f"  wall time           {hd['wall_s']:>10.2f} s")
    print(f"  sources/s           {hd['sources_per_s']:>10.1f}")
    total_cpu = hd['cpu_s'] + hd['workers_cpu_s']
    print(f"  CPU per source      {hd['cpu_s_per_source'] * 1000:>10.2f} ms  ({total_cpu:.2f} s in total, "
          f"{total_cpu / hd['wall_s'] if hd['wall_s'] else 0:.2f} cores; the daemon's process and its "
          f"{hd['workers']} worker(s))")
    print(f"  CPU per source in the daemon's own process {hd['own_cpu_s_per_source'] * 1000:.2f} ms; in its workers "
          f"{hd['workers_cpu_s'] / max(hd['done'], 1) * 1000:.2f} ms")
    print(f"  peak RSS            {hd['peak_rss_mb']:>10.1f} MB  (the daemon's process {hd['daemon_peak_rss_mb']:.1f} MB + "
          f"workers {' + '.join(f'{w:.1f}' for w in hd['workers_peak_rss_mb']) or '0'} MB; "
          f"{hd['rss_before_actors_mb']:.1f} MB "
          f"before the actors started; the page server's process is excluded)")
    print(f"  peak PSS together   {hd['peak_pss_mb']:>10.1f} MB  (the same processes, shared library pages counted once; "
          f"sampled every 100 ms)")
    print("  CPU by thread       " + ", ".join(f"{k} {v:.2f} s" for k, v in hd["cpu_by_thread"].items() if v >= 0.005))
    print(f"  (meanwhile the page server's process used {hd['server_cpu_s']:.2f} s of CPU; registering "
          f"{hd['sources']} sources, untimed, took {hd['register_s']:.2f} s)")
    if hd["second_cycle"]:
        c2 = hd["second_cycle"]
        print(f"  second cycle, pages unchanged: {c2['done']} sources in {c2['wall_s']:.2f} s, "
              f"{c2['sources_per_s']:.1f} sources/s, CPU per source {c2['cpu_s_per_source'] * 1000:.2f} ms "
              f"(the daemon's own process {c2['own_cpu_s_per_source'] * 1000:.2f} ms)")
    if stages:
        print()
        print(f"one scrape step by step, on one thread, CPU per page (mean of {min(args.stages, args.sources)} pages):")
        for k, v in stages.items():
            print(f"  {k:<44}{v:>8.2f} ms")
        print(f"  {'total':<44}{sum(v for k, v in stages.items() if not k.startswith(' ')):>8.2f} ms")
    ratio = None
    if sc is not None:
        print()
        print(f"Scrapy {sc['scrapy']}, same pages, default parsel CSS extraction, CONCURRENT_REQUESTS "
              f"{args.scrapy_concurrency}:")
        print(f"  pages               {sc['pages']:>10} / {args.sources}  (rows matching: {sc['pages_matching']}; "
              f"close reason {sc['reason']})")
        print(f"  wall time           {sc['wall_s']:>10.2f} s")
        print(f"  pages/s             {sc['pages_per_s']:>10.1f}")
        print(f"  CPU per page        {sc['cpu_s'] / max(sc['pages'], 1) * 1000:>10.2f} ms")
        print(f"  peak RSS            {sc['peak_rss_mb']:>10.1f} MB  (the Scrapy process)")
        if sc["pages_per_s"] > 0:
            ratio = hd["sources_per_s"] / sc["pages_per_s"]
    bare_ratio = None
    if bare is not None:
        print()
        print(f"bare loop, same pages and fields: sync httpx clients + lexbor, {bare['procs']} processes x "
              f"{bare['threads']} threads (the machine's practical limit; no validation, no persistence):")
        print(f"  pages               {bare['pages']:>10} / {args.sources}  (rows matching: {bare['pages_matching']})")
        print(f"  wall time           {bare['wall_s']:>10.2f} s")
        print(f"  pages/s             {bare['pages_per_s']:>10.1f}")
        print(f"  CPU per page        {bare['cpu_s'] / max(bare['pages'], 1) * 1000:>10.2f} ms")
        print(f"  peak RSS            {bare['peak_rss_mb']:>10.1f} MB  (both processes)")
        if bare["pages_per_s"] > 0:
            bare_ratio = hd["sources_per_s"] / bare["pages_per_s"]
    if ratio is not None or bare_ratio is not None:
        print()
    if ratio is not None:
        print(f"healerd / Scrapy:     {ratio:>10.2f} x  (healerd also validates and persists)")
    if bare_ratio is not None:
        print(f"healerd / bare-2proc: {bare_ratio:>10.2f} x")
    print(json.dumps({
        "sources": args.sources, "scrapers": args.scrapers, "sources_per_s": round(hd["sources_per_s"], 1),
        "cpu_s_per_source": round(hd["cpu_s_per_source"], 5), "peak_rss_mb": round(hd["peak_rss_mb"], 1),
        "peak_pss_mb": round(hd["peak_pss_mb"], 1),
        "wall_s": round(hd["wall_s"], 3), "ok": hd["ok"], "records_matching": hd["records_matching"],
        "scrapy_pages_per_s": round(sc["pages_per_s"], 1) if sc else None,
        "scrapy_pages_matching": sc["pages_matching"] if sc else None,
        "ratio": round(ratio, 2) if ratio else None,
        "own_cpu_s_per_source": round(hd["own_cpu_s_per_source"], 5), "workers": hd["workers"],
        "cpu_s_by_thread": {k: round(v, 3) for k, v in hd["cpu_by_thread"].items() if v >= 0.005},
        "bare_pages_per_s": round(bare["pages_per_s"], 1) if bare else None,
        "bare_pages_matching": bare["pages_matching"] if bare else None,
        "bare_ratio": round(bare_ratio, 2) if bare_ratio else None,
    }))


if __name__ == "__main__":
    main()
