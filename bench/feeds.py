"""Feeds benchmark: scrapes/s delivered to a local webhook and to a JSON Lines file at N sources,
and the daemon's CPU per delivered scrape beside its CPU per scrape.

    python bench/feeds.py [--sources 1000] [--scrapers 8] [--workers N]

The pages are bench/scrape.py's (50-150 KB listing pages of 50 rows, served from memory by
their own process); the webhook receiver is its own process too (asyncio, HTTP/1.1 keep-alive,
answers 200 "ok" to every POST and counts them), so neither competes with the daemon's GIL.
healerd runs in this process (`healerd.daemon.Daemon`, the real actors and worker processes):

1. Without feeds: one full cycle of N sources (fetch, parse, validate, persist), timed from
   the first Tick until every outcome is committed: scrapes/s and CPU per scrape (the daemon's
   process plus its workers).
2. With a webhook feed and a JSONL feed (`{source}.jsonl`, one file per source): the same
   cycle on a fresh state dir. Scrapes/s and CPU per scrape again (the change set computed
   and stored with each scrape is in there), and the time until both feeds had delivered every
   scrape stored in the cycle.
3. The backlog drained, one feed at a time: its cursor is put back before the cycle's N
   scrapes and a new FeedDispatcher delivers them with nothing else running: delivered
   scrapes/s, and the CPU per delivered scrape: the daemon's process (the reports,
   the cursor writes through the StoreWriter) and the feeds process's (its start-up, measured
   apart with nothing to deliver, left out). The webhook receiver's count is checked.

"Feeds' share" compares a delivered scrape's CPU with a scrape's CPU without feeds (target:
under 10 %). No assertions: the figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from scrape import BLUEPRINT, page_path, process_cpu, start_server  # noqa: E402  (bench/scrape.py)

# -- the webhook receiver (its own process) ------------------------------------------------------

def serve_hook(pipe) -> None:
    import asyncio
    import threading

    count = {"posts": 0, "bytes": 0}
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"

    class Conn(asyncio.Protocol):
        def connection_made(self, transport):
            self.transport = transport
            self.buf = b""
            self.need = -1

        def data_received(self, data):
            self.buf += data
            while True:
                if self.need < 0:
                    end = self.buf.find(b"\r\n\r\n")
                    if end < 0:
                        return
                    head, self.buf = self.buf[:end].lower(), self.buf[end + 4:]
                    length = 0
                    for line in head.split(b"\r\n"):
                        if line.startswith(b"content-length:"):
                            length = int(line.split(b":", 1)[1])
                    self.need = length
                if len(self.buf) < self.need:
                    return
                count["posts"] += 1
                count["bytes"] += self.need
                self.buf, self.need = self.buf[self.need:], -1
                self.transport.write(answer)

    def answer_counts():
        while True:
            if pipe.recv() == "count":
                pipe.send(dict(count))

    async def main():
        server = await asyncio.get_running_loop().create_server(Conn, "127.0.0.1", 0, backlog=256)
        pipe.send(server.sockets[0].getsockname()[1])
        threading.Thread(target=answer_counts, daemon=True).start()
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def start_hook():
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=serve_hook, args=(child,), daemon=True)
    proc.start()
    port = parent.recv()
    return proc, parent, f"http://127.0.0.1:{port}/hook"


def hook_count(pipe) -> dict:
    pipe.send("count")
    return pipe.recv()


# -- healerd ---------------------------------------------------------------------------------------

def own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def feeds_process_cpu() -> float:
    """CPU seconds used so far by this process's feeds processes (`healerd.actors.feeds_process`)."""
    total = 0.0
    me = str(os.getpid())
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as fh:
                ppid = fh.read().rsplit(")", 1)[1].split()[1]
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read()
        except OSError:
            continue
        if ppid == me and b"healerd.actors.feeds_process" in cmd:
            total += process_cpu(int(pid))
    return total


def settled(measure: Callable[[], float], step: float = 0.5, most: float = 15.0) -> float:
    """`measure()` once it stops growing (a process done starting up)."""
    last, until = -1.0, time.time() + most
    while time.time() < until:
        now = measure()
        if now > 0 and now == last:
            break
        last = now
        time.sleep(step)
    return last


