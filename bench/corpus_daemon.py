"""Every case of a corpus through the real daemon, judged by what the daemon STORED.

    python bench/corpus_daemon.py [CORPUS_DIR] [--case SUBSTRING] [--timeout 60] [--tick 0.2s] [--keep DIR]

bench/recovery.py times the cases that can be healed and really break; this tool sends every
case of the folder (positives, negatives and no-break controls) through one real daemon
(`healerd run`, subprocess; the same local site, config and helpers as recovery.py: the
built-in healer only, politeness 0, a high systemic threshold since every case shares one
local host) and judges the records table, not the healer's answer:

1. each case is one source on its own path, scraped once on before.html (that record is
   checked against expected_before too);
2. one case at a time: the page switches to after.html, the bench sends `run` (scrape now and
   wait); if that scrape failed, it waits until the Doctor has finished the FIX task, and after
   a promoted fix scrapes once more with the new production parser;
3. every record stored for the source since the switch is compared with expected_after
   (the corpus's rule: bench/heal.py's `matches_expected`).

Verdicts per case:
  healed          a positive whose stored data is the truth after a promoted fix
  kept            stored data is the truth, no fix (a control; or a positive the old parser still reads right)
  refused-correct a negative: nothing wrong stored, no fix promoted, an alert told a person
  refused         a positive not healed: "staged" (the candidate waits for approval; right or wrong
                  against the truth) or "rejected" / "declined" / "timeout"
  control-paged   a control whose scrape failed (nothing wrong stored, but a person is paged / a fix made)
  WRONG           ANY stored record whose data is not the page's truth, healed or not ("silent" when
                  the old parser passed and nothing healed)

Prints the per-case table, a per-kind table, the MISMATCH list (bench/heal.py's in-process verdict
for the same case vs the daemon's; "healed@0.61" is a heal below the Deployer's LOW_CONFIDENCE,
which the daemon stages for a person by design) and, as its last line, one JSON object:
{"cases", "heal_rate", "wrong_rate", "negatives_refused", "controls_kept", "staged", "staged_right", ...}
heal_rate counts healed + kept over the positives (the stored data is the truth), wrong_rate the
WRONG cases over all cases.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import recovery as rb
from benchutil import bin_cmd

from healerd.control import client
from healerd.core.blueprint import from_json
from healerd.core.extract import extract
from healerd.core.heal.pipeline import heal
from healerd.core.judge import LOW_CONFIDENCE
from healerd.store.db import connect, db_path
from healerd.store.sql import rows

hb = rb.hb

# bench/heal.py's verdicts, in the daemon's words, for the MISMATCH list
DIRECT_AS_DAEMON = {"healed": "healed", "control-kept": "kept", "refused-correct": "refused-correct",
                    "refused": "refused", "WRONG": "WRONG", "CONTROL-CHANGED": "control-changed", "CRASH": "crash"}


def direct_confidence(case: dict, before: str, after: str) -> float | None:
    """The in-process healer's own confidence in its heal (bench/heal.py counts any heal)."""
    bp = hb.blueprint_of(case)
    try:
        return heal(bp, before, extract(before, bp).data, after).confidence
    except Exception:
        return None


def case_role(case: dict) -> str:
    if case.get("no_break"):
        return "control"
    return "positive" if case["heal_possible"] else "negative"


def stored_since(reader, name: str, after_id: int) -> list[dict]:
    return rows(reader, "SELECT id, version, data FROM records WHERE source_name = ? AND id > ? ORDER BY id",
                (name, after_id))


def last_record_id(reader, name: str) -> int:
    got = rows(reader, "SELECT max(id) AS m FROM records WHERE source_name = ?", (name,))
    return int(got[0]["m"] or 0) if got else 0


def alerts_since(reader, name: str, since: float) -> list[dict]:
    return rows(reader, "SELECT level, event FROM alerts WHERE source = ? AND ts >= ? ORDER BY id", (name, since))


def staged_candidate_right(reader, name: str, version: int | None, case: dict, after_html: str) -> str:
    """Would the staged version, approved by a person, store the truth? right / wrong / ?"""
    if version is None:
        return "?"
    got = rows(reader, "SELECT body FROM parser_versions WHERE source_name = ? AND version = ?", (name, version))
    if not got:
        return "?"
    try:
        raw = extract(after_html, from_json(got[0]["body"])).raw
    except Exception as exc:  # a code parser or an unreadable body: say so rather than guess
        return f"? ({type(exc).__name__})"
    if not case["heal_possible"]:
        return "wrong"
    return "right" if hb.matches_expected(raw, case["expected_after"], case) else "wrong"


