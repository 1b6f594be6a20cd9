r"""Every heal answer, one JSON line per case: to hold the healer's answers equal across processes and trees.

    python bench/heal_answers.py [CORPUS_DIR ...] [--generated N] [--generated-from DIR] [--seed 1] [--modern]
                                 [--out FILE] [--hash-seeds A B]

Heals every case below each CORPUS_DIR (case format: tests/data/corpus/README.md) and, with
--generated N, the first N cases bench/heal_fuzz.py generates from the cases below
--generated-from (its mix and seeds; --modern as there). Each answer is the whole HealResult
(ok, reason, changed, unchanged, confidence, details, the repaired blueprint and the refusal's
best guess: items and field specs), serialised with sorted keys, beside the case id and, for a
generated case, a digest of its two pages. Written to --out (default: standard output).

With --hash-seeds A B the same answers are computed twice, in two processes whose string hashing
differs (PYTHONHASHSEED=A and =B: a set of strings iterates in another order in each), and
compared: each case whose answer differs is printed, then, as the last line, one JSON object
{"answers", "differ", "inputs_differ"} ("inputs_differ": generated pages that differ, a
generator's own fault). Exit status 1 when any answer differs.

Comparing two trees (a refactoring that must change no answer): run it in each with --out and
the same PYTHONHASHSEED, then `cmp` the two files.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heal as bench  # noqa: E402  (bench/heal.py: loading cases, the blueprint of a case, the healer)
import heal_fuzz  # noqa: E402

from healerd.core.blueprint import Blueprint  # noqa: E402
from healerd.core.extract import extract  # noqa: E402


def _blueprint(bp: Blueprint | None) -> dict | None:
    if bp is None:
        return None
    return {"items": bp.items, "items_fallbacks": list(bp.items_fallbacks),
            "fields": {n: dataclasses.asdict(f) for n, f in bp.fields.items()}}


def answer(case: dict, before: str, after: str) -> dict[str, Any]:
    """The whole heal answer for one case (a raised error is an answer too)."""
    bp = bench.blueprint_of(case)
    try:
        res = bench.heal(bp, before, extract(before, bp).data, after)
    except Exception as exc:
        return {"crash": f"{type(exc).__name__}: {exc}"}
    return {"ok": res.ok, "reason": res.reason, "changed": res.changed, "unchanged": res.unchanged,
            "confidence": res.confidence, "details": res.details, "blueprint": _blueprint(res.blueprint),
            "candidate": _blueprint(res.candidate)}


def cases(corpora: list[str], generated: int, generated_from: str | None, seed: int,
          modern: bool) -> Iterator[tuple[str, str | None, dict, str, str]]:
    """(id, digest of a generated case's pages or None, case, before, after), corpora first."""
    for root in corpora:
        name = os.path.basename(os.path.normpath(root))
        for path, case in bench.load_cases(root, None):
            with open(os.path.join(path, "before.html"), encoding="utf-8", errors="replace") as fh:
                before = fh.read()
            with open(os.path.join(path, "after.html"), encoding="utf-8", errors="replace") as fh:
                after = fh.read()
            yield f"{name}:{case.get('id', path)}", None, case, before, after
    if not generated:
        return
    bases = heal_fuzz.base_cases(generated_from or corpora[0], None)
    made, attempts = 0, 0
    while made < generated and attempts < generated * 20:    # heal_fuzz's own walk through the seeds
        s = seed * 1_000_003 + attempts
        attempts += 1
        try:
            g = heal_fuzz.generate(bases[s % len(bases)], s, modern=modern)
        except Exception:
            continue
        if g is None:
            continue
        made += 1
        digest = hashlib.sha256((g["before"] + "\0" + g["after"]).encode()).hexdigest()[:16]
        yield g["case"]["id"], digest, g["case"], g["before"], g["after"]


def write_answers(args: argparse.Namespace, out) -> int:
    n = 0
    for cid, digest, case, before, after in cases(args.corpus, args.generated, args.generated_from,
                                                  args.seed, args.modern):
        rec = {"id": cid, **({"input": digest} if digest else {}), **answer(case, before, after)}
        out.write(json.dumps(rec, sort_keys=True, default=repr, ensure_ascii=False) + "\n")
        n += 1
    return n


def compare(a_lines: list[str], b_lines: list[str]) -> dict[str, Any]:
    """The cases whose answers differ between two runs (same cases, in the same order)."""
    a, b = [json.loads(x) for x in a_lines], [json.loads(x) for x in b_lines]
    if [x["id"] for x in a] != [y["id"] for y in b]:
        raise ValueError("the two runs answered different cases")
    differ = [x["id"] for x, y in zip(a, b) if x != y]
    inputs = [x["id"] for x, y in zip(a, b) if x.get("input") != y.get("input")]
    return {"answers": len(a), "differ": len(differ), "inputs_differ": len(inputs), "ids": differ}


def run_under_seeds(argv: list[str], seeds: list[str]) -> dict[str, Any]:
    """This script run once per hash seed, side by side, its answers compared."""
    with tempfile.TemporaryDirectory(prefix="heal-answers-") as tmp:
        outs, procs = [], []
        for s in seeds:
            out = os.path.join(tmp, f"answers-{s}.jsonl")
            outs.append(out)
            procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), *argv, "--out", out],
                                          env={**os.environ, "PYTHONHASHSEED": s}))
        for p in procs:
            if p.wait() != 0:
                raise RuntimeError(f"heal_answers.py exited {p.returncode} under one hash seed")
        runs = []
        for out in outs:
            with open(out, encoding="utf-8") as fh:
                runs.append(fh.read().splitlines())
    return compare(runs[0], runs[1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="*")
    ap.add_argument("--generated", type=int, default=0, help="also this many of heal_fuzz's generated cases")
    ap.add_argument("--generated-from", help="the corpus the generated cases start from (default: the first)")
    ap.add_argument("--seed", type=int, default=1, help="heal_fuzz's seed")
    ap.add_argument("--modern", action="store_true", help="heal_fuzz's modern-frontend redesigns too")
    ap.add_argument("--out", help="write the answers here (default: standard output)")
    ap.add_argument("--hash-seeds", nargs=2, metavar=("A", "B"),
                    help="compute the answers under two PYTHONHASHSEED values and compare them")
    args = ap.parse_args(argv)
    raw = list(sys.argv[1:] if argv is None else argv)
    if not args.corpus and not args.generated_from:
        print("error: name at least one corpus folder", file=sys.stderr)
        return 2
    for d in [*args.corpus, *([args.generated_from] if args.generated_from else [])]:
        if not os.path.isdir(d):
            print(f"error: {d} is not a folder", file=sys.stderr)
            return 2
    if args.hash_seeds:
        k = raw.index("--hash-seeds")
        result = run_under_seeds(raw[:k] + raw[k + 3:], list(args.hash_seeds))
        for cid in result.pop("ids"):
            print(f"differs: {cid}")
        print(json.dumps(result))
        return 1 if result["differ"] else 0
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            n = write_answers(args, fh)
        print(f"{n} answers -> {args.out}", file=sys.stderr)
    else:
        write_answers(args, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
