r"""Score the built-in healer (and optionally Scrapling's adaptive mode) on a corpus folder.

    python bench/heal.py CORPUS_DIR [--peer scrapling] [--case SUBSTRING] [--verbose] [--speed]

Reads every case.json below CORPUS_DIR (case format: tests/data/corpus/README.md),
heals, judges, prints a table per case, a table per mutation kind (real-snapshot,
real-template, and each synthetic mutation named in the case id) and, as its last
line, one JSON object:
{"cases", "heal_rate", "false_positive_rate", "negatives_refused", "crashes", "median_ms"}
(with --peer, a "peer" object with the same figures for the peer; with --speed,
"big_page_ms" and "big_page_cpu_ms": one heal, wall clock and CPU time, on a generated
page over 1 MB with 5,000 records, counting the parse and extraction of the last good page
that give the heal its old records; "big_page_heal_ms" and "big_page_heal_cpu_ms": the
same heal's `heal()` call alone).

A healer that raises is a CRASH, never a refusal: a crash on a negative case is
not counted as "refused". Numbers are compared by the corpus's own rule (the first
`-?\d[\d,]*(\.\d+)?` in the string, commas dropped), implemented here and not
borrowed from healerd, so a bug in healerd's coercion cannot hide itself.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.pipeline import heal


def load_cases(root: str, needle: str | None) -> list[tuple[str, dict]]:
    out = []
    for dirpath, _dirs, files in os.walk(root):
        if "case.json" in files:
            with open(os.path.join(dirpath, "case.json"), encoding="utf-8") as fh:
                case = json.load(fh)
            if needle and needle not in case.get("id", dirpath):
                continue
            out.append((dirpath, case))
    out.sort(key=lambda t: t[1].get("id", t[0]))
    return out


def blueprint_of(case: dict) -> Blueprint:
    fields = {name: FieldSpec(name, f["selector"], f.get("type", "str"), f.get("attr"))
              for name, f in case["fields"].items()}
    return Blueprint(fields=fields, items=case.get("items"))


CORPUS_NUMBER = re.compile(r"-?\d[\d,]*(\.\d+)?")


def corpus_number(text: Any) -> float | None:
    """The corpus's number rule: the first -?\\d[\\d,]*(\\.\\d+)? in the text, commas dropped."""
    if text is None:
        return None
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    m = CORPUS_NUMBER.search(str(text))
    return float(m.group(0).replace(",", "")) if m else None


def same(got: Any, want: Any, ftype: str) -> bool:
    """`got` is a raw extracted string (or None), `want` the corpus truth."""
    if want is None:
        return got is None
    if got is None:
        return False
    if ftype == "str":
        return got == want
    a, b = corpus_number(got), corpus_number(want)
    return a is not None and a == b


def mutation_kind(case: dict) -> str:
    """real-snapshot / real-template, or for a synthetic case the mutation named in its id (after its base case)."""
    kind = case.get("kind", "?")
    if kind != "synthetic":
        return kind
    cid = case.get("id", "")
    m = re.search(r"case (\S+)", case.get("origin", ""))
    base = m.group(1) if m else None
    if base and cid.startswith("syn-" + base + "-"):
        return "syn:" + cid[len("syn-" + base + "-"):]
    return "syn:" + cid.rsplit("-", 1)[-1]


def matches_expected(raw: Any, expected: Any, case: dict) -> bool:
    types = {n: f.get("type", "str") for n, f in case["fields"].items()}
    if case.get("items"):
        if not isinstance(raw, list) or len(raw) != len(expected):
            return False
        pairs = list(zip(raw, expected))
    else:
        pairs = [(raw, expected)]
    return all(same(g.get(n), w.get(n), types[n]) for g, w in pairs for n in types)


