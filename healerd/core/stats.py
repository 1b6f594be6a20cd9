"""The fleet's success metrics over a window, from plain rows (no database here).

    fix success rate     fixes that worked / (those + failed fix attempts)          target >= 80 %
                         worked: promoted and passed its probation (or read every page of its
                         layout until the site changed again: verdict `site_changed`);
                         failed: a rejected or crashed attempt that was not a refusal showing
                         the data gone (`data_gone`), or a promoted fix that was a production
                         false positive. Fixes still on probation, candidates held for a person
                         and refusals that found the data gone are in neither.
    false positive rate  promoted fixes that failed on the layout they were proved on /
                         promoted fixes whose probation is over                     target <  5 %
    quarantine rate      sources quarantined at any time in the window /
                         sources                                                    target < 10 %
    recovery time        first failed scrape -> fix promoted (median, p90)          target <  5 min
    heals by rung        promoted fixes per strategy (memory, builtin, external, ...)
    healer calls         external healer calls and their median latency
    rollbacks            automatic rollbacks (`manual_rollbacks`: a person's, counted apart)

Only the sources registered now count: a removed source's history leaves with it.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

COUNTED_OUTCOMES = ("promoted", "rejected", "error", "staged")   # as the attempt budget counts them
FAILED_OUTCOMES = ("rejected", "error")
WORKED = ("passed", "site_changed")       # production verdicts of a fix that did its job
JUDGED = ("passed", "site_changed", "false_positive")
RUNGS = ("memory", "builtin", "external")

# metric -> (comparison, target)
TARGETS: dict[str, tuple[str, float]] = {
    "fix_success_rate": (">=", 0.80),
    "false_positive_rate": ("<", 0.05),
    "quarantine_rate": ("<", 0.10),
    "median_recovery_s": ("<", 300.0),
    "p90_recovery_s": ("<", 300.0),
}


def percentile(values: list[float], p: float) -> float | None:
    """The nearest-rank percentile (p in 0..100) of `values`; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def meets(metric: str, value: float | None) -> bool | None:
    if value is None or metric not in TARGETS:
        return None
    op, target = TARGETS[metric]
    return value >= target if op == ">=" else value < target


def _rate(n: int, d: int) -> float | None:
    return round(n / d, 4) if d else None


def is_failed_attempt(fix: dict) -> bool:
    """A failed fix attempt: rejected or crashed, unless the refusal showed the data gone."""
    return fix["outcome"] in FAILED_OUTCOMES and not fix.get("data_gone")


def fix_success_rate(worked: int, failed: int) -> float | None:
    """Fixes that worked / (those + failed attempts); None when there is neither."""
    return _rate(worked, worked + failed)


def compute(*, fixes: list[dict], sources: int, quarantined: int, healer_calls: list[dict], window_s: float,
            rollbacks: int = 0, manual_rollbacks: int = 0) -> dict:
    """The metrics from the window's rows.

    `fixes`: fix_history rows ({"outcome", "strategy", "created_at", "failure_started_at",
    "production_verdict", "data_gone"}); `sources`: how many sources there are; `quarantined`: how many
    were QUARANTINED at any time in the window; `healer_calls`: {"duration_ms", "outcome"};
    `rollbacks` / `manual_rollbacks`: the automatic / a person's rollbacks in the window."""
    attempts = [f for f in fixes if f["outcome"] in COUNTED_OUTCOMES]
    promoted = [f for f in fixes if f["outcome"] == "promoted"]
    judged = [f for f in promoted if f.get("production_verdict") in JUDGED]
    worked = [f for f in judged if f["production_verdict"] in WORKED]
    false_pos = [f for f in judged if f["production_verdict"] == "false_positive"]
    failed = [f for f in fixes if is_failed_attempt(f)]
    data_gone = [f for f in fixes if f["outcome"] in FAILED_OUTCOMES and f.get("data_gone")]
    recovery = [f["created_at"] - f["failure_started_at"] for f in promoted
                if f.get("failure_started_at") is not None and f["created_at"] >= f["failure_started_at"]]
    by_rung = {r: 0 for r in RUNGS}
    for f in promoted:
        by_rung[f["strategy"]] = by_rung.get(f["strategy"], 0) + 1
    latencies = [c["duration_ms"] for c in healer_calls if c.get("duration_ms") is not None]
    by_outcome: dict[str, int] = {}
    for c in healer_calls:
        by_outcome[c["outcome"]] = by_outcome.get(c["outcome"], 0) + 1
    median_rec = statistics.median(recovery) if recovery else None
    p90_rec = percentile(recovery, 90)
    out: dict[str, Any] = {
        "window_s": window_s,
        "fix_success_rate": fix_success_rate(len(worked), len(failed) + len(false_pos)),
        "false_positive_rate": _rate(len(false_pos), len(judged)),
        "quarantine_rate": _rate(quarantined, sources),
        "median_recovery_s": round(median_rec, 3) if median_rec is not None else None,
        "p90_recovery_s": round(p90_rec, 3) if p90_rec is not None else None,
        "heals_by_rung": by_rung,
        "healer_calls": {"count": len(healer_calls),
                         "median_latency_ms": round(statistics.median(latencies), 1) if latencies else None,
                         "by_outcome": by_outcome},
        "fix_attempts": len(attempts),
        "fixes_promoted": len(promoted),
        "fixes_passed": len(worked),
        "fixes_on_probation": len(promoted) - len(judged),
        "failed_attempts": len(failed),
        "data_gone_refusals": len(data_gone),
        "fixes_judged": len(judged),
        "false_positives": len(false_pos),
        "rollbacks": rollbacks,
        "manual_rollbacks": manual_rollbacks,
        "sources": sources,
        "sources_quarantined": quarantined,
    }
    out["targets"] = {k: {"op": op, "target": t, "met": meets(k, out[k])} for k, (op, t) in TARGETS.items()}
    return out
