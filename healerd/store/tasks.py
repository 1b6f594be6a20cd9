"""The task queue (task_queue table): work that must survive a restart.

Claiming is one UPDATE ... RETURNING statement, so two workers (threads or
processes) can never take the same task. At start, `recover_in_progress` puts the
tasks a crash left IN_PROGRESS back to PENDING with retry_count + 1; a task past
its max_retries becomes FAILED with its error kept.
"""

from __future__ import annotations

import json
import time

import apsw

from healerd.store.sql import rows

SCRAPE_SOURCE = "SCRAPE_SOURCE"
FIX_SOURCE = "FIX_SOURCE"
ADD_SOURCE = "ADD_SOURCE"
REFRESH_SOURCE = "REFRESH_SOURCE"


def enqueue(conn: apsw.Connection, type_: str, target: str, context: dict | None = None, *,
            priority: int = 5, max_retries: int = 3, not_before: float | None = None,
            dedupe: bool = True, now: float | None = None) -> int:
    """Add a task; with `dedupe`, an existing PENDING/IN_PROGRESS task of the same type and target is reused."""
    now = time.time() if now is None else now
    with conn:
        if dedupe:
            found = rows(conn, "SELECT task_id FROM task_queue WHERE type = ? AND target = ? "
                               "AND state IN ('PENDING','IN_PROGRESS') ORDER BY task_id LIMIT 1", (type_, target))
            if found:
                return found[0]["task_id"]
        conn.execute(
            "INSERT INTO task_queue (type, target, state, priority, created_at, not_before, max_retries, context_json) "
            "VALUES (?, ?, 'PENDING', ?, ?, ?, ?, ?)",
            (type_, target, priority, now, not_before, max_retries, json.dumps(context or {}, sort_keys=True)),
        )
        task_id = conn.last_insert_rowid()
    return task_id


def claim(conn: apsw.Connection, worker: str, types: tuple[str, ...] | None = None,
          now: float | None = None) -> dict | None:
    """Atomically take the next due PENDING task (lowest priority number, then oldest)."""
    now = time.time() if now is None else now
    type_filter = ""
    params: list = [worker, now, now]
    if types:
        type_filter = f" AND type IN ({','.join('?' * len(types))})"
        params.extend(types)
    with conn:
        got = rows(
            conn,
            "UPDATE task_queue SET state = 'IN_PROGRESS', claimed_by = ?, started_at = ? "
            "WHERE task_id = (SELECT task_id FROM task_queue WHERE state = 'PENDING' "
            "AND (not_before IS NULL OR not_before <= ?)" + type_filter +
            " ORDER BY priority, task_id LIMIT 1) AND state = 'PENDING' RETURNING *",
            params,
        )
    return _decode(got[0]) if got else None


def claim_by_id(conn: apsw.Connection, task_id: int, worker: str, now: float | None = None) -> dict | None:
    now = time.time() if now is None else now
    with conn:
        got = rows(conn, "UPDATE task_queue SET state = 'IN_PROGRESS', claimed_by = ?, started_at = ? "
                         "WHERE task_id = ? AND state = 'PENDING' RETURNING *", (worker, now, task_id))
    return _decode(got[0]) if got else None


def complete(conn: apsw.Connection, task_id: int, context: dict | None = None, now: float | None = None) -> None:
    now = time.time() if now is None else now
    with conn:
        if context is None:
            conn.execute("UPDATE task_queue SET state = 'COMPLETED', completed_at = ? WHERE task_id = ?", (now, task_id))
        else:
            conn.execute("UPDATE task_queue SET state = 'COMPLETED', completed_at = ?, context_json = ? WHERE task_id = ?",
                         (now, json.dumps(context, sort_keys=True), task_id))