def judge(case: dict, ok: bool, new_bp: Blueprint | None, changed: bool, after_html: str) -> tuple[str, Any]:
    """Verdict for one outcome: healed / refused-correct / refused / WRONG / control-kept / CONTROL-CHANGED.

    (A healer that raised is judged by the caller as CRASH, never here.)"""
    if case.get("no_break"):
        if ok and not changed:
            return "control-kept", None
        if not ok:
            return "refused", None  # a refused control is a missed heal, not a false positive
        # The corpus: changing a control's selectors is a false positive, even if they still give the truth.
        return "CONTROL-CHANGED", extract(after_html, new_bp).raw
    if not ok:
        return ("refused-correct" if not case["heal_possible"] else "refused"), None
    raw = extract(after_html, new_bp).raw
    if not case["heal_possible"]:
        return "WRONG", raw
    return ("healed" if matches_expected(raw, case["expected_after"], case) else "WRONG"), raw


def figures(rows: list[dict]) -> dict:
    healable = [r for r in rows if r["heal_possible"] and not r["no_break"]]
    negatives = [r for r in rows if not r["heal_possible"]]
    fp = sum(1 for r in rows if r["verdict"] in ("WRONG", "CONTROL-CHANGED"))
    return {
        "cases": len(rows),
        "heal_rate": round(sum(1 for r in healable if r["verdict"] == "healed") / max(len(healable), 1), 4),
        "false_positive_rate": round(fp / max(len(rows), 1), 4),
        "negatives_refused": round(sum(1 for r in negatives if r["verdict"] == "refused-correct") / max(len(negatives), 1), 4),
        "crashes": sum(1 for r in rows if r["verdict"] == "CRASH"),
        "median_ms": round(statistics.median(r["ms"] for r in rows), 2) if rows else 0.0,
    }


def kind_table(rows: list[dict]) -> list[str]:
    """One line per mutation kind: cases, healed/healable, wrong, negatives refused, controls kept, crashes."""
    kinds: dict[str, list[dict]] = {}
    for r in rows:
        kinds.setdefault(r["mkind"], []).append(r)
    out = [f"{'mutation kind':<28} {'cases':>5} {'healed':>9} {'wrong':>5} {'neg refused':>11} {'ctrl kept':>9} {'crash':>5}"]
    for k in sorted(kinds):
        rs = kinds[k]
        healable = [r for r in rs if r["heal_possible"] and not r["no_break"]]
        neg = [r for r in rs if not r["heal_possible"]]
        ctrl = [r for r in rs if r["no_break"]]
        def frac(part, whole):
            return f"{part}/{len(whole)}" if whole else "-"
        out.append(f"{k:<28} {len(rs):>5} "
                   f"{frac(sum(r['verdict'] == 'healed' for r in healable), healable):>9} "
                   f"{sum(r['verdict'] in ('WRONG', 'CONTROL-CHANGED') for r in rs):>5} "
                   f"{frac(sum(r['verdict'] == 'refused-correct' for r in neg), neg):>11} "
                   f"{frac(sum(r['verdict'] == 'control-kept' for r in ctrl), ctrl):>9} "
                   f"{sum(r['verdict'] == 'CRASH' for r in rs):>5}")
    return out


