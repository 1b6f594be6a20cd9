"""Measure the lifecycle store: committed transitions per second, and reading 10,000 states.

    python bench/lifecycle.py [--transitions 5000] [--sources 100] [--fleet 10000] [--reads 200]

On a real database file in a temporary directory, opened with the daemon's settings
(healerd.store.db.open_db: WAL, synchronous=NORMAL, foreign keys, busy timeout):

1. `lifecycle.fire` cycles fail/recover over --sources sources; each transition is a
   committed transaction holding the state change and its audit event.
2. --fleet sources are registered in one transaction, then `sources.states(conn)` and
   `sources.status_all(conn)` are each timed --reads times (p50/p99 in ms).

Prints a table and, as its last line, one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from benchutil import percentile

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.store import lifecycle, sources
from healerd.store.db import open_db


def time_reads(fn, times: int) -> list[float]:
    out = []
    for _ in range(times):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--transitions", type=int, default=5000)
    ap.add_argument("--sources", type=int, default=100)
    ap.add_argument("--fleet", type=int, default=10_000)
    ap.add_argument("--reads", type=int, default=200)
    args = ap.parse_args()
    if min(args.transitions, args.sources, args.fleet, args.reads) < 1:
        ap.error("all counts must be at least 1")

    bp = Blueprint(fields={"title": FieldSpec("title", "h1")}, url="http://127.0.0.1:9/page")
    with tempfile.TemporaryDirectory(prefix="healerd-bench-") as tmp:
        # 1. committed transitions
        conn = open_db(Path(tmp) / "transitions.db")
        with conn:
            for i in range(args.sources):
                sources.add(conn, f"s{i:05d}", bp)
        models = [lifecycle.make_model(f"s{i:05d}") for i in range(args.sources)]
        t0 = time.perf_counter()
        for n in range(args.transitions):
            m = models[n % args.sources]
            lifecycle.fire(conn, m, "fail" if m.state == lifecycle.ACTIVE else "recover", reason="bench")
        elapsed = time.perf_counter() - t0
        for m in models:
            lifecycle.drop_model(m)
        conn.close()
        per_s = args.transitions / elapsed

        # 2. reading a fleet's states
        conn = open_db(Path(tmp) / "fleet.db")
        t0 = time.perf_counter()
        with conn:
            for i in range(args.fleet):
                sources.add(conn, f"f{i:06d}", bp)
        register_s = time.perf_counter() - t0
        assert len(sources.states(conn)) == args.fleet
        states_ms = time_reads(lambda: sources.states(conn), args.reads)
        status_ms = time_reads(lambda: sources.status_all(conn), args.reads)
        conn.close()

    figures = {
        "transitions": args.transitions,
        "transition_sources": args.sources,
        "transitions_per_s": round(per_s, 1),
        "fleet": args.fleet,
        "register_fleet_s": round(register_s, 3),
        "reads": args.reads,
        "states_p50_ms": round(percentile(states_ms, 50), 3),
        "states_p99_ms": round(percentile(states_ms, 99), 3),
        "status_all_p50_ms": round(percentile(status_ms, 50), 3),
        "status_all_p99_ms": round(percentile(status_ms, 99), 3),
    }
    print(f"{'measure':<44} {'value':>12}")
    print(f"{'-' * 44} {'-' * 12}")
    print(f"{f'committed transitions/s ({args.transitions} over {args.sources} sources)':<44} {per_s:>12.1f}")
    print(f"{f'register {args.fleet} sources, one transaction (s)':<44} {register_s:>12.3f}")
    print(f"{f'sources.states, {args.fleet} sources p50 (ms)':<44} {figures['states_p50_ms']:>12.3f}")
    print(f"{f'sources.states, {args.fleet} sources p99 (ms)':<44} {figures['states_p99_ms']:>12.3f}")
    print(f"{f'sources.status_all, {args.fleet} sources p50 (ms)':<44} {figures['status_all_p50_ms']:>12.3f}")
    print(f"{f'sources.status_all, {args.fleet} sources p99 (ms)':<44} {figures['status_all_p99_ms']:>12.3f}")
    print(f"{'(mean states ms / status_all ms)':<44} "
          f"{statistics.fmean(states_ms):>5.2f} / {statistics.fmean(status_ms):>5.1f}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
