"""The fleet's success metrics: the math over rows, and the window's rows from a real database."""

from __future__ import annotations

import pytest

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.stats import compute, meets, percentile
from healerd.store import fixes, sources
from healerd.store.db import open_db
from healerd.store.stats import window_rows


def fix(outcome, strategy="builtin", at=1000.0, failed_at=None, verdict=None, data_gone=0):
    return {"outcome": outcome, "strategy": strategy, "created_at": at, "failure_started_at": failed_at,
            "production_verdict": verdict, "data_gone": data_gone}


def test_percentile_is_nearest_rank():
    assert percentile([], 90) is None
    assert percentile([5.0], 90) == 5.0
    assert percentile(list(range(1, 11)), 90) == 9
    assert percentile(list(range(1, 11)), 50) == 5
    assert percentile([3, 1, 2], 100) == 3


def test_the_metrics_from_rows():
    rows = [
        fix("promoted", "builtin", at=160, failed_at=100, verdict="passed"),        # recovered in 60 s
        fix("promoted", "memory", at=1120, failed_at=1000, verdict="false_positive"),  # 120 s
        fix("promoted", "external", at=2600, failed_at=2000),                         # 600 s, still on probation
        fix("promoted", "merge", at=3030, failed_at=3000, verdict="passed"),          # 30 s
        fix("rejected", "builtin"), fix("error", "external"), fix("staged", "external"),
        fix("declined", "external"),                                                  # spends no attempt
    ]
    calls = [{"duration_ms": 1000.0, "outcome": "healed"}, {"duration_ms": 3000.0, "outcome": "timeout"},
             {"duration_ms": 2000.0, "outcome": "healed"}]
    got = compute(fixes=rows, sources=20, quarantined=3, healer_calls=calls, window_s=604800.0, rollbacks=2)
    # passed probation: 2; failed: the rejected, the crashed and the false positive (on probation
    # and staged are in neither)
    assert got["fix_success_rate"] == round(2 / 5, 4)
    assert got["false_positive_rate"] == round(1 / 3, 4)        # of the three with a verdict
    assert got["quarantine_rate"] == 0.15
    assert got["median_recovery_s"] == 90.0                     # of 30, 60, 120, 600
    assert got["p90_recovery_s"] == 600.0
    assert got["heals_by_rung"] == {"memory": 1, "builtin": 1, "external": 1, "merge": 1}
    assert got["healer_calls"] == {"count": 3, "median_latency_ms": 2000.0, "by_outcome": {"healed": 2, "timeout": 1}}
    assert got["window_s"] == 604800.0
    assert got["rollbacks"] == 2 and got["false_positives"] == 1 and got["fixes_judged"] == 3
    assert got["targets"]["fix_success_rate"] == {"op": ">=", "target": 0.8, "met": False}
    assert got["targets"]["false_positive_rate"]["met"] is False
    assert got["targets"]["quarantine_rate"] == {"op": "<", "target": 0.1, "met": False}
    assert got["targets"]["median_recovery_s"] == {"op": "<", "target": 300.0, "met": True}
    assert got["targets"]["p90_recovery_s"]["met"] is False


def test_no_data_gives_no_rates_rather_than_zero():
    got = compute(fixes=[], sources=0, quarantined=0, healer_calls=[], window_s=3600.0)
    for key in ("fix_success_rate", "false_positive_rate", "quarantine_rate", "median_recovery_s", "p90_recovery_s"):
        assert got[key] is None
        assert got["targets"][key]["met"] is None
    assert got["heals_by_rung"] == {"memory": 0, "builtin": 0, "external": 0}
    assert got["healer_calls"]["count"] == 0 and got["healer_calls"]["median_latency_ms"] is None


@pytest.mark.parametrize("metric, value, ok", [
    ("fix_success_rate", 0.8, True), ("fix_success_rate", 0.79, False),
    ("false_positive_rate", 0.049, True), ("false_positive_rate", 0.05, False),
    ("quarantine_rate", 0.1, False), ("median_recovery_s", 299.9, True), ("median_recovery_s", 300.0, False),
    ("heals_by_rung", 3, None),
])
def test_targets(metric, value, ok):
    assert meets(metric, value) is ok


def test_the_windows_rows_from_the_database(tmp_path):
    conn = open_db(tmp_path / "healerd.db")
    bp = Blueprint(fields={"t": FieldSpec("t", "h1")}, url="http://127.0.0.1:9/p")
    for name in ("a", "b", "c", "d"):
        sources.add(conn, name, bp, now=10.0)
    fixes.record(conn, source_name="a", error_type="PARSE_ERROR", strategy="builtin", outcome="promoted",
                 reason="", failure_started_at=900.0, now=1000.0)
    fixes.record(conn, source_name="a", error_type="PARSE_ERROR", strategy="builtin", outcome="rejected",
                 reason="", now=50.0)                                         # before the window
    with conn:
        conn.execute("UPDATE fix_history SET production_verdict = 'false_positive' WHERE created_at = 1000.0")
        # b was quarantined inside the window and is back; c has been quarantined since before it.
        conn.execute("INSERT INTO source_events (source_name, from_state, to_state, trigger, reason, at) "
                     "VALUES ('b', 'DEGRADED', 'QUARANTINED', 'quarantine', '', 950.0), "
                     "('d', 'DEGRADED', 'QUARANTINED', 'quarantine', '', 40.0), "
                     "('a', 'ACTIVE', 'ACTIVE', 'rollback', 'rolled back', 990.0)")
        conn.execute("UPDATE source_health SET state = 'QUARANTINED' WHERE source_name = 'c'")
        conn.execute("INSERT INTO healer_calls (source_name, cycle, backend, started_at, duration_ms, outcome) "
                     "VALUES ('a', 1, 'code-healer', 980.0, 1500.0, 'healed'), ('a', 1, 'code-healer', 5.0, 9.0, 'timeout')")
    got = window_rows(conn, since=100.0)
    conn.close()
    assert [f["outcome"] for f in got["fixes"]] == ["promoted"]
    assert got["sources"] == 4 and got["quarantined"] == 2 and got["rollbacks"] == 1
    assert got["healer_calls"] == [{"duration_ms": 1500.0, "outcome": "healed"}]
    m = compute(window_s=900.0, **got)
    assert m["false_positive_rate"] == 1.0 and m["quarantine_rate"] == 0.5 and m["median_recovery_s"] == 100.0
