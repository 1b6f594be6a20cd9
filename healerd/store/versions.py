"""Parser versions: production (exactly one per source), staging candidates, the archive."""

from __future__ import annotations

import json
import time

import apsw

from healerd.core.blueprint import Blueprint, from_json
from healerd.core.errors import Refusal
from healerd.core.timeutil import iso
from healerd.store.sql import row, rows, scalar


class VersionNotFound(KeyError, Refusal):
    def __str__(self) -> str:
        return str(self.args[0])


def create(conn: apsw.Connection, name: str, bp: Blueprint, *, origin: str, status: str = "staging",
           validation: dict | None = None, note: str = "", now: float | None = None) -> int:
    now = time.time() if now is None else now
    with conn:
        v = (scalar(conn, "SELECT max(version) FROM parser_versions WHERE source_name = ?", (name,)) or 0) + 1
        conn.execute(
            "INSERT INTO parser_versions (source_name, version, kind, body, origin, status, validation, note, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (name, v, bp.kind, bp.to_json(), origin, status, json.dumps(validation) if validation else None, note[:2000], now),
        )
    return v


PERSON = "person"
DAEMON = "daemon"


def promote(conn: apsw.Connection, name: str, version: int, *, validation: dict | None = None,
            now: float | None = None, by: str | None = None) -> int | None:
    """In one transaction: archive the production version, make `version` production, move the pointer.

    `by` says who promoted it (PERSON: a rollback, an approval; DAEMON: a fix, an automatic
    rollback); by default a `human` version is a person's. A version's probation starts again.
    Returns the previous production version."""
    now = time.time() if now is None else now
    with conn:
        target = row(conn, "SELECT * FROM parser_versions WHERE source_name = ? AND version = ?", (name, version))
        if not target:
            raise VersionNotFound(f"source {name!r} has no parser version {version}")
        prev = scalar(conn, "SELECT version FROM parser_versions WHERE source_name = ? AND status = 'production'", (name,))
        if prev == version:
            return prev
        conn.execute("UPDATE parser_versions SET status = 'archived' WHERE source_name = ? AND status = 'production'", (name,))
        by = by or (PERSON if target["origin"] == "human" else DAEMON)
        conn.execute("UPDATE parser_versions SET status = 'production', promoted_at = ?, probation_scrapes = 0, "
                     "promoted_by = ?, validation = COALESCE(?, validation) WHERE source_name = ? AND version = ?",
                     (now, by, json.dumps(validation) if validation else None, name, version))
        conn.execute("UPDATE sources SET current_version = ?, blueprint = CASE WHEN ? = 'human' THEN ? ELSE blueprint END, "
                     "updated_at = ? WHERE name = ?", (version, target["origin"], target["body"], now, name))
    return prev


def reject(conn: apsw.Connection, name: str, version: int, reason: str, validation: dict | None = None) -> None:
    with conn:
        conn.execute("UPDATE parser_versions SET status = 'rejected', note = ?, validation = COALESCE(?, validation) "
                     "WHERE source_name = ? AND version = ? AND status = 'staging'",
                     (reason[:2000], json.dumps(validation) if validation else None, name, version))


def production(conn: apsw.Connection, name: str) -> tuple[int, Blueprint]:
    r = row(conn, "SELECT version, body FROM parser_versions WHERE source_name = ? AND status = 'production'", (name,))
    if not r:
        raise VersionNotFound(f"source {name!r} has no production parser")
    return r["version"], from_json(r["body"])


def get(conn: apsw.Connection, name: str, version: int) -> dict:
    r = row(conn, "SELECT * FROM parser_versions WHERE source_name = ? AND version = ?", (name, version))
    if not r:
        raise VersionNotFound(f"source {name!r} has no parser version {version}")
    return r


def latest_archived(conn: apsw.Connection, name: str) -> int | None:
    return scalar(conn, "SELECT version FROM parser_versions WHERE source_name = ? AND status = 'archived' "
                        "ORDER BY promoted_at DESC, version DESC LIMIT 1", (name,))


def changes_since(conn: apsw.Connection, name: str, since: float) -> int:
    """Automatic promotions (non-human) since `since`: the 'parser changed too often' breaker."""
    return scalar(conn, "SELECT count(*) FROM parser_versions WHERE source_name = ? AND origin != 'human' "
                        "AND promoted_at IS NOT NULL AND promoted_at >= ?", (name, since)) or 0


def staged(conn: apsw.Connection, name: str) -> list[dict]:
    return rows(conn, "SELECT * FROM parser_versions WHERE source_name = ? AND status = 'staging' ORDER BY version", (name,))


def staged_with_body(conn: apsw.Connection, name: str, body: str) -> int | None:
    """The staging version of `name` whose blueprint is exactly `body` (awaiting approval), if any."""
    return scalar(conn, "SELECT version FROM parser_versions WHERE source_name = ? AND status = 'staging' "
                        "AND body = ? ORDER BY version LIMIT 1", (name, body))


INTERRUPTED = "interrupted before validation"


def reject_orphans(conn: apsw.Connection) -> list[tuple[str, int]]:
    """After a crash: staging versions no fix attempt recorded as staged were cut off mid-deploy.

    The Deployer stages a candidate before it validates it; only a candidate the Doctor then
    recorded as `staged` (fix_history) is one that waits for a person. Any other staging version
    was never judged: it is marked rejected with the note INTERRUPTED. Returns (source, version).
    """
    with conn:
        got = rows(conn, "UPDATE parser_versions SET status = 'rejected', note = ? WHERE status = 'staging' "
                         "AND NOT EXISTS (SELECT 1 FROM fix_history f WHERE f.source_name = parser_versions.source_name "
                         "AND f.version = parser_versions.version AND f.outcome = 'staged') "
                         "RETURNING source_name, version", (INTERRUPTED,))
    return [(r["source_name"], r["version"]) for r in got]


def history_entries(conn: apsw.Connection, name: str) -> list[dict]:
    """Versions for `healerctl history`. A version the Doctor made by following a moved page shows the
    origin `relocate` (it is stored as `builtin`: the built-in route made it, and the table's origins
    are fixed), so a person sees what happened rather than a selector repair."""
    from healerd.core.routing import RELOCATED_NOTE

    out = []
    for r in rows(conn, "SELECT * FROM parser_versions WHERE source_name = ?", (name,)):
        origin = r["origin"]
        if origin == "builtin" and (r["note"] or "").startswith(RELOCATED_NOTE):
            origin = "relocate"
        out.append({"kind": "version", "at": iso(r["created_at"]), "_t": r["created_at"],
                    "version": r["version"], "origin": origin, "status": r["status"], "note": r["note"]})
    return out
