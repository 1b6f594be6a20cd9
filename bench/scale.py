"""Scale benchmark: N sources loaded from a sources dir, over H loopback hosts, one real daemon.

    python bench/scale.py [--sources 100000] [--hosts 100] [--scrapers 8] [--window 30]
                          [--max-cycle 300] [--keep] [--again] [--format json|toml] [--ready-only]

1. Writes N blueprint files (JSON, or with `--format toml` TOML as people write them, one per
   source) into a temporary `sources_dir`. Each
   source's page is a small table of 30 rows (two fields per row, distinct per page) on
   one of H hosts: 127.0.0.1 .. 127.0.0.H (all of 127/8 is the loopback on Linux), each
   host a listener of its own at a port the system picks, all served from memory by one
   asyncio process apart from this one.
2. Starts the real daemon (`healerd run`, its own process, its worker processes under it)
   with that sources dir, no politeness delay, robots off. Prints:
   - the time from the start of the process to its "ready" log line (the sources dir is
     loaded before it), and the daemon's own CPU seconds by then (less sensitive to what
     else runs on the machine than the wall time);
   - sources/s in each `--window` seconds of the first cycle (every source due at once),
     until every source has an outcome or `--max-cycle` seconds have passed;
   - the peak RSS of the daemon and its workers together (the sum of their VmRSS, sampled
     every 0.5 s; shared libraries counted once per process);
   - the CPU seconds the daemon and its workers spent per source scraped (answering the
     requests below included): what a source costs, whatever else the machine runs;
   - while the fleet scrapes, once per window: the control answer's latency for the fleet
     `status` (what `healerctl status` asks), `status NAME`, and the whole process wall time
     of `healerctl status`, `healerctl status NAME` and `healerctl status --json` (its
     output read and thrown away). "op status (table)" is the request `healerctl status`
     sends (one page of 1000 rows; the whole fleet from a daemon without paging).
   With `--ready-only`, only the start is timed (then `--again`'s restart), no scrape cycle.
3. With `--again`: stops the daemon and starts it again on the same state dir (every source
   registered, their files read and compared again): the time to ready, and the status
   requests once right after it.
4. Stops the daemon (SIGTERM) and the page server, prints one JSON line with every figure.

No assertions: the figures depend on the machine and on what else runs on it (`uptime`'s
load average is printed with them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchutil import bin_cmd, percentile

ROWS = 30
BLUEPRINT = {
    "every": "6h",
    "items": "table.items tr.item",
    "fields": {
        "name": {"css": "td.name"},
        "qty": {"css": "td.qty", "type": "int"},
    },
}


def render(i: int) -> bytes:
    rows = "".join(f"<tr class=item><td class=name>item {i}-{k}</td><td class=qty>{(i * 7 + k) % 997}</td></tr>"
                   for k in range(ROWS))
    return (f"<!doctype html><html><head><title>page {i}</title></head><body><h1>Stock {i}</h1>"
            f"<table class=items>{rows}</table></body></html>").encode()


# -- the page server (a process of its own) -------------------------------------------------

def serve(hosts: int, conn) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1]
                try:
                    body = render(int(path.rsplit(b"/", 1)[1]))
                    status = b"200 OK"
                except ValueError:
                    body, status = b"not found", b"404 Not Found"
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html; charset=utf-8\r\n"
                             b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        ports = []
        for h in range(1, hosts + 1):
            server = await asyncio.start_server(handle, f"127.0.0.{h}", 0, backlog=512)
            ports.append(server.sockets[0].getsockname()[1])
        conn.send(ports)
        await asyncio.Event().wait()

    asyncio.run(main())


def start_server(hosts: int) -> tuple[multiprocessing.Process, list[int]]:
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=serve, args=(hosts, child), daemon=True)
    proc.start()
    return proc, parent.recv()


# -- the fleet ---------------------------------------------------------------------------------

def toml_text(bp: dict) -> str:
    """A blueprint as a person writes it in TOML: top-level keys, then one table per field."""
    lines = [f"{k} = {json.dumps(v)}" for k, v in bp.items() if k != "fields"]
    for name, spec in bp["fields"].items():
        lines.append(f"\n[fields.{name}]")
        lines.extend(f"{k} = {json.dumps(v)}" for k, v in spec.items())
    return "\n".join(lines) + "\n"


def write_sources(folder: Path, n: int, ports: list[int], fmt: str = "json") -> None:
    folder.mkdir(parents=True)
    hosts = len(ports)
    for i in range(n):
        h = i % hosts
        bp = dict(BLUEPRINT, url=f"http://127.0.0.{h + 1}:{ports[h]}/stock/{i}")
        text = json.dumps(bp) if fmt == "json" else toml_text(bp)
        (folder / f"src-{i:06d}.{fmt}").write_text(text)


def tree_rss_mb(pid: int) -> float:
    """VmRSS of `pid` and of every process below it, summed, in MB."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, []))
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


