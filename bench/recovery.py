"""Time from the first failed scrape to the promoted fix, through the whole daemon, over a corpus.

    python bench/recovery.py [CORPUS_DIR] [--case SUBSTRING] [--timeout 60] [--tick 0.2s] [--keep DIR]

CORPUS_DIR defaults to tests/data/corpus (format: its README). For every case that
can be healed and really breaks (heal_possible true, no_break not set):

1. a local HTTP server on 127.0.0.1 serves the case's before.html at its own path;
   one real daemon (`healerd run`, subprocess) gets one source per case, with a
   blueprint made from the case's items/fields (every = 1h, so nothing runs on a
   schedule while it is measured), and scrapes each once, good;
2. then, one case at a time: the page switches to after.html, the bench sends the
   control op `run` (scrape now and wait), and waits until the Doctor has finished
   the FIX task that failure queued (its fix_history row and its task row);
3. a promoted fix is checked: one more `run` with the new production parser, and
   its newest record compared with the case's expected_after.

The recovery time is the daemon's own: fix_history.created_at - failure_started_at
(first failed scrape -> promoted fix, what `fixes.metrics` calls median_recovery_s).
The wall column is what the bench saw: from sending `run` to seeing the fix row.
Neither includes a schedule wait (the scrape is triggered at once). Cases the healer
refuses ("refused": no candidate; the daemon's fix_history says rejected) or whose
candidate the Deployer rejects ("rejected") are listed with their outcome and excluded
from the median; cases whose broken page still passes validation are "undetected".

Daemon config: the built-in healer only (ladder = ["builtin"]); politeness_delay 0
and systemic_threshold 1000, because all cases share the one local host, where in
real life they are different sites. The "direct" column is bench/heal.py's verdict
for the same case (the healer called as a function); a case healed directly but not
promoted through the daemon is flagged MISMATCH.

Prints a table per case and, as its last line, one JSON object:
{"cases", "promoted", "median_recovery_s", "p90_recovery_s", "max_recovery_s", ...}.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from benchutil import bin_cmd, percentile

from healerd.control import client
from healerd.store.db import connect, db_path
from healerd.store.sql import rows

HERE = Path(__file__).resolve().parent
DEFAULT_CORPUS = HERE.parent / "tests" / "data" / "corpus"
FINAL_TASK_STATES = ("COMPLETED", "FAILED", "QUARANTINED")


def _load_heal_bench():
    spec = importlib.util.spec_from_file_location("bench_heal", HERE / "heal.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


hb = _load_heal_bench()


class Site:
    """A local site whose pages the bench sets: path -> bytes; anything else is 404."""

    def __init__(self):
        self.pages: dict[str, bytes] = {}
        self.lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                with site.lock:
                    body = site.pages.get(self.path.split("?", 1)[0])
                status = 200 if body is not None else 404
                body = body if body is not None else b"<html><body>not found</body></html>"
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def set(self, path: str, body: bytes) -> None:
        with self.lock:
            self.pages[path] = body

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def config_text(tick: str) -> str:
    return f"""