def fail(conn: apsw.Connection, task_id: int, error: str, *, retry: bool = True,
         not_before: float | None = None, now: float | None = None) -> str:
    """Record a failed run: back to PENDING with retry_count + 1, or FAILED past max_retries. Returns the new state."""
    now = time.time() if now is None else now
    with conn:
        got = rows(conn, "SELECT retry_count, max_retries FROM task_queue WHERE task_id = ?", (task_id,))
        if not got:
            return "MISSING"
        retries = got[0]["retry_count"] + 1
        state = "PENDING" if retry and retries <= got[0]["max_retries"] else "FAILED"
        conn.execute(
            "UPDATE task_queue SET state = ?, retry_count = ?, error_message = ?, not_before = ?, "
            "completed_at = CASE WHEN ? = 'FAILED' THEN ? ELSE NULL END, claimed_by = NULL WHERE task_id = ?",
            (state, retries, error[:4000], not_before, state, now, task_id),
        )
    return state


def release(conn: apsw.Connection, task_id: int, not_before: float | None = None) -> None:
    """Give a claimed task back untouched (shutdown, or work that must wait)."""
    with conn:
        conn.execute("UPDATE task_queue SET state = 'PENDING', claimed_by = NULL, not_before = ? "
                     "WHERE task_id = ? AND state = 'IN_PROGRESS'", (not_before, task_id))


def set_state(conn: apsw.Connection, task_id: int, state: str, error: str | None = None,
              now: float | None = None) -> None:
    now = time.time() if now is None else now
    with conn:
        conn.execute("UPDATE task_queue SET state = ?, error_message = COALESCE(?, error_message), completed_at = ? "
                     "WHERE task_id = ?", (state, error, now, task_id))


def recover_in_progress(conn: apsw.Connection, now: float | None = None) -> dict:
    """After a crash: IN_PROGRESS -> PENDING (retry_count + 1), or FAILED when past max_retries."""
    now = time.time() if now is None else now
    with conn:
        requeued = rows(conn, "UPDATE task_queue SET state = 'PENDING', retry_count = retry_count + 1, claimed_by = NULL, "
                              "error_message = COALESCE(error_message, 'interrupted by a restart') "
                              "WHERE state = 'IN_PROGRESS' AND retry_count + 1 <= max_retries RETURNING task_id")
        failed = rows(conn, "UPDATE task_queue SET state = 'FAILED', retry_count = retry_count + 1, claimed_by = NULL, "
                            "completed_at = ?, error_message = COALESCE(error_message, 'interrupted by a restart') "
                            "|| ' (gave up after ' || (retry_count + 1) || ' tries)' "
                            "WHERE state = 'IN_PROGRESS' RETURNING task_id", (now,))
    return {"requeued": [r["task_id"] for r in requeued], "failed": [r["task_id"] for r in failed]}


def requeue_in_progress(conn: apsw.Connection) -> None:
    """When the daemon stops its actors (shutdown, a reload with a new configuration): every
    IN_PROGRESS task back to PENDING, unclaimed, without counting a retry (it was stopped, it did
    not fail)."""
    with conn:
        conn.execute("UPDATE task_queue SET state = 'PENDING', claimed_by = NULL WHERE state = 'IN_PROGRESS'")


def pending_for(conn: apsw.Connection, type_: str, target: str) -> dict | None:
    got = rows(conn, "SELECT * FROM task_queue WHERE type = ? AND target = ? AND state IN ('PENDING','IN_PROGRESS') "
                     "ORDER BY task_id LIMIT 1", (type_, target))
    return _decode(got[0]) if got else None


def list_tasks(conn: apsw.Connection, state: str | None = None) -> list[dict]:
    if state:
        return [_decode(r) for r in rows(conn, "SELECT * FROM task_queue WHERE state = ? ORDER BY task_id", (state,))]
    return [_decode(r) for r in rows(conn, "SELECT * FROM task_queue ORDER BY task_id")]


def purge_finished(conn: apsw.Connection, older_than: float) -> int:
    with conn:
        conn.execute("DELETE FROM task_queue WHERE state IN ('COMPLETED','FAILED') AND completed_at < ?", (older_than,))
        purged = conn.changes()
    return purged


def _decode(r: dict) -> dict:
    r = dict(r)
    try:
        r["context"] = json.loads(r.get("context_json") or "{}")
    except ValueError:
        r["context"] = {}
    return r