def run(base: str, n: int, scrapers: int, workers: int | None, feeds: list[dict], hook_pipe=None) -> dict:
    import logging

    from healerd.adapters.lean_process import import_httpx

    import_httpx()
    from healerd.actors.feeds import FeedDispatcher
    from healerd.actors.messages import Ping, Tick
    from healerd.config import from_dict as config_from_dict
    from healerd.core.blueprint import from_dict as blueprint_from_dict
    from healerd.daemon import Daemon
    from healerd.store import sources
    from healerd.store.db import connect, open_db

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="healerd-bench-feeds-") as state:
        for f in feeds:
            if f["kind"] == "jsonl":
                f["path"] = os.path.join(state, "feeds", "{source}.jsonl")
        config = config_from_dict({
            "daemon": {"scrapers": scrapers, "politeness_delay": 0, "jitter": 0.0, "log_level": "WARNING",
                       **({"workers": workers} if workers is not None else {})},
            "fetch": {"per_host_concurrency": scrapers * 4, "respect_robots": False},
            **({"feeds": feeds} if feeds else {}),
        })
        daemon = Daemon(config, state, os.path.join(state, "healerd.sock"), state)
        daemon.prepare_database()
        conn = open_db(daemon.db_path)
        with conn:
            for i in range(n):
                sources.add(conn, f"s{i:05d}", blueprint_from_dict(dict(BLUEPRINT, url=base + page_path(i))),
                            origin="cli", now=time.time())
        conn.close()
        daemon.start_actors()
        for ref in list(daemon.registry.roles().values()) + daemon.registry.scrapers():
            ref.ask(Ping(), timeout=10)
        if daemon.workers is not None:
            daemon.workers.wait_ready(30)
        reader = connect(daemon.db_path, readonly=True)

        def one(sql: str):
            return reader.execute(sql).fetchall()[0][0]

        if feeds:   # the feeds process has started and is idle
            settled(feeds_process_cpu)
        worker_pids = daemon.workers.pids() if daemon.workers is not None else []
        w0 = {pid: process_cpu(pid) for pid in worker_pids}
        cpu0, feeds0 = own_cpu(), feeds_process_cpu()
        start = next_tick = time.time()
        done = 0
        while done < n and time.time() - start < 120 + n:
            now = time.time()
            if now >= next_tick:
                daemon.registry.tell("scheduler", Tick(now))
                next_tick = now + config.daemon.tick
            time.sleep(0.01)
            done = one("SELECT count(*) FROM source_health WHERE success_count + failure_count > 0")
        finished = one("SELECT max(max(coalesce(last_success_at, 0), coalesce(last_failure_at, 0))) FROM source_health")
        cpu = own_cpu() - cpu0 + sum(process_cpu(pid) - c for pid, c in w0.items())
        wall = max(finished, start) - start
        out.update(done=done, ok=one("SELECT count(*) FROM source_health WHERE success_count > 0"), wall_s=wall,
                   scrapes_per_s=done / wall if wall else 0.0, cpu_ms_per_scrape=cpu / max(done, 1) * 1000)
        if feeds:
            last = one("SELECT max(id) FROM records")
            while one("SELECT min(cursor) FROM feed_cursors") < last and time.time() - start < 300 + n:
                time.sleep(0.01)
            delivered = time.time() - start
            fp = feeds_process_cpu() - feeds0
            total = own_cpu() - cpu0 + sum(process_cpu(pid) - c for pid, c in w0.items()) + fp
            out.update(delivered_all_s=delivered, delivered_per_s=done / delivered,
                       cpu_ms_per_scrape_delivered=total / max(done, 1) * 1000,
                       feeds_process_cpu_ms_per_scrape=fp / max(done, 1) * 1000)
            # The backlog drained: one feed at a time, nothing else running.
            ref = daemon.registry.roles()["feeds"]
            ref.stop()
            first = one("SELECT min(id) FROM records") - 1
            # What starting the feeds process costs (imports, TLS context), measured with nothing to deliver.
            ref = FeedDispatcher.start(daemon.db_path, config, daemon.registry)
            startup = settled(feeds_process_cpu)
            ref.stop()
            out["feeds_process_startup_cpu_s"] = startup
            out["drain"] = {}
            for f in config.feeds:
                w = open_db(daemon.db_path)
                with w:
                    w.execute("UPDATE feed_cursors SET cursor = CASE WHEN feed = ? THEN ? ELSE ? END",
                              (f.name, first, last))
                w.close()
                posts0 = hook_count(hook_pipe)["posts"] if hook_pipe and f.kind == "webhook" else 0
                cpu0, t0 = own_cpu(), time.time()
                ref = FeedDispatcher.start(daemon.db_path, config, daemon.registry)
                while one(f"SELECT cursor FROM feed_cursors WHERE feed = '{f.name}'") < last \
                        and time.time() - t0 < 300 + n:
                    time.sleep(0.005)
                wall_d = time.time() - t0
                cpu_d = own_cpu() - cpu0 + feeds_process_cpu() - startup   # the process's start-up left out
                ref.stop()
                got = (hook_count(hook_pipe)["posts"] - posts0) if hook_pipe and f.kind == "webhook" else None
                out["drain"][f.kind] = {"scrapes": last - first, "wall_s": wall_d,
                                        "per_s": (last - first) / wall_d if wall_d else 0.0,
                                        "cpu_ms_per_scrape": cpu_d / max(last - first, 1) * 1000, "received": got}
            if any(f.kind == "jsonl" for f in config.feeds):
                d = os.path.join(state, "feeds")
                out["jsonl_files"] = len(os.listdir(d))
                out["jsonl_lines"] = sum(sum(1 for _ in open(os.path.join(d, p), "rb")) for p in os.listdir(d))
        reader.close()
        daemon.stop_actors(8.0)
        daemon.stop_workers()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=int, default=1000, help="number of sources (pages), default 1000")
    ap.add_argument("--scrapers", type=int, default=8, help="size of the Scraper pool, default 8")
    ap.add_argument("--workers", type=int, default=None, help="[daemon] workers (default: the daemon's)")
    args = ap.parse_args()
    server, base, info = start_server(args.sources)
    hook, pipe, hook_url = start_hook()
    try:
        run(base, min(50, args.sources), args.scrapers, args.workers, [])   # warm-up (imports, the servers), not shown
        plain = run(base, args.sources, args.scrapers, args.workers, [])
        fed = run(base, args.sources, args.scrapers, args.workers,
                  [{"kind": "webhook", "name": "hook", "url": hook_url}, {"kind": "jsonl", "name": "files"}], pipe)
        received = hook_count(pipe)
    finally:
        for p in (server, hook):
            p.terminate()
            p.join(5)
    n = args.sources
    print(f"{n} sources, {args.scrapers} scrapers; pages of 50 rows, {min(info['sizes']) // 1000}-"
          f"{max(info['sizes']) // 1000} KB")
    print(f"  without feeds      {plain['done']:>5} scrapes ({plain['ok']} passed) in {plain['wall_s']:6.2f} s: "
          f"{plain['scrapes_per_s']:7.1f} scrapes/s, CPU {plain['cpu_ms_per_scrape']:.2f} ms per scrape")
    print(f"  with 2 feeds       {fed['done']:>5} scrapes ({fed['ok']} passed) in {fed['wall_s']:6.2f} s: "
          f"{fed['scrapes_per_s']:7.1f} scrapes/s, CPU {fed['cpu_ms_per_scrape']:.2f} ms per scrape")
    print(f"  both feeds had every scrape {fed['delivered_all_s']:.2f} s after the first Tick: "
          f"{fed['delivered_per_s']:.1f} scrapes/s delivered to each; the feeds process "
          f"{fed['feeds_process_cpu_ms_per_scrape']:.2f} ms CPU per scrape (both feeds); CPU from the first Tick "
          f"to the last delivery {fed['cpu_ms_per_scrape_delivered']:.2f} ms per scrape, "
          f"{(fed['cpu_ms_per_scrape_delivered'] / plain['cpu_ms_per_scrape'] - 1) * 100:+.1f} % against the cycle "
          f"without feeds")
    for kind, d in fed["drain"].items():
        extra = f", receiver got {d['received']}" if d["received"] is not None else ""
        print(f"  backlog drained, {kind:<7} {d['scrapes']:>5} scrapes in {d['wall_s']:6.2f} s: {d['per_s']:7.1f} "
              f"scrapes/s, CPU {d['cpu_ms_per_scrape']:.2f} ms per delivered scrape "
              f"({d['cpu_ms_per_scrape'] / plain['cpu_ms_per_scrape'] * 100:.1f} % of a scrape's){extra}")
    both = sum(d["cpu_ms_per_scrape"] for d in fed["drain"].values())
    change = (fed["scrapes_per_s"] / plain["scrapes_per_s"] - 1) * 100 if plain["scrapes_per_s"] else 0.0
    print(f"  feeds' share: both feeds {both:.2f} ms CPU per scrape = {both / plain['cpu_ms_per_scrape'] * 100:.1f} % "
          f"of a scrape's CPU (target < 10 %); scrapes/s with feeds {change:+.1f} % against without "
          f"(one run each: noise on a shared machine is several %)")
    print(f"  jsonl: {fed.get('jsonl_files')} files, {fed.get('jsonl_lines')} lines; webhook receiver: "
          f"{received['posts']} POSTs, {received['bytes'] / 1e6:.1f} MB")
    print(json.dumps({"sources": n, "plain": plain, "feeds": fed, "received": received}, default=str))


if __name__ == "__main__":
    main()
