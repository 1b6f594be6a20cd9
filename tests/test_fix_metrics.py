"""The fleet's fix metrics (every status answer carries them), counted in SQL, agree with their
definition: success rate = promoted / attempts that spent budget, median recovery = first
failure -> promoted."""

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
    recov = [r["created_at"] - r["failure_started_at"] for r in promoted if r["failure_started_at"]]
    return {"fix_attempts": len(attempts), "fixes_promoted": len(promoted),
            "fix_success_rate": round(len(promoted) / len(attempts), 3) if attempts else None,
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
        history.append(row)
        fixes.record(conn, source_name=row["source_name"], error_type="PARSE_ERROR", strategy="builtin",
                     outcome=row["outcome"], reason="r", failure_started_at=row["failure_started_at"],
                     now=row["created_at"])
    assert fixes.metrics(conn) == _by_definition(history, None)
    for n in names:
        assert fixes.metrics(conn, n) == _by_definition(history, n)
    conn.close()
