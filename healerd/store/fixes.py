"""fix_history: one row per fix attempt; the attempt window, success rate and recovery time."""

from __future__ import annotations

import json
import statistics
import time
from typing import cast

import apsw

from healerd.core.timeutil import iso
from healerd.store.sql import row, rows, scalar

COUNTED_OUTCOMES = ("promoted", "rejected", "error", "staged")  # 'declined' spends no attempt
FAILED_OUTCOMES = ("rejected", "error")


def record(conn: apsw.Connection, *, source_name: str, error_type: str, strategy: str, outcome: str, reason: str,
           diagnosis_context: dict | None = None, patch: str | None = None, validation: dict | None = None,
           deployed_to: str | None = None, version: int | None = None, fingerprint: str | None = None,
           duration_ms: float | None = None, failure_started_at: float | None = None, now: float | None = None,
           data_gone: bool = False) -> int:
    """One attempt's row. `data_gone`: a refusal that showed the data gone from the page (not a failure
    in the metrics, healerd.core.stats)."""
    now = time.time() if now is None else now
    with conn:
        conn.execute(
            "INSERT INTO fix_history (source_name, error_type, strategy, outcome, reason, diagnosis_context, "
            "patch_generated, validation_result, deployed_to, version, fingerprint, duration_ms, failure_started_at, "
            "created_at, data_gone) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (source_name, error_type, strategy, outcome, reason[:4000],
             json.dumps(diagnosis_context, sort_keys=True, default=str) if diagnosis_context else None,
             patch, json.dumps(validation) if validation else None, deployed_to, version, fingerprint, duration_ms,
             failure_started_at, now, int(bool(data_gone))),
        )
        rowid = conn.last_insert_rowid()
    return rowid


def attempts_in_window(conn: apsw.Connection, name: str, window_s: float, now: float | None = None,
                       after: float | None = None, outcomes: tuple[str, ...] = COUNTED_OUTCOMES) -> int:
    """Attempts that spent budget (not 'declined') in the window, and after `after` (an unquarantine resets)."""
    now = time.time() if now is None else now
    since = now - window_s
    if after is not None:
        since = max(since, after)
    return scalar(conn, "SELECT count(*) FROM fix_history WHERE source_name = ? AND created_at > ? AND outcome IN "
                        f"({','.join('?' * len(outcomes))})", (name, since, *outcomes)) or 0


def recent(conn: apsw.Connection, name: str, limit: int = 10, since: float | None = None) -> list[dict]:
    """The newest attempts (for the recovery context handed to the next one)."""
    out = []
    q = "SELECT * FROM fix_history WHERE source_name = ?"
    params: list = [name]
    if since is not None:
        q += " AND created_at > ?"
        params.append(since)
    for r in rows(conn, q + " ORDER BY fix_id DESC LIMIT ?", (*params, limit)):
        out.append({"strategy": r["strategy"], "outcome": r["outcome"], "reason": r["reason"], "at": iso(r["created_at"]),
                    "error_type": r["error_type"], "version": r["version"]})
    return out


def history_entries(conn: apsw.Connection, name: str) -> list[dict]:
    """Fix attempts for `healerctl history`, in its documented outcomes (docs/REFERENCE.md).

    A candidate held for a person is stored as outcome `staged` (it spends an attempt and the
    recovery context needs to tell it apart), but history shows only promoted, rejected,
    declined and error: it is shown as `declined`, with `staged: true` and the version to approve.
    """
    out = []
    for r in rows(conn, "SELECT * FROM fix_history WHERE source_name = ?", (name,)):
        e = {"kind": "fix", "at": iso(r["created_at"]), "_t": r["created_at"], "error_type": r["error_type"],
             "strategy": r["strategy"], "outcome": r["outcome"], "reason": r["reason"], "version": r["version"],
             "duration_ms": r["duration_ms"]}
        if r["outcome"] == "promoted":
            # Its production verdict: null while on probation, "passed", or "false_positive"
            # (it passed staging and failed within its first scrapes in production).
            e["production"] = r["production_verdict"]
            e["false_positive"] = r["production_verdict"] == "false_positive"
        if r["data_gone"]:
            e["data_gone"] = True   # a right refusal: the data is no longer on the page
        if r["outcome"] == "staged":
            e["outcome"] = "declined"
            e["staged"] = True
            e["reason"] = f"staged as version {r['version']} for approval: {r['reason']}"
        out.append(e)
    return out