class RssSampler(threading.Thread):
    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0.0, threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.5):
            self.peak = max(self.peak, tree_rss_mb(self.pid))


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def run_cli(args: list[str], sock: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "HEALERD_SOCKET"}
    r = subprocess.run(bin_cmd("healerctl") + ["--socket", sock, *args], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, env=env, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"healerctl {' '.join(args)} exited {r.returncode}: {r.stderr.decode(errors='replace')}")


# What `healerctl status` asks: one page of at most 1000 rows (a daemon from before paging
# refuses the paging arguments: then the whole fleet, which is what it was asked before).
STATUS_PAGE = {"table": True, "limit": 1000, "offset": 0, "state": None, "order": "auto"}


def status_table(sock: str) -> None:
    from healerd.control import client
    from healerd.control.protocol import ControlError

    try:
        client.call(sock, "status", STATUS_PAGE, timeout=120)
    except ControlError:
        client.call(sock, "status", {"table": True}, timeout=120)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process so far."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of `pid` and of the processes below it now (the workers live as long as it)."""
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry) == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def latencies(sock: str, name: str) -> dict[str, float]:
    from healerd.control import client

    return {
        "op status (table)": timed(lambda: status_table(sock)),
        "op status NAME": timed(lambda: client.call(sock, "status", {"name": name}, timeout=120)),
        "healerctl status": timed(lambda: run_cli(["status"], sock)),
        "healerctl status NAME": timed(lambda: run_cli(["status", name], sock)),
        "healerctl status --json": timed(lambda: run_cli(["status", "--json"], sock)),
    }


def scraped(conn) -> int:
    return conn.execute("SELECT count(*) FROM source_health WHERE success_count + failure_count > 0").fetchall()[0][0]


def start_daemon(base: Path, state: Path, sock: str, log_path: Path) -> tuple[subprocess.Popen, float, float]:
    """Start `healerd run` on `state`; (the process, seconds to its "ready" line, its CPU seconds by then)."""
    logf = open(log_path, "ab")
    start = log_path.stat().st_size
    started = time.perf_counter()
    proc = subprocess.Popen(bin_cmd("healerd") + ["run", "--config", str(base / "healerd.toml"),
                                                  "--state-dir", str(state), "--socket", sock],
                            stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
    logf.close()
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"healerd exited {proc.returncode}:\n{log_path.read_text()[-3000:]}")
        if b" ready: " in log_path.read_bytes()[start:][-4000:]:
            return proc, time.perf_counter() - started, cpu_s(proc.pid)
        time.sleep(0.05)


