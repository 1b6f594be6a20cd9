"""What the Doctor reads between its decisions, each behind a function named for what it returns:
a source's state and last error class, whether a candidate was already
judged and rejected in this failure episode, the external healer calls of a window, the newest
budget pause alert. (The source's row, versions, snapshots and fix attempts are read through
`sources`, `versions`, `snapshots` and `fixes`; the systemic halt through `health_writes.systemic_halt`.)"""

from __future__ import annotations

import apsw

from healerd.store import versions
from healerd.store.sql import row, scalar


def source_state(conn: apsw.Connection, name: str) -> str | None:
    """The source's lifecycle state (None when it is not registered)."""
    return scalar(conn, "SELECT state FROM source_health WHERE source_name = ?", (name,))


def last_error_type(conn: apsw.Connection, name: str) -> str | None:
    """The error class of the source's newest failed scrape."""
    return scalar(conn, "SELECT last_error_type FROM source_health WHERE source_name = ?", (name,))


def rejected_since(conn: apsw.Connection, name: str, body: str, since: float | None, *,
                   not_judged: tuple[str, ...] = ()) -> bool:
    """A version of `name` with exactly this blueprint was rejected since `since`, after being judged.

    A version rejected because a restart cut its deploy short (versions.INTERRUPTED), or with a
    note starting with one of `not_judged` (the live page could not be fetched to validate it),
    was never judged: it does not count."""
    sql = ("SELECT 1 AS x FROM parser_versions WHERE source_name = ? AND status = 'rejected' "
           "AND body = ? AND created_at >= ? AND note != ?")
    args: list[object] = [name, body, since or 0.0, versions.INTERRUPTED]
    for prefix in not_judged:
        sql += " AND substr(note, 1, ?) != ?"
        args += [len(prefix), prefix]
    return row(conn, sql, tuple(args)) is not None


def healer_calls_since(conn: apsw.Connection, since: float, name: str | None = None) -> tuple[int, float | None, float | None]:
    """External healer calls started after `since` (of `name`, or of every source): how many, the
    first and the newest start. A call refused as untrusted sent nothing and spends no budget."""
    if name is None:
        r = row(conn, "SELECT count(*) AS n, min(started_at) AS first, max(started_at) AS last "
                      "FROM healer_calls WHERE started_at > ? AND outcome != 'untrusted'", (since,))
    else:
        r = row(conn, "SELECT count(*) AS n, min(started_at) AS first, max(started_at) AS last "
                      "FROM healer_calls WHERE source_name = ? AND started_at > ? AND outcome != 'untrusted'",
                (name, since))
    assert r is not None   # an aggregate always answers one row
    return r["n"], r["first"], r["last"]


def budget_paused_at(conn: apsw.Connection, name: str) -> float | None:
    """When the newest BUDGET_PAUSED alert of `name` for its budget was raised (None: never); a
    pause for an untrusted healer listener is another pause's news."""
    return scalar(conn, "SELECT max(ts) FROM alerts WHERE source = ? AND event = 'BUDGET_PAUSED' "
                        "AND json_extract(details, '$.cause') IS NOT 'untrusted_healer'", (name,))
