"""What it costs to try a candidate in the trial worker instead of in the daemon's process, and
what the deadline buys on a hostile page.

    python bench/trials.py [--rounds N]

Prints, per page size, the median wall clock of one extraction in-process and through
`healerd.adapters.trials.Trials` (pickling the page, the pipe, the worker's extraction and
the answer back), then one hostile trial (240 nested divs, a selector within the static
bounds that lexbor needs seconds for) stopped at a 1 s deadline, with the longest stall of a
thread of this process meanwhile (the daemon's threads would see the same). Last line: one
JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time

from healerd.adapters.trials import TooSlow, Trials
from healerd.core.blueprint import from_dict
from healerd.core.extract import extract

BP = from_dict({"url": "http://shop.example/", "items": "div.product",
                "fields": {"title": {"css": "h3.title"}, "price": {"css": "span.price", "type": "float"}}})
SLOW = from_dict({"url": "http://shop.example/", "items": "span div div div tr", "fields": {"n": {"css": "td"}}})


def shop(n: int) -> str:
    cards = "".join(f'<div class="product card"><h3 class="title">Product {i}</h3><span class="price">${i}.99</span>'
                    f'<p class="desc">{"lorem ipsum " * 3}</p></div>' for i in range(n))
    return f"<html><body><div class='wrap'>{cards}</div></body></html>"


def hostile() -> str:
    rows = "".join(f"<tr><td>P{i}</td><td>{i}</td></tr>" for i in range(5))
    return "<html><body>" + "<div>" * 240 + f"<table>{rows}</table>" + "</div>" * 240 + "</body></html>"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    trials = Trials(timeout=1.0)
    out: dict = {"pages": []}
    try:
        trials.extract(BP, shop(1))   # start the worker
        for n in (50, 500, 5000):
            html = shop(n)
            local, remote = [], []
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                a = extract(html, BP)
                local.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                b = trials.extract(BP, html)
                remote.append(time.perf_counter() - t0)
                assert a.data == b.data
            row = {"items": n, "bytes": len(html), "in_process_ms": round(statistics.median(local) * 1000, 2),
                   "trial_worker_ms": round(statistics.median(remote) * 1000, 2)}
            out["pages"].append(row)
            print(f"{n:>5} items {len(html):>8} B: in-process {row['in_process_ms']:8.2f} ms, "
                  f"trial worker {row['trial_worker_ms']:8.2f} ms")

        stalls: list[float] = []
        stop = threading.Event()

        def ticker() -> None:
            last = time.perf_counter()
            while not stop.is_set():
                time.sleep(0.01)
                now = time.perf_counter()
                stalls.append(now - last)
                last = now

        t = threading.Thread(target=ticker, daemon=True)
        t.start()
        t0 = time.perf_counter()
        try:
            trials.extract(SLOW, hostile())
            verdict = "finished"
        except TooSlow:
            verdict = "too slow"
        took = time.perf_counter() - t0
        stop.set()
        t.join()
        out["hostile"] = {"verdict": verdict, "stopped_after_s": round(took, 2),
                          "longest_stall_ms": round(max(stalls) * 1000, 1)}
        print(f"hostile trial: {verdict} after {took:.2f} s (deadline 1 s); longest stall of a thread here "
              f"{max(stalls) * 1000:.1f} ms")
        t0 = time.perf_counter()
        trials.extract(BP, shop(50))
        out["next_trial_after_replacement_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        print(f"next trial (a new worker started): {out['next_trial_after_replacement_ms']} ms")
    finally:
        trials.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