def stop_daemon(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", type=int, default=100_000)
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--scrapers", type=int, default=8)
    ap.add_argument("--window", type=float, default=30.0, help="seconds per throughput figure")
    ap.add_argument("--max-cycle", type=float, default=300.0, help="stop the first cycle after this many seconds")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--format", choices=("json", "toml"), default="json",
                    help="the blueprint files' format (toml: as people write them), default json")
    ap.add_argument("--ready-only", action="store_true",
                    help="only the start: time to ready (and with --again the restart's), no scrape cycle")
    ap.add_argument("--again", action="store_true",
                    help="then stop the daemon and start it again on the same state (every source registered): "
                         "time to ready, and the status requests once, right after")
    args = ap.parse_args()
    from healerd.store.db import connect, db_path

    load = os.getloadavg()
    base = Path(tempfile.mkdtemp(prefix="healerd-scale-"))
    server, ports = start_server(args.hosts)
    proc = None
    sampler = None
    try:
        t0 = time.perf_counter()
        write_sources(base / "sources", args.sources, ports, args.format)
        print(f"{args.sources} {args.format.upper()} blueprint files over {args.hosts} hosts written in {time.perf_counter() - t0:.1f}s; "
              f"load average before {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
        state, sock = base / "state", str(base / "healerd.sock")
        (base / "healerd.toml").write_text(
            f'[daemon]\nsources_dir = "{base / "sources"}"\nscrapers = {args.scrapers}\npoliteness_delay = 0\n'
            f'log_level = "INFO"\n[fetch]\nrespect_robots = false\n')
        log_path = base / "healerd.log"
        proc, ready, ready_cpu = start_daemon(base, state, sock, log_path)
        sampler = RssSampler(proc.pid)
        sampler.start()
        print(f"ready after start: {ready:.1f}s (the daemon's own CPU by then: {ready_cpu:.1f}s)", flush=True)
        if args.ready_only:
            figures_start: dict = {"sources": args.sources, "format": args.format, "ready_s": round(ready, 1),
                                   "ready_cpu_s": round(ready_cpu, 1)}
            if args.again:
                stop_daemon(proc)
                proc, again, again_cpu = start_daemon(base, state, sock, log_path)
                print(f"again: ready after start on the same state: {again:.1f}s (the daemon's own CPU by then: "
                      f"{again_cpu:.1f}s)", flush=True)
                figures_start["again"] = {"ready_s": round(again, 1), "ready_cpu_s": round(again_cpu, 1)}
            load_after = os.getloadavg()
            print(f"load average after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
            print(json.dumps(figures_start))
            return 0
        conn = connect(str(db_path(str(state))))
        windows: list[float] = []
        lat: list[dict[str, float]] = []
        cycle_start = time.perf_counter()
        cycle_cpu = tree_cpu_s(proc.pid)
        last_t, last_n = cycle_start, scraped(conn)
        name = f"src-{args.sources // 2:06d}"
        done = last_n
        while done < args.sources and time.perf_counter() - cycle_start < args.max_cycle:
            if proc.poll() is not None:
                raise RuntimeError(f"healerd exited {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            if time.perf_counter() - cycle_start >= (len(lat) + 0.5) * args.window:   # once per window, mid-way
                lat.append(latencies(sock, name))
                print("  while busy: " + ", ".join(f"{k} {v:.0f} ms" for k, v in lat[-1].items()), flush=True)
            time.sleep(0.5)
            done = scraped(conn)
            now = time.perf_counter()
            if now - last_t >= args.window:
                windows.append((done - last_n) / (now - last_t))
                print(f"  {now - cycle_start:5.0f}s: {windows[-1]:7.1f} sources/s ({done} of {args.sources} scraped)",
                      flush=True)
                last_t, last_n = now, done
        cycle_s = time.perf_counter() - cycle_start
        cpu_per_source_ms = (tree_cpu_s(proc.pid) - cycle_cpu) / max(done, 1) * 1000
        if done > last_n:
            windows.append((done - last_n) / max(time.perf_counter() - last_t, 1e-9))
        conn.close()
        probed_busy = bool(lat)
        if not lat:   # the cycle ended before the first probe: time the requests once, idle
            lat.append(latencies(sock, name))
            print("  (the cycle ended before the first probe: the status requests below were timed after it)")
        sampler.stop.set()
        sampler.join()
        load_after = os.getloadavg()
        rate = done / cycle_s
        figures = {
            "sources": args.sources, "format": args.format, "hosts": args.hosts, "scrapers": args.scrapers,
            "ready_s": round(ready, 1),
            "ready_cpu_s": round(ready_cpu, 1),
            "first_cycle": {"scraped": done, "seconds": round(cycle_s, 1), "sources_per_s": round(rate, 1),
                            "per_window": [round(w, 1) for w in windows], "complete": done >= args.sources,
                            "cpu_ms_per_source": round(cpu_per_source_ms, 2)},
            "peak_rss_mb": round(sampler.peak, 1),
            "probed_while_busy": probed_busy,
            "while_busy_ms": {k: {"median": round(percentile([x[k] for x in lat], 50), 1),
                                  "max": round(max(x[k] for x in lat), 1), "n": len(lat)} for k in lat[0]},
            "load_avg_before": [round(x, 2) for x in load], "load_avg_after": [round(x, 2) for x in load_after],
        }
        print(f"first cycle: {done} of {args.sources} in {cycle_s:.1f}s = {rate:.1f} sources/s; "
              f"per {args.window:g}s window: {', '.join(f'{w:.1f}' for w in windows)}")
        print(f"CPU per source scraped (daemon + workers, answering the status requests included): {cpu_per_source_ms:.2f} ms")
        print(f"peak RSS (daemon + workers): {sampler.peak:.0f} MB")
        for k, v in figures["while_busy_ms"].items():
            print(f"{k:26s} median {v['median']:8.1f} ms  max {v['max']:8.1f} ms  (n={v['n']})")
        print(f"load average after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
        if args.again:
            stop_daemon(proc)
            proc, again, again_cpu = start_daemon(base, state, sock, log_path)
            print(f"again: ready after start on the same state: {again:.1f}s (the daemon's own CPU by then: "
                  f"{again_cpu:.1f}s)", flush=True)
            lat_again = latencies(sock, name)
            print("  again, right after ready: " + ", ".join(f"{k} {v:.0f} ms" for k, v in lat_again.items()),
                  flush=True)
            figures["again"] = {"ready_s": round(again, 1), "ready_cpu_s": round(again_cpu, 1),
                                "after_ready_ms": {k: round(v, 1) for k, v in lat_again.items()}}
        print(json.dumps(figures))
        return 0
    finally:
        if sampler is not None:
            sampler.stop.set()
        if proc is not None:
            stop_daemon(proc)
        server.terminate()
        server.join(5)
        if args.keep:
            print(f"kept {base}")
        else:
            import shutil

            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