[daemon]
scrapers = 2
politeness_delay = 0
tick = "{tick}"
log_level = "INFO"
[fetch]
per_host_concurrency = 4
[doctor]
ladder = ["builtin"]
systemic_threshold = 1000
"""


def source_name(idx: int, case_id: str) -> str:
    return f"c{idx:03d}-" + re.sub(r"[^A-Za-z0-9._-]", "_", case_id)[:120]


def blueprint_dict(case: dict) -> dict:
    d = hb.blueprint_of(case).to_dict()
    d["every"] = "1h"
    return d


def wait_for_socket(proc: subprocess.Popen, sock: str, log_path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"healerd exited with {proc.returncode}:\n{log_path.read_text(errors='replace')[-3000:]}")
        try:
            client.call(sock, "ping", timeout=5)
            return
        except client.DaemonUnreachable:
            time.sleep(0.05)
    raise RuntimeError(f"healerd did not answer on {sock}:\n{log_path.read_text(errors='replace')[-3000:]}")


def wait_first_scrapes(sock: str, names: list[str], timeout: float) -> dict[str, dict]:
    """Until every source has scraped once (good or not); returns the status objects by name."""
    deadline = time.monotonic() + timeout
    wanted = set(names)
    while True:
        objs = {s["name"]: s for s in client.call(sock, "status", {}, timeout=30)["sources"] if s["name"] in wanted}
        done = all(o["last_success_at"] or o["last_failure_at"] for o in objs.values()) and len(objs) == len(wanted)
        if done or time.monotonic() > deadline:
            return objs
        time.sleep(0.1)


def wait_doctor_done(reader, name: str, since: float, timeout: float) -> tuple[dict | None, float | None, str]:
    """Poll the daemon's database until the FIX task queued at/after `since` is finished.

    Returns (fix_history row or None, wall time the fix row was first seen, task state)."""
    deadline = time.monotonic() + timeout
    fix, seen = None, None
    task_state = "none"
    while time.monotonic() < deadline:
        if fix is None:
            got = rows(reader, "SELECT fix_id, outcome, strategy, reason, failure_started_at, created_at, duration_ms, "
                               "version FROM fix_history WHERE source_name = ? AND created_at >= ? "
                               "ORDER BY fix_id LIMIT 1", (name, since))
            if got:
                fix, seen = got[0], time.time()
        task = rows(reader, "SELECT state, error_message FROM task_queue WHERE type = 'FIX_SOURCE' AND target = ? "
                            "AND created_at >= ? ORDER BY task_id DESC LIMIT 1", (name, since))
        task_state = task[0]["state"] if task else "none"
        if task_state in FINAL_TASK_STATES:
            if fix is None:  # finished without an attempt row (declined, nothing to heal): look once more
                got = rows(reader, "SELECT fix_id, outcome, strategy, reason, failure_started_at, created_at, "
                                   "duration_ms, version FROM fix_history WHERE source_name = ? AND created_at >= ? "
                                   "ORDER BY fix_id LIMIT 1", (name, since))
                if got:
                    fix, seen = got[0], time.time()
            return fix, seen, task_state
        time.sleep(0.01)
    return fix, seen, f"timeout ({task_state})"


def verify_promoted(sock: str, name: str, case: dict) -> tuple[bool, str]:
    """Scrape once more with the promoted parser and compare the newest record with expected_after."""
    res = client.call(sock, "run", {"name": name, "wait": True}, timeout=200)
    if not res.get("ok"):
        return False, f"the promoted parser fails: {res.get('error_type')}: {res.get('error')}"
    recs = client.call(sock, "records", {"name": name, "limit": 1}, timeout=30)
    if not recs:
        return False, "no record"
    data = recs[0]["data"]
    if hb.matches_expected(data, case["expected_after"], case):
        return True, ""
    return False, f"got {json.dumps(data, ensure_ascii=False)[:200]}"


def direct_verdict(path: str, case: dict) -> str:
    before = Path(path, "before.html").read_text(encoding="utf-8", errors="replace")
    after = Path(path, "after.html").read_text(encoding="utf-8", errors="replace")
    try:
        ok, new_bp, changed, _ = hb.run_builtin(case, before, after)
    except Exception as exc:
        return f"crash {type(exc).__name__}"
    return hb.judge(case, ok, new_bp, changed, after)[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("corpus", nargs="?", default=str(DEFAULT_CORPUS))
    ap.add_argument("--case", help="only cases whose id contains this")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the Doctor per case")
    ap.add_argument("--tick", default="0.2s", help="[daemon] tick of the daemon (default: the default config's)")
    ap.add_argument("--keep", help="keep the daemon's state dir and log here instead of a temp dir")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.corpus):
        print(f"error: {args.corpus} is not a folder", file=sys.stderr)
        return 2
    all_cases = hb.load_cases(args.corpus, args.case)
    cases = [(p, c) for p, c in all_cases if c["heal_possible"] and not c.get("no_break")]
    if not cases:
        print(f"error: no healable, breaking case below {args.corpus}", file=sys.stderr)
        return 2
    print(f"{len(all_cases)} cases, {len(cases)} healable that break (heal_possible, not no_break); "
          f"negatives and no-break controls are not timed")

    tmp_obj = None
    if args.keep:
        tmpd = Path(args.keep).resolve()
        if tmpd.exists():
            shutil.rmtree(tmpd)
        tmpd.mkdir(parents=True)
    else:
        tmp_obj = tempfile.TemporaryDirectory(prefix="healerd-bench-rec-")
        tmpd = Path(tmp_obj.name)
    site = Site()
    state, sock, cfg, log_path = tmpd / "state", str(tmpd / "healerd.sock"), tmpd / "healerd.toml", tmpd / "daemon.log"
    cfg.write_text(config_text(args.tick))
    log_fh = open(log_path, "wb")
    proc = subprocess.Popen(bin_cmd("healerd") + ["run", "--config", str(cfg), "--state-dir", str(state),
                                                  "--socket", sock],
                            cwd=tmpd, stdout=log_fh, stderr=subprocess.STDOUT)
    results: list[dict] = []
    daemon_summary = None
    try:
        wait_for_socket(proc, sock, log_path)
        entries = []
        for i, (path, case) in enumerate(cases):
            name = source_name(i, case["id"])
            web = f"/case/{i}"
            site.set(web, Path(path, "before.html").read_bytes())
            client.call(sock, "add", {"name": name, "blueprint": blueprint_dict(case), "url": site.url(web), "wait": False},
                        timeout=30)
            entries.append((name, web, path, case))
        t_reg = time.monotonic()
        first = wait_first_scrapes(sock, [e[0] for e in entries], timeout=120)
        print(f"registered {len(entries)} sources; first scrapes done in {time.monotonic() - t_reg:.1f}s")
        reader = connect(db_path(state), readonly=True)

        print(f"\n{'case':<62} {'direct':<15} {'outcome':<12} {'recovery_s':>10} {'wall_s':>7} {'doctor_ms':>9}  check")
        for name, web, path, case in entries:
            r = {"id": case["id"], "name": name, "direct": direct_verdict(path, case), "outcome": None,
                 "recovery_s": None, "wall_s": None, "doctor_ms": None, "check": "", "reason": ""}
            st = first.get(name) or {}
            if not st.get("last_success_at"):
                r["outcome"] = "before-failed"
                r["reason"] = f"the before page did not scrape good: {st.get('last_error')}"
                results.append(r)
                print(f"{case['id'][:62]:<62} {r['direct']:<15} {r['outcome']:<12}")
                continue
            site.set(web, Path(path, "after.html").read_bytes())
            sent = time.time()
            scraped = client.call(sock, "run", {"name": name, "wait": True}, timeout=200)
            if scraped.get("ok"):
                r["outcome"] = "undetected"
                r["reason"] = "the broken page passed validation (no failure, nothing to heal)"
            else:
                fix, seen, task_state = wait_doctor_done(reader, name, sent - 0.001, args.timeout)
                if fix is None:
                    r["outcome"] = "no-attempt" if task_state in FINAL_TASK_STATES else "timeout"
                    r["reason"] = f"{scraped.get('error_type')}: task {task_state}"
                else:
                    r["outcome"] = fix["outcome"]
                    if fix["outcome"] == "rejected" and fix["reason"].startswith("builtin: refused"):
                        r["outcome"] = "refused"  # the healer gave no candidate (the daemon records it as rejected)
                    r["reason"] = fix["reason"]
                    r["doctor_ms"] = round(fix["duration_ms"], 1) if fix["duration_ms"] is not None else None
                    r["wall_s"] = round(seen - sent, 3)
                    if fix["outcome"] == "promoted" and fix["failure_started_at"]:
                        r["recovery_s"] = round(fix["created_at"] - fix["failure_started_at"], 3)
                        good, why = verify_promoted(sock, name, case)
                        r["check"] = "expected_after" if good else "WRONG"
                        if not good:
                            r["reason"] = why
            if r["direct"] == "healed" and r["outcome"] != "promoted":
                r["check"] = "MISMATCH"
            results.append(r)
            rec = f"{r['recovery_s']:.3f}" if r["recovery_s"] is not None else "-"
            wall = f"{r['wall_s']:.2f}" if r["wall_s"] is not None else "-"
            dms = f"{r['doctor_ms']:.0f}" if r["doctor_ms"] is not None else "-"
            print(f"{case['id'][:62]:<62} {r['direct']:<15} {r['outcome']:<12} {rec:>10} {wall:>7} {dms:>9}  {r['check']}",
                  flush=True)
        daemon_summary = client.call(sock, "status", {}, timeout=30)["summary"]
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

    not_promoted = [r for r in results if r["outcome"] != "promoted"]
    if not_promoted:
        print("\nnot promoted (excluded from the recovery figures):")
        for r in not_promoted:
            print(f"  {r['id']}: {r['outcome']}: {r['reason'][:300]}")
    wrong = [r for r in results if r["check"] == "WRONG"]
    for r in wrong:
        print(f"  WRONG value after promotion: {r['id']}: {r['reason']}")
    mismatches = [r["id"] for r in results if r["check"] == "MISMATCH"]
    rec = [r["recovery_s"] for r in results if r["recovery_s"] is not None]
    walls = [r["wall_s"] for r in results if r["outcome"] == "promoted" and r["wall_s"] is not None]
    outcomes: dict[str, int] = {}
    for r in results:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    print(f"\noutcomes: {outcomes}; healed directly (bench/heal.py): "
          f"{sum(1 for r in results if r['direct'] == 'healed')}; promoted through the daemon but not directly: "
          f"{sum(1 for r in results if r['outcome'] == 'promoted' and r['direct'] != 'healed')}")
    if mismatches:
        print(f"MISMATCH (healed directly, not promoted through the daemon): {', '.join(mismatches)}")
    if daemon_summary is not None:
        print(f"the daemon's own summary: median_recovery_s={daemon_summary.get('median_recovery_s')} "
              f"fix_success_rate={daemon_summary.get('fix_success_rate')}")
    if rec:
        print(f"recovery (first failed scrape -> promoted, daemon timestamps), {len(rec)} promoted: median "
              f"{statistics.median(rec):.3f}s p90 {percentile(rec, 90):.3f}s max {max(rec):.3f}s; "
              f"wall (run sent -> fix row seen) median {statistics.median(walls):.3f}s; target < 2 s median: "
              f"{'met' if statistics.median(rec) < 2.0 else 'MISSED'}")
    if tmp_obj is None:
        print(f"state and daemon log kept in {tmpd}")
    print(json.dumps({
        "cases": len(results),
        "promoted": len(rec),
        "median_recovery_s": round(statistics.median(rec), 3) if rec else None,
        "p90_recovery_s": round(percentile(rec, 90), 3) if rec else None,
        "max_recovery_s": round(max(rec), 3) if rec else None,
        "median_wall_s": round(statistics.median(walls), 3) if walls else None,
        "outcomes": outcomes,
        "wrong_after_promotion": len(wrong),
        "mismatches": mismatches,
        "daemon_median_recovery_s": daemon_summary.get("median_recovery_s") if daemon_summary else None,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
