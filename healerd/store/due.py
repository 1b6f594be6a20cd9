"""What the Scheduler reads to keep its due order (healerd.core.due.DueIndex) and to build a job.

The index is read whole once (`schedulable`), then kept by the changes the schema's triggers
note in `status_changes` (a source's `next_run_at`, `paused`, `url`, lifecycle state: every
column that decides whether and when it is due is one of the noted ones): each Tick reads
only the sources noted since the `rev` it last saw (`changed_since`), by the index on `rev`.
"""

from __future__ import annotations

import json

import apsw

from healerd.core.due import DueIndex
from healerd.store.sql import row, rows, scalar

# The one definition of "can be scheduled": a source's next run time when it can, else NULL.
_AT = "CASE WHEN s.paused = 0 AND h.state IN ('ACTIVE','DEGRADED') THEN s.next_run_at END"

JOB_COLUMNS = ("s.name, s.url, s.host, s.etag, s.last_modified, pv.version, pv.body, sn.sha256 AS good_sha "
               "FROM sources s JOIN source_health h ON h.source_name = s.name "
               "JOIN parser_versions pv ON pv.source_name = s.name AND pv.status = 'production' "
               "LEFT JOIN snapshots sn ON sn.source_name = s.name AND sn.kind = 'last_good'")


def schedulable(conn: apsw.Connection) -> tuple[int, list[tuple[str, str, float]]]:
    """(the newest change's rev, every schedulable source as (name, host, next_run_at)), read in one
    transaction."""
    with conn:
        rev = scalar(conn, "SELECT COALESCE(max(rev), 0) FROM status_changes")
        found = conn.execute(f"SELECT s.name, s.host, {_AT} AS at FROM sources s "
                             "JOIN source_health h ON h.source_name = s.name "
                             "WHERE s.paused = 0 AND s.next_run_at IS NOT NULL").fetchall()
    return int(rev), [(str(name), str(host), float(at)) for name, host, at in found if at is not None]


def changed_since(conn: apsw.Connection, rev: int) -> tuple[int, list[tuple[str, str | None, float | None]]]:
    """(the newest rev, (name, host, next run or None when it cannot be scheduled) for every source
    noted after `rev`, removed ones included (host None))."""
    with conn:
        top = scalar(conn, "SELECT COALESCE(max(rev), 0) FROM status_changes")
        if top == rev:
            return rev, []
        found = conn.execute(f"SELECT c.source_name, s.host, {_AT} FROM status_changes c "
                             "LEFT JOIN sources s ON s.name = c.source_name "
                             "LEFT JOIN source_health h ON h.source_name = c.source_name "
                             "WHERE c.rev > ?", (rev,)).fetchall()
    return int(top), [(str(name), None if host is None else str(host), None if at is None else float(at))
                      for name, host, at in found]


def jobs(conn: apsw.Connection, names: list[str], now: float) -> list[dict]:
    """The job rows of `names` (in that order) that are still schedulable and due at `now`."""
    if not names:
        return []
    found = rows(conn, f"SELECT {JOB_COLUMNS} WHERE s.name IN (SELECT value FROM json_each(?)) "
                       "AND s.paused = 0 AND h.state IN ('ACTIVE','DEGRADED') AND s.next_run_at <= ?",
                 (json.dumps(names), now))
    by_name = {r["name"]: r for r in found}
    return [by_name[n] for n in names if n in by_name]


def job(conn: apsw.Connection, name: str) -> dict | None:
    """`name`'s job row, due or not (`healerctl run`), or None when there is no such source."""
    return row(conn, f"SELECT {JOB_COLUMNS} WHERE s.name = ?", (name,))


def due_jobs(conn: apsw.Connection, now: float, skip_hosts, skip_names, limit: int) -> list[dict]:
    """Up to `limit` due sources' job rows, round-robin across hosts, without `skip_hosts` and
    `skip_names`, from an index read whole (the Scheduler keeps its own and reads only the changes)."""
    _, found = schedulable(conn)
    return jobs(conn, DueIndex(found).due(now, skip_hosts, skip_names, limit), now)
