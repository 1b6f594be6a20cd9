"""The scrape benchmark for this tree and another commit, interleaved in one session.

    python bench/scrape_compare.py REV [--rounds 3] [--sources 1000] [--scrapy] [--bare] [--keep] [--threads]
    python bench/scrape.py --compare REV [...]          (the same)

REV is a commit (anything `git rev-parse` takes) checked out with `git worktree add --detach`
into a temporary directory, or the path of a checkout already made. Each round runs
`bench/scrape.py` (this tree's script, so both sides are measured the same way) once with this
tree's `healerd` first on PYTHONPATH and once with REV's, the order swapped every round, so a
load that comes and goes on a shared machine falls on both. The daemon's extraction workers are
started with the same PYTHONPATH, so they run the same side's code. The load averages are
printed before and after, since the absolute figures depend on everything else running.

Prints each run, then per side the median of sources/s, CPU ms per source (the daemon's process
and its workers) and the daemon's own CPU ms per source, and this tree's change against REV; a
change for the worse of more than 10 % is named REGRESSION. `--scrapy` and `--bare` also run
Scrapy and the bare two-process loop in every run, for the ratios the scrape path's bar is
stated in (healerd / Scrapy, healerd / bare).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
THRESHOLD = 0.10


def load() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def checkout(rev: str) -> tuple[Path, bool]:
    """A directory holding REV's tree, and whether this script made it (and removes it)."""
    if Path(rev).is_dir():
        return Path(rev).resolve(), False
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", rev + "^{commit}"],
                         capture_output=True, text=True)
    if sha.returncode != 0:
        raise SystemExit(f"not a commit here: {rev}")
    where = Path(tempfile.mkdtemp(prefix="healerd-compare-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), sha.stdout.strip()],
                   check=True, capture_output=True)
    return where, True


def run_once(tree: Path, args: argparse.Namespace) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [sys.executable, str(HERE / "scrape.py"), "--sources", str(args.sources), "--scrapers", str(args.scrapers)]
    if not args.scrapy:
        cmd.append("--no-scrapy")
    if not args.bare:
        cmd.append("--no-bare")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(tree))
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"the run with {tree} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1])


def line(label: str, r: dict) -> str:
    extra = ""
    if r.get("ratio"):
        extra += f"  x Scrapy {r['ratio']:.2f}"
    if r.get("bare_ratio"):
        extra += f"  x bare {r['bare_ratio']:.2f}"
    return (f"  {label:<10} {r['sources_per_s']:>8.1f} sources/s  CPU {r['cpu_s_per_source'] * 1000:6.2f} ms/source  "
            f"daemon's own {r['own_cpu_s_per_source'] * 1000:5.2f} ms  records matching {r['records_matching']}"
            f"{extra}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rev", help="the other commit (or the path of a checkout of it)")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each side, interleaved (default 3)")
    ap.add_argument("--sources", type=int, default=1000)
    ap.add_argument("--scrapers", type=int, default=8)
    ap.add_argument("--scrapy", action="store_true", help="also run Scrapy in every run (the ratio)")
    ap.add_argument("--bare", action="store_true", help="also run the bare two-process loop in every run")
    ap.add_argument("--keep", action="store_true", help="leave the checkout of REV in place")
    ap.add_argument("--threads", action="store_true", help="also print each run's CPU by thread of the daemon")
    args = ap.parse_args()
    other, made = checkout(args.rev)
    sides = {"this tree": ROOT, args.rev: other}
    results: dict[str, list[dict]] = {k: [] for k in sides}
    print(f"this tree {ROOT} against {args.rev} at {other}; {args.sources} sources, {args.rounds} rounds interleaved")
    print(f"load average before: {load()}")
    try:
        for k in range(args.rounds):
            order = list(sides) if k % 2 == 0 else list(reversed(sides))
            for label in order:
                r = run_once(sides[label], args)
                results[label].append(r)
                print(line(label if label == "this tree" else "REV", r) + f"   (round {k + 1}, load {load()})",
                      flush=True)
                if args.threads and r.get("cpu_s_by_thread"):
                    print("             the daemon's CPU by thread: "
                          + ", ".join(f"{t} {s:.2f} s" for t, s in r["cpu_s_by_thread"].items()), flush=True)
    finally:
        if made and not args.keep:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(other)], capture_output=True)
            os.rmdir(other.parent)
    print(f"load average after: {load()}")
    print()
    med: dict[str, dict[str, float]] = {}
    for label, rs in results.items():
        med[label] = {key: statistics.median(r[key] for r in rs)
                      for key in ("sources_per_s", "cpu_s_per_source", "own_cpu_s_per_source")}
        for key in ("ratio", "bare_ratio"):
            got = [r[key] for r in rs if r.get(key)]
            if got:
                med[label][key] = statistics.median(got)
        print(line(("this tree" if label == "this tree" else "REV") + " med", dict(med[label], records_matching="-")))
    a, b = med["this tree"], med[args.rev]
    verdicts = []
    for key, name, higher_better in (("sources_per_s", "sources/s", True), ("cpu_s_per_source", "CPU per source", False),
                                     ("own_cpu_s_per_source", "the daemon's own CPU per source", False)):
        change = a[key] / b[key] - 1 if b[key] else 0.0
        worse = -change if higher_better else change
        flag = "  REGRESSION (> 10 %)" if worse > THRESHOLD else ""
        verdicts.append(f"  {name:<32} {change * 100:+6.1f} %{flag}")
    print(f"this tree against {args.rev} (medians):")
    print("\n".join(verdicts))
    print(json.dumps({"rev": args.rev, "this": med["this tree"], "other": med[args.rev],
                      "runs": {("this" if k == "this tree" else "other"): v for k, v in results.items()}}))


if __name__ == "__main__":
    main()
