"""Mutation score per module with mutmut's own operators (not a hand-written list).

    python bench/mutmut_modules.py [--module NAME ...] [--timeout 900] [--list] [--show]

`bench/mutation.py` plants the bugs its author thought of; this bench lets mutmut plant every
mutant its operators find (comparisons, boolean operators, numbers, strings, dropped calls and
arguments, ...) in one module at a time and runs the test files that cover that module — only
those, one process (`-n 0`), so a run fits on a small, shared machine. For each module the source
tree (healerd/, tests/, docs/, README.md, schema.sql, pyproject.toml) is copied to a temporary directory with a
`[tool.mutmut]` section naming that module and its tests; mutmut works in the copy (the working
tree is never touched) and `mutmut results` is read back. Mutmut kills a mutant on a failing test
or on a test run slower than its timeout (a multiple of the clean run); `--timeout` bounds a whole
module's run, and a module cut short by it is reported as such, not scored.

Prints killed/total per module and every survivor by mutmut's name; `--show` prints each
survivor's diff too (what to triage: a new test that kills it, or a reason it is equivalent: it
changes no behaviour a caller can see). The goal is >= 85 % killed per module. Slow (minutes per
module) and not part of the CI run. Needs the `mutation` extra (mutmut).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

C, H, SB = "healerd/core", "healerd/core/heal", "healerd/adapters/sandbox"

# module name -> (its file, the test files that cover it)
MODULES: dict[str, tuple[str, list[str]]] = {
    "changes": (f"{C}/changes.py", ["tests/core/test_changes.py", "tests/core/test_changes_mutants.py"]),
    "drift": (f"{C}/drift.py", ["tests/core/test_drift.py", "tests/core/test_shift_suspect.py", "tests/core/test_judge_headings.py",
                               "tests/core/test_drift_mutants.py"]),
    "judge": (f"{C}/judge.py", ["tests/core/test_deploy_judge.py", "tests/core/test_judge_headings.py",
                               "tests/core/test_judge_left_out.py", "tests/core/test_judge_mutants.py"]),
    "selector_bounds": (f"{C}/selector_bounds.py", ["tests/core/test_selector_bounds.py",
                                                   "tests/core/test_selector_bounds_mutants.py"]),
    "stats": (f"{C}/stats.py", ["tests/store/test_stats.py", "tests/core/test_core_edges.py"]),
    "peers": (f"{C}/peers.py", ["tests/adapters/test_healer_peer.py", "tests/core/test_peers_mutants.py",
                               "tests/adapters/test_peer_mutants.py"]),
    "peer": ("healerd/adapters/peer.py", ["tests/adapters/test_healer_peer.py", "tests/adapters/test_peer_mutants.py"]),
    "agreement": (f"{H}/verdict/corroboration.py", ["tests/core/test_heal_agreement.py", "tests/core/test_heal_anchored_place.py",
                                       "tests/core/test_heal_mutants_round3.py"]),
    "anchored_place": (f"{H}/fields/single_anchored.py", ["tests/core/test_heal_anchored_place.py",
                                                 "tests/core/test_heal_mutants_round3.py"]),
    "block_copies": (f"{H}/checks/block_copies.py", ["tests/core/test_heal_block_copies.py",
                                             "tests/core/test_heal_mutants_round3.py"]),
    "data_gone": (f"{H}/checks/data_gone.py", ["tests/core/test_ladder_rungs.py", "tests/core/test_heal_mutants_round3.py"]),
    "listing_cells": (f"{H}/fields/listing_by_cell.py", ["tests/core/test_heal_listing_cells.py",
                                               "tests/core/test_heal_label_pairs.py",
                                               "tests/core/test_heal_mutants_round3.py"]),
    "ladder": ("healerd/core/ladder/ladder.py", ["tests/core/test_ladder_rungs.py", "tests/core/test_ladder_breakers.py",
                                                "tests/core/test_healing_routes.py", "tests/core/test_ladder_mutants.py"]),
    "rungs": ("healerd/core/ladder/rungs.py", ["tests/core/test_ladder_rungs.py", "tests/core/test_ladder_breakers.py",
                                              "tests/core/test_ladder_mutants.py"]),
    "static_check": (f"{SB}/static_check.py", ["tests/adapters/test_sandbox.py",
                                              "tests/adapters/test_static_check_mutants.py"]),
    "feeds": ("healerd/adapters/feeds.py", ["tests/adapters/test_feeds.py", "tests/adapters/test_feeds_mutants.py"]),
    "feed_cursors": ("healerd/store/feeds.py", ["tests/adapters/test_feeds.py", "tests/store/test_feed_cursors.py"]),
}


# Mutated code runs in mutmut's own test process only: a daemon started as a subprocess would import
# the unmutated package (or none), so tests that drive one are left out of a module's run.
EXTRA_ARGS: dict[str, list[str]] = {
    "peers": ["-k", "not daemon and not proc_subset"],
    "peer": ["-k", "not daemon and not proc_subset"],
}


def existing(tests: list[str]) -> list[str]:
    return [t for t in tests if (ROOT / t).exists()]


def copy_tree(dest: Path, module: str, tests: list[str], extra: list[str]) -> None:
    for name in ("healerd", "tests"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copytree(ROOT / "docs", dest / "docs")      # tests that check the reference read it
    for name in ("schema.sql", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    py = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    quoted = ", ".join(f'"{t}"' for t in tests)
    # schema.sql: the store finds it beside the package (mutants/healerd/..), as in a checkout;
    # "-n 0": mutmut runs pytest in its own process, one mutant after another
    py += (f'\n[tool.mutmut]\nsource_paths = ["healerd"]\nonly_mutate = ["{module}"]\nalso_copy = ["schema.sql", "docs", "README.md"]\n'
           f"pytest_add_cli_args_test_selection = [{quoted}]\n"
           f'pytest_add_cli_args = ["-n", "0"{"".join(f", {a!r}" for a in extra)}]\n'
           "use_git_change_detection = false\n")
    (dest / "pyproject.toml").write_text(py, encoding="utf-8")


LINE = re.compile(r"^\s*(\S+):\s*(\w[\w ]*)$")


def run_module(name: str, timeout: float, show: bool) -> tuple[int, int, list[str], str]:
    """(killed, scored total, survivor names, status) for one module."""
    path, tests = MODULES[name]
    tests = existing(tests)
    with tempfile.TemporaryDirectory(prefix=f"healerd-mutmut-{name}-") as tmp:
        copy = Path(tmp)
        copy_tree(copy, path, tests, EXTRA_ARGS.get(name, []))
        # mutmut puts its mutated copy (mutants/) on sys.path itself: no checkout may shadow it
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        t0 = time.monotonic()
        status = "complete"
        try:
            r = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", "1"], cwd=copy, env=env,
                               capture_output=True, text=True, timeout=timeout)
            if r.returncode != 0:
                status = f"mutmut exited {r.returncode}: {(r.stderr or r.stdout).strip()[-600:]}"
        except subprocess.TimeoutExpired:
            status = f"cut short after {timeout:.0f}s"
        res = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=copy, env=env,
                             capture_output=True, text=True)
        verdicts: dict[str, str] = {}
        for line in res.stdout.splitlines():
            m = LINE.match(line)
            if m:
                verdicts[m.group(1)] = m.group(2).strip()
        killed = sum(v in ("killed", "timeout") for v in verdicts.values())
        survivors = sorted(k for k, v in verdicts.items() if v == "survived")
        scored = killed + len(survivors)
        unscored = {v for v in verdicts.values() if v not in ("killed", "timeout", "survived")}
        print(f"{name:<16} {killed:>4} / {scored:<4} {killed / max(scored, 1):>5.0%}  {time.monotonic() - t0:6.0f}s  "
              f"{status}{'  (not run: ' + ', '.join(sorted(unscored)) + ')' if unscored else ''}", flush=True)
        for s in survivors:
            print(f"  survived: {s}")
            if show:
                diff = subprocess.run([sys.executable, "-m", "mutmut", "show", s], cwd=copy, env=env,
                                      capture_output=True, text=True)
                print("    " + diff.stdout.strip().replace("\n", "\n    "))
        return killed, scored, survivors, status


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--module", action="append", choices=sorted(MODULES), help="only these modules (repeatable)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds for one module's whole run")
    ap.add_argument("--list", action="store_true", help="list the modules and their tests, then exit")
    ap.add_argument("--show", action="store_true", help="print each survivor's diff")
    args = ap.parse_args(argv)
    chosen = args.module or list(MODULES)
    if args.list:
        for name in chosen:
            path, tests = MODULES[name]
            print(f"{name:<16} {path}  <- {' '.join(existing(tests))}")
        return 0
    try:
        import mutmut  # noqa: F401
    except ImportError:
        print("mutmut is not installed: pip install '.[mutation]'")
        return 2
    print(f"{'module':<16} {'killed':>4} / {'total':<4} {'rate':>5}  {'time':>7}")
    short = []
    for name in chosen:
        killed, scored, _survivors, status = run_module(name, args.timeout, args.show)
        if status != "complete" or not scored or killed / scored < 0.85:
            short.append(name)
    print(f"goal >= 85 % killed per module: {'met' if not short else 'MISSED or not measured for ' + ', '.join(short)}")
    return 1 if short else 0


if __name__ == "__main__":
    sys.exit(main())