def judge_case(case: dict, scraped_ok: bool, fix: dict | None, task_state: str, stored: list[dict],
               told: bool) -> tuple[str, str]:
    """(verdict, detail) from what the daemon did and stored."""
    role = case_role(case)
    bad = [r for r in stored if not hb.matches_expected(json.loads(r["data"]), case["expected_after"], case)]
    promoted = fix is not None and fix["outcome"] == "promoted"
    if bad:
        how = "silent (old parser passed)" if scraped_ok else ("after a promoted fix" if promoted else "stored")
        return "WRONG", f"{len(bad)} wrong record(s) {how}: {json.loads(bad[0]['data'])!s:.160}"
    if role == "control":
        if scraped_ok and stored:
            return "kept", ""
        return "control-paged", (fix or {}).get("outcome") or task_state
    if role == "negative":
        if promoted:
            return "healed-negative", "a fix promoted on a page whose data is gone (nothing wrong stored)"
        if scraped_ok:
            return "refused-correct" if told else "passed-negative", "the scrape passed with the truth"
        return ("refused-correct" if told else "refused-silent"), (fix or {}).get("outcome") or task_state
    if scraped_ok and stored:
        return "kept", "the old parser still reads the truth"
    if promoted and stored:
        return "healed", ""
    if promoted:
        return "refused", "promoted but nothing stored after"
    if fix is None:
        return "refused", f"no fix row (task {task_state})"
    return "refused", fix["outcome"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("corpus", nargs="?", default=str(rb.DEFAULT_CORPUS))
    ap.add_argument("--case", help="only cases whose id contains this")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the Doctor per case")
    ap.add_argument("--tick", default="0.2s", help="[daemon] tick of the daemon")
    ap.add_argument("--keep", help="keep the daemon's state dir and log here instead of a temp dir")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.corpus):
        print(f"error: {args.corpus} is not a folder", file=sys.stderr)
        return 2
    cases = hb.load_cases(args.corpus, args.case)
    if not cases:
        print(f"error: no case.json below {args.corpus}", file=sys.stderr)
        return 2
    print(f"{len(cases)} cases below {args.corpus}; load average {os.getloadavg()[0]:.2f} "
          f"{os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}", flush=True)

    tmp_obj = None
    if args.keep:
        tmpd = Path(args.keep).resolve()
        if tmpd.exists():
            shutil.rmtree(tmpd)
        tmpd.mkdir(parents=True)
    else:
        tmp_obj = tempfile.TemporaryDirectory(prefix="healerd-bench-all-")
        tmpd = Path(tmp_obj.name)
    site = rb.Site()
    state, sock, cfg, log_path = tmpd / "state", str(tmpd / "healerd.sock"), tmpd / "healerd.toml", tmpd / "daemon.log"
    cfg.write_text(rb.config_text(args.tick))
    log_fh = open(log_path, "wb")
    proc = subprocess.Popen(bin_cmd("healerd") + ["run", "--config", str(cfg), "--state-dir", str(state),
                                                  "--socket", sock],
                            cwd=tmpd, stdout=log_fh, stderr=subprocess.STDOUT)
    results: list[dict] = []
    t_start = time.monotonic()
    try:
        rb.wait_for_socket(proc, sock, log_path)
        entries = []
        for i, (path, case) in enumerate(cases):
            name = rb.source_name(i, case["id"])
            web = f"/case/{i}"
            site.set(web, Path(path, "before.html").read_bytes())
            client.call(sock, "add", {"name": name, "blueprint": rb.blueprint_dict(case), "url": site.url(web),
                                      "wait": False}, timeout=30)
            entries.append((name, web, path, case))
        first = rb.wait_first_scrapes(sock, [e[0] for e in entries], timeout=300)
        reader = connect(db_path(state), readonly=True)
        print(f"\n{'case':<60} {'role':<8} {'direct':<15} {'daemon':<15} detail")
        for name, web, path, case in entries:
            after_html = Path(path, "after.html").read_text(encoding="utf-8", errors="replace")
            before_html = Path(path, "before.html").read_text(encoding="utf-8", errors="replace")
            direct = hb.heal_case(case, before_html, after_html)["verdict"]
            conf = direct_confidence(case, before_html, after_html) if direct == "healed" else None
            r = {"id": case["id"], "role": case_role(case), "mkind": hb.mutation_kind(case), "direct": direct,
                 "verdict": None, "detail": "", "staged": None}
            st = first.get(name) or {}
            if not st.get("last_success_at"):
                r["verdict"], r["detail"] = "before-failed", f"the before page did not scrape good: {st.get('last_error')}"
            else:
                before_bad = [x for x in stored_since(reader, name, 0)
                              if not hb.matches_expected(json.loads(x["data"]), case["expected_before"], case)]
                mark = last_record_id(reader, name)
                site.set(web, Path(path, "after.html").read_bytes())
                sent = time.time()
                scraped = client.call(sock, "run", {"name": name, "wait": True}, timeout=200)
                fix, task_state = None, "-"
                if not scraped.get("ok"):
                    fix, _seen, task_state = rb.wait_doctor_done(reader, name, sent - 0.001, args.timeout)
                    if fix is not None and fix["outcome"] == "promoted":
                        client.call(sock, "run", {"name": name, "wait": True}, timeout=200)
                stored = stored_since(reader, name, mark)
                told = bool(alerts_since(reader, name, sent - 0.001))
                r["verdict"], r["detail"] = judge_case(case, bool(scraped.get("ok")), fix, task_state, stored, told)
                if fix is not None and fix["outcome"] == "staged":
                    r["staged"] = staged_candidate_right(reader, name, fix["version"], case, after_html)
                    r["detail"] = f"staged, candidate {r['staged']}"
                if fix is not None and r["verdict"] in ("refused", "WRONG", "control-paged") and fix["reason"]:
                    r["detail"] += f" [{fix['outcome']}: {fix['reason'][:200]}]"
                elif not scraped.get("ok") and r["verdict"] in ("refused", "control-paged"):
                    r["detail"] += f" [{scraped.get('error_type')}: {str(scraped.get('error'))[:160]}]"
                if before_bad:
                    r["verdict"] = "WRONG"
                    r["detail"] = f"the before page's record is not expected_before; {r['detail']}"
            if DIRECT_AS_DAEMON.get(direct) != r["verdict"] and not (direct == "healed" and r["verdict"] == "kept"):
                r["mismatch"] = True
            if conf is not None and conf < LOW_CONFIDENCE:
                # healed in process, but at a confidence the Deployer stages by design (never promotes)
                r["direct"] = direct = f"healed@{conf:.2f}"
            results.append(r)
            print(f"{case['id'][:60]:<60} {r['role']:<8} {direct:<15} {r['verdict']:<15} {r['detail'][:300]}", flush=True)
        reader.close()
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log_fh.close()
        site.stop()
        if tmp_obj is not None:
            tmp_obj.cleanup()

    print()
    for line in kind_table(results):
        print(line)
    mism = [r for r in results if r.get("mismatch")]
    print(f"\nMISMATCH (direct vs daemon): {len(mism)}")
    for r in mism:
        print(f"  {r['id']}: direct {r['direct']} / daemon {r['verdict']}: {r['detail'][:300]}")
    wrong = [r for r in results if r["verdict"] == "WRONG"]
    print(f"WRONG (stored data not the page's): {len(wrong)}")
    for r in wrong:
        print(f"  {r['id']}: {r['detail'][:300]}")
    if tmp_obj is None:
        print(f"state and daemon log kept in {tmpd}")
    pos = [r for r in results if r["role"] == "positive"]
    neg = [r for r in results if r["role"] == "negative"]
    ctrl = [r for r in results if r["role"] == "control"]
    staged = [r for r in results if r["staged"] is not None]
    print(f"wall {time.monotonic() - t_start:.0f}s; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(json.dumps({
        "cases": len(results),
        "heal_rate": round(sum(r["verdict"] in ("healed", "kept") for r in pos) / max(len(pos), 1), 4),
        "wrong_rate": round(len(wrong) / max(len(results), 1), 4),
        "wrong": len(wrong),
        "negatives_refused": round(sum(r["verdict"] == "refused-correct" for r in neg) / max(len(neg), 1), 4),
        "controls_kept": round(sum(r["verdict"] == "kept" for r in ctrl) / max(len(ctrl), 1), 4),
        "staged": len(staged),
        "staged_right": sum(r["staged"] == "right" for r in staged),
        "mismatches": len(mism),
        "mismatches_low_confidence": sum(r["direct"].startswith("healed@") for r in mism),
    }))
    return 0