def heal_case(case: dict, before: str, after: str) -> dict:
    """Heal one case and judge it: {"verdict", "ms", "cpu_ms", "heal_ms", "heal_cpu_ms", "reason", "blueprint", "raw"};
    a raised error is a CRASH. "ms"/"cpu_ms" count the old records' extraction too, "heal_*" the heal() call alone."""
    t0, c0 = time.perf_counter(), time.process_time()
    alone: dict[str, float] = {}
    try:
        ok, new_bp, changed, reason = run_builtin(case, before, after, alone)
    except Exception as exc:
        ms = (time.perf_counter() - t0) * 1000
        return {"verdict": "CRASH", "ms": ms, "cpu_ms": (time.process_time() - c0) * 1000,
                "reason": f"{type(exc).__name__}: {exc}", "blueprint": None, "raw": None}
    ms, cpu_ms = (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000
    verdict, raw = judge(case, ok, new_bp, changed, after)
    return {"verdict": verdict, "ms": ms, "cpu_ms": cpu_ms, "heal_ms": alone["ms"], "heal_cpu_ms": alone["cpu_ms"],
            "reason": reason, "blueprint": new_bp, "raw": raw}


def big_page_case(n: int = 5000) -> tuple[dict, str, str]:
    """A listing page over 1 MB with `n` records whose classes were renamed and a wrapper added."""
    def rows(item_cls, name_cls, price_cls, wrap):
        out = []
        for k in range(n):
            price = f'<span class="{price_cls}">${k * 3 + 1}.{k % 100:02d}</span>'
            if wrap:
                price = f'<div class="meta">{price}</div>'
            out.append(f'<li class="{item_cls}"><a class="{name_cls}" href="/p/{k}">Product number {k} in the range</a>'
                       f'{price}<p class="blurb">{"Sturdy and well made, ships the same day. " * 3}</p></li>')
        return "".join(out)
    head = "<html><head><title>Catalogue</title></head><body><nav><a href='/'>Home</a></nav>"
    before = head + '<ul class="products">' + rows("product", "name", "price", False) + "</ul></body></html>"
    after = head + '<main><div class="grid">' + rows("card-x9", "ttl-x9", "amt-x9", True).replace("<li", "<article").replace("</li>", "</article>") + "</div></main></body></html>"
    case = {"id": f"generated-{n}-records", "kind": "generated", "items": "ul.products li.product",
            "fields": {"name": {"selector": "a.name", "attr": None, "type": "str"},
                       "href": {"selector": "a.name", "attr": "href", "type": "str"},
                       "price": {"selector": "span.price", "attr": None, "type": "float"}},
            "heal_possible": True,
            "expected_after": [{"name": f"Product number {k} in the range", "href": f"/p/{k}",
                                "price": f"${k * 3 + 1}.{k % 100:02d}"} for k in range(n)]}
    return case, before, after


def run_builtin(case: dict, before: str, after: str,
                timing: dict[str, float] | None = None) -> tuple[bool, Blueprint | None, bool, str]:
    """Heal one case; with `timing`, the heal() call alone is timed into it ("ms" wall, "cpu_ms" CPU)."""
    bp = blueprint_of(case)
    old = extract(before, bp).data
    t0, c0 = time.perf_counter(), time.process_time()
    res = heal(bp, before, old, after)
    if timing is not None:
        timing["ms"] = (time.perf_counter() - t0) * 1000
        timing["cpu_ms"] = (time.process_time() - c0) * 1000
    return res.ok, res.blueprint, (res.ok and not res.unchanged and bool(res.changed)), res.reason


def proposal_verdict(case: dict, before: str, after: str) -> str | None:
    """A refusal's best guess (HealResult.candidate), judged as a person approving it would see it:
    "right" when it gives the truth, "wrong" otherwise; None when the refusal carries none."""
    bp = blueprint_of(case)
    res = heal(bp, before, extract(before, bp).data, after)
    if res.ok or res.candidate is None:
        return None
    if not case["heal_possible"]:
        return "wrong"
    return "right" if matches_expected(extract(after, res.candidate).raw, case["expected_after"], case) else "wrong"


def proposal_figures(rows: list[dict]) -> dict:
    """Of the refusals (rows with a "proposal": proposal_verdict's answer), how many stage a best
    guess, how many of those give the truth, how many do not, how many stage nothing; and how many
    guesses were staged where the data is gone (negatives: each one is wrong)."""
    refusals = [r for r in rows if r["verdict"] in ("refused", "refused-correct")]
    staged = [r for r in refusals if r.get("proposal")]
    return {"refusals": len(refusals), "proposals": len(staged),
            "proposals_right": sum(1 for r in staged if r["proposal"] == "right"),
            "proposals_wrong": sum(1 for r in staged if r["proposal"] == "wrong"),
            "refusals_staging_nothing": len(refusals) - len(staged),
            "proposals_on_negatives": sum(1 for r in staged if not r["heal_possible"])}


def scrapling_runner() -> Callable | None:
    try:
        from scrapling.parser import Selector as ScSelector  # scrapling >= 0.3
    except Exception:
        try:
            from scrapling.parser import Adaptor as ScSelector  # older scrapling
        except Exception:
            return None
    import tempfile

    def run(case: dict, before: str, after: str):
        """Scrapling adaptive: save fingerprints on before, relocate on after; its answer is the relocated values."""
        storage_dir = tempfile.mkdtemp(prefix="scrapling-bench-")
        kwargs_common = dict(url="https://bench.example/", storage_args={"storage_file": os.path.join(storage_dir, "s.db"), "url": "https://bench.example/"})
        try:
            b = _sc_make(ScSelector, before, kwargs_common)
            a = _sc_make(ScSelector, after, kwargs_common)
        except Exception as exc:  # pragma: no cover - depends on the installed version
            return False, None, False, f"scrapling error: {exc}"
        fields = case["fields"]
        items = case.get("items")

        def val(el, attr):
            if el is None:
                return None
            if attr:
                return el.attrib.get(attr)
            return " ".join(str(el.get_all_text(separator="")).split())

        def relocate(doc_b, doc_a, css, ident):
            old = doc_b.css(css)
            if old:
                for o in old:
                    doc_b.save(o, ident)
            now = doc_a.css(css)
            if now:
                return list(now)
            got = _sc_adaptive(doc_a, css, ident)
            return list(got or [])

        if items:
            conts = relocate(b, a, items, "items")
            if not conts:
                return False, None, False, "no containers"
            out = []
            for k, c in enumerate(conts):
                rec = {}
                oldc = b.css(items)
                for name, f in fields.items():
                    ident = f"f:{name}"
                    if k < len(oldc):
                        o = oldc[k].css(f["selector"])
                        if o:
                            b.save(o[0], ident)
                    got = c.css(f["selector"])
                    el = got[0] if got else None
                    if el is None:
                        rel = _sc_adaptive(a, f["selector"], ident)
                        el = next((x for x in (rel or []) if _inside(x, c)), None)
                    rec[name] = val(el, f.get("attr"))
                out.append(rec)
            return True, out, True, ""
        rec = {}
        for name, f in fields.items():
            got = relocate(b, a, f["selector"], f"f:{name}")
            rec[name] = val(got[0], f.get("attr")) if got else None
        return True, rec, True, ""

    return run


def _sc_make(cls, html, common):
    try:
        return cls(html, url=common["url"], adaptive=True, storage_args=common["storage_args"])
    except TypeError:
        return cls(html, url=common["url"], auto_match=True, storage_args=common["storage_args"])


def _sc_adaptive(doc, css, ident):
    try:
        return doc.css(css, identifier=ident, adaptive=True)
    except TypeError:
        return doc.css(css, identifier=ident, auto_match=True)


def _inside(el, container) -> bool:
    p = el
    while p is not None:
        if p == container:
            return True
        p = p.parent
    return False


def judge_values(case: dict, ok: bool, values: Any) -> str:
    """Verdict when the peer returns values rather than a blueprint."""
    if not ok:
        return "refused" if case["heal_possible"] else "refused-correct"
    good = matches_expected(values, case["expected_after"], case)
    if case.get("no_break"):
        return "control-kept" if good else "CONTROL-CHANGED"
    if not case["heal_possible"]:
        # a peer that returns values always answers; right only if the gone fields came back null
        return "refused-correct" if good else "WRONG"
    return "healed" if good else "WRONG"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus")
    ap.add_argument("--peer", choices=["scrapling"])
    ap.add_argument("--case")
    ap.add_argument("--verbose", action="store_true", help="print extraction vs expected for failing cases")
    ap.add_argument("--speed", action="store_true", help="also time one heal on a generated 1 MB page with 5,000 records")
    ap.add_argument("--proposals", action="store_true",
                    help="also count the refusals that carry a best guess to stage for approval, and how many are right")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.corpus):
        print(f"error: {args.corpus} is not a folder", file=sys.stderr)
        return 2
    cases = load_cases(args.corpus, args.case)
    if not cases:
        print(f"error: no case.json below {args.corpus}", file=sys.stderr)
        return 2
    peer = None
    if args.peer == "scrapling":
        peer = scrapling_runner()
    rows, peer_rows = [], []
    print(f"{'case':<66} {'kind':<14} {'verdict':<18} {'ms':>8}" + (f"  {'scrapling':<18}" if peer else ""))
    for path, case in cases:
        with open(os.path.join(path, "before.html"), encoding="utf-8", errors="replace") as fh:
            before = fh.read()
        with open(os.path.join(path, "after.html"), encoding="utf-8", errors="replace") as fh:
            after = fh.read()
        out = heal_case(case, before, after)
        verdict, raw, new_bp, reason, ms = out["verdict"], out["raw"], out["blueprint"], out["reason"], out["ms"]
        row = {"id": case["id"], "kind": case["kind"], "mkind": mutation_kind(case), "verdict": verdict, "ms": ms,
               "heal_possible": case["heal_possible"], "no_break": bool(case.get("no_break"))}
        rows.append(row)
        if args.proposals and verdict in ("refused", "refused-correct"):
            row["proposal"] = proposal_verdict(case, before, after)
        line = f"{case['id'][:66]:<66} {case['kind']:<14} {verdict:<18} {ms:8.1f}"
        if peer:
            t1 = time.perf_counter()
            try:
                pok, pvals, _, _ = peer(case, before, after)
                pverdict = judge_values(case, pok, pvals)
            except Exception as exc:
                pverdict = f"CRASH ({type(exc).__name__})"
            pms = (time.perf_counter() - t1) * 1000
            peer_rows.append({**row, "verdict": pverdict.split(" (")[0], "ms": pms})
            line += f"  {pverdict:<18}"
        print(line)
        if verdict == "CRASH" or (args.verbose and verdict not in ("healed", "refused-correct", "control-kept")):
            print(f"    reason: {reason}")
        if args.verbose and verdict not in ("healed", "refused-correct", "control-kept", "CRASH"):
            if new_bp is not None:
                print(f"    blueprint: items={new_bp.items!r} {new_bp.selectors()}")
            print(f"    got:      {json.dumps(raw, ensure_ascii=False)[:600]}")
            print(f"    expected: {json.dumps(case['expected_after'], ensure_ascii=False)[:600]}")
    print()
    for line in kind_table(rows):
        print(line)
    result = figures(rows)
    if args.proposals:
        result.update(proposal_figures(rows))
        for r in rows:
            if r.get("proposal"):
                print(f"proposal {r['proposal']:<6} {r['id']}")
    if args.speed:
        case, before, after = big_page_case()
        out = heal_case(case, before, after)
        # CPU time too: on a shared machine the wall clock also counts other processes' turns
        result["big_page_ms"] = round(out["ms"], 1)
        result["big_page_cpu_ms"] = round(out["cpu_ms"], 1)
        if out["verdict"] != "CRASH":
            result["big_page_heal_ms"] = round(out["heal_ms"], 1)
            result["big_page_heal_cpu_ms"] = round(out["heal_cpu_ms"], 1)
        result["big_page_bytes"] = len(after.encode())
        result["big_page_verdict"] = out["verdict"]
    if args.peer == "scrapling":
        if peer is None:
            print(json.dumps(result))
            print("error: --peer scrapling: scrapling is not installed (pip install scrapling)", file=sys.stderr)
            return 3
        result["peer"] = {"name": "scrapling", **figures(peer_rows)}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