def last_diff(conn: apsw.Connection, name: str) -> dict | None:
    """The structural diff the newest fix attempt of `name` worked from (kept in its context)."""
    r = row(conn, "SELECT created_at, diagnosis_context FROM fix_history WHERE source_name = ? "
                  "AND diagnosis_context LIKE '%html_diff%' ORDER BY fix_id DESC LIMIT 1", (name,))
    if r is None:
        return None
    diff = (json.loads(r["diagnosis_context"] or "{}") or {}).get("html_diff") or ""
    return {"at": iso(r["created_at"]), "diff": diff} if diff else None


def metrics(conn: apsw.Connection, name: str | None = None) -> dict:
    """Fix success rate (as `healerctl stats` defines it, healerd.core.stats) and median recovery time
    (first failure -> promoted), over the whole history of the sources registered now.

    Counted in SQL: the fleet's status asks for this on every answer, and the history only grows."""
    from healerd.core.stats import JUDGED, WORKED, fix_success_rate

    where, params = "", []
    if name:
        where, params = "WHERE source_name = ?", [name]
    counted = ", ".join(repr(o) for o in COUNTED_OUTCOMES)
    failed = ", ".join(repr(o) for o in FAILED_OUTCOMES)
    worked = ", ".join(repr(v) for v in WORKED)
    judged = ", ".join(repr(v) for v in JUDGED)
    counts = conn.execute(
        f"SELECT count(*) FILTER (WHERE outcome IN ({counted})), count(*) FILTER (WHERE outcome = 'promoted'), "
        f"count(*) FILTER (WHERE outcome = 'promoted' AND production_verdict IN ({worked})), "
        f"count(*) FILTER (WHERE outcome = 'promoted' AND production_verdict = 'false_positive'), "
        f"count(*) FILTER (WHERE outcome IN ({failed}) AND NOT data_gone), "
        f"count(*) FILTER (WHERE outcome IN ({failed}) AND data_gone), "
        f"count(*) FILTER (WHERE outcome = 'promoted' AND production_verdict IN ({judged})) "
        f"FROM fix_history {where}", params).fetchall()[0]
    attempts, promoted, ok, false_pos, failures, gone, judged_n = (cast(int, c) for c in counts)
    recov = [r[0] for r in conn.execute(
        f"SELECT created_at - failure_started_at FROM fix_history {where} {'AND' if where else 'WHERE'} "
        "outcome = 'promoted' AND failure_started_at", params)]
    return {
        "fix_attempts": attempts,
        "fixes_promoted": promoted,
        "fixes_passed": ok,
        "fixes_on_probation": promoted - judged_n,
        "failed_attempts": failures + false_pos,
        "data_gone_refusals": gone,
        "fix_success_rate": fix_success_rate(ok, failures + false_pos),
        "median_recovery_s": round(statistics.median(recov), 3) if recov else None,
    }


def guess_waiting(conn: apsw.Connection, name: str, fingerprint: str | None) -> int | None:
    """The staged version a person has to approve, when the source's newest fix attempt staged it
    for the same failure (`fingerprint`) as now: the Doctor would only decline again, so it waits
    (a new failure, a changed page, or `healerctl heal` runs it again)."""
    if not fingerprint:
        return None
    return scalar(conn, "SELECT f.version FROM fix_history f JOIN parser_versions v ON v.source_name = f.source_name "
                        "AND v.version = f.version WHERE f.fix_id = (SELECT max(fix_id) FROM fix_history WHERE "
                        "source_name = ?) AND v.status = 'staging' AND f.fingerprint = ?", (name, fingerprint))