def kind_table(results: list[dict]) -> list[str]:
    kinds: dict[str, list[dict]] = {}
    for r in results:
        kinds.setdefault(r["mkind"], []).append(r)
    out = [f"{'mutation kind':<28} {'cases':>5} {'healed':>9} {'wrong':>5} {'neg refused':>11} {'ctrl kept':>9} "
           f"{'staged':>6}"]

    def frac(part: int, whole: list) -> str:
        return f"{part}/{len(whole)}" if whole else "-"
    for k in sorted(kinds):
        rs = kinds[k]
        pos = [r for r in rs if r["role"] == "positive"]
        neg = [r for r in rs if r["role"] == "negative"]
        ctrl = [r for r in rs if r["role"] == "control"]
        out.append(f"{k:<28} {len(rs):>5} {frac(sum(r['verdict'] in ('healed', 'kept') for r in pos), pos):>9} "
                   f"{sum(r['verdict'] == 'WRONG' for r in rs):>5} "
                   f"{frac(sum(r['verdict'] == 'refused-correct' for r in neg), neg):>11} "
                   f"{frac(sum(r['verdict'] == 'kept' for r in ctrl), ctrl):>9} "
                   f"{sum(r['staged'] is not None for r in rs):>6}")
    return out


if __name__ == "__main__":
    sys.exit(main())
