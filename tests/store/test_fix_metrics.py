"""The fleet's fix metrics (every status answer carries them), counted in SQL, agree with their
definition (docs/REFERENCE.md, `healerctl stats`): success rate = fixes that worked (passed their
probation, or read their layout until the site changed) / (those + failed attempts: rejected or
crashed, unless the refusal found the data gone, and production false positives); median
recovery = first failure -> promoted."""

from __future__ import annotations

import random
import statistics

from healerd.core.blueprint import from_dict
from healerd.store import fixes, sources
from healerd.store.db import open_db
from healerd.store.fixes import COUNTED_OUTCOMES


def _by_definition(history: list[dict], name: str | None) -> dict:
    got = [r for r in history if name is None or r["source_name"] == name]
    attempts = [r for r in got if r["outcome"] in COUNTED_OUTCOMES]
    promoted = [r for r in got if r["outcome"] == "promoted"]
    worked = [r for r in promoted if r["verdict"] in ("passed", "site_changed")]
    false_pos = [r for r in promoted if r["verdict"] == "false_positive"]
    judged = worked + false_pos
    failed = [r for r in got if r["outcome"] in ("rejected", "error") and not r["data_gone"]]
    gone = [r for r in got if r["outcome"] in ("rejected", "error") and r["data_gone"]]
    recov = [r["created_at"] - r["failure_started_at"] for r in promoted if r["failure_started_at"]]
    denominator = len(worked) + len(failed) + len(false_pos)
    return {"fix_attempts": len(attempts), "fixes_promoted": len(promoted), "fixes_passed": len(worked),
            "fixes_on_probation": len(promoted) - len(judged), "failed_attempts": len(failed) + len(false_pos),
            "data_gone_refusals": len(gone),
            "fix_success_rate": round(len(worked) / denominator, 4) if denominator else None,
            "median_recovery_s": round(statistics.median(recov), 3) if recov else None}


def test_fix_metrics_match_their_definition_for_the_fleet_and_each_source(tmp_path):
    conn = open_db(str(tmp_path / "healerd.db"))
    names = ["a", "b", "c", "d"]
    for n in names:
        sources.add(conn, n, from_dict({"url": f"http://x/{n}", "fields": {"t": {"css": "h1"}}}))
    assert fixes.metrics(conn) == _by_definition([], None)
    rng = random.Random(3)
    history = []
    for _ in range(400):
        row = {"source_name": rng.choice(names[:3]),   # d has none
               "outcome": rng.choice(("promoted", "rejected", "error", "staged", "declined")),
               "created_at": 1_700_000_000.0 + rng.uniform(0, 1e6),
               "failure_started_at": rng.choice((None, 0.0, 1_699_000_000.0 + rng.uniform(0, 1e6)))}
        row["verdict"] = rng.choice((None, "passed", "false_positive", "site_changed")) \
            if row["outcome"] == "promoted" else None
        row["data_gone"] = row["outcome"] in ("rejected", "error") and rng.random() < 0.3
        history.append(row)
        fid = fixes.record(conn, source_name=row["source_name"], error_type="PARSE_ERROR", strategy="builtin",
                           outcome=row["outcome"], reason="r", failure_started_at=row["failure_started_at"],
                           now=row["created_at"], data_gone=row["data_gone"])
        conn.execute("UPDATE fix_history SET production_verdict = ? WHERE fix_id = ?", (row["verdict"], fid))
    assert fixes.metrics(conn) == _by_definition(history, None)
    for n in names:
        assert fixes.metrics(conn, n) == _by_definition(history, n)
    conn.close()
