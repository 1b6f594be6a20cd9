"""Schema versioning with PRAGMA user_version, and the in-place upgrade path.

`schema.sql` always describes the newest schema and is written with
`CREATE ... IF NOT EXISTS`, so applying it creates whatever is new. Changes that
`IF NOT EXISTS` cannot express (a new column on an existing table, a data fix)
are steps in STEPS: STEPS[n] upgrades a version-n database to n+1. `upgrade`
runs the missing steps, then the schema, then sets user_version — all in one
transaction, so a crash mid-upgrade leaves the old version intact.
"""

from __future__ import annotations

from collections.abc import Callable

import apsw

from healerd.core.errors import HealerdError

SCHEMA_VERSION = 6


def _columns(conn: apsw.Connection, table: str) -> set[str]:
    cur = conn.execute(f"PRAGMA table_info({table})")
    try:
        return {r[1] for r in cur}
    finally:
        cur.close()


def _v1_to_v2(conn: apsw.Connection) -> None:
    """Production verdicts: the probation of a promoted fix (fix_history.production_verdict,
    parser_versions.probation_scrapes, .promoted_by, .production_verdict). The version_snapshots table comes with the schema."""
    if "production_verdict" not in _columns(conn, "fix_history"):
        conn.execute("ALTER TABLE fix_history ADD COLUMN production_verdict TEXT")
        conn.execute("ALTER TABLE fix_history ADD COLUMN verdict_at REAL")
    if "probation_scrapes" not in _columns(conn, "parser_versions"):
        conn.execute("ALTER TABLE parser_versions ADD COLUMN probation_scrapes INTEGER NOT NULL DEFAULT 0")
    if "promoted_by" not in _columns(conn, "parser_versions"):
        conn.execute("ALTER TABLE parser_versions ADD COLUMN promoted_by TEXT")
    if "production_verdict" not in _columns(conn, "parser_versions"):
        conn.execute("ALTER TABLE parser_versions ADD COLUMN production_verdict TEXT")
    # Fixes promoted before verdicts existed were judged by the time they ran: call them passed.
    conn.execute("UPDATE fix_history SET production_verdict = 'passed', verdict_at = created_at "
                 "WHERE outcome = 'promoted' AND production_verdict IS NULL")


def _v2_to_v3(conn: apsw.Connection) -> None:
    """The status_changes table and its triggers come with the schema. It starts empty: a status
    reader reads every row the first time and only the sources noted since after that."""


def _v3_to_v4(conn: apsw.Connection) -> None:
    """Version 4 is another change's number (a step of its own where it is merged); nothing here."""


def _v4_to_v5(conn: apsw.Connection) -> None:
    """fix_history.data_gone: a refusal that showed the field's data gone from the page, counted
    apart from failed attempts in the fleet's metrics. Earlier refusals stay failures (0): the
    pages they judged are not all kept to judge them again."""
    if "data_gone" not in _columns(conn, "fix_history"):
        conn.execute("ALTER TABLE fix_history ADD COLUMN data_gone INTEGER NOT NULL DEFAULT 0")


def _v5_to_v6(conn: apsw.Connection) -> None:
    """The value_profiles table comes with the schema. It starts empty: each source's profiles
    are learned from its next good scrapes (judging waits until they have learned enough)."""


# STEPS[n]: from version n to n+1. Version 0 is an empty database (the schema
# creates everything).
STEPS: dict[int, Callable[[apsw.Connection], None]] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5,
                                                      5: _v5_to_v6}


class SchemaTooNew(RuntimeError, HealerdError):
    pass


def current_version(conn: apsw.Connection) -> int:
    cur = conn.execute("PRAGMA user_version")
    try:
        return int(next(iter(cur))[0])
    finally:
        cur.close()


def _has_tables(conn: apsw.Connection) -> bool:
    cur = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'sources'")
    try:
        return next(iter(cur))[0] > 0
    finally:
        cur.close()


def upgrade(conn: apsw.Connection, schema_sql: str, target: int | None = None,
            steps: dict[int, Callable[[apsw.Connection], None]] | None = None) -> int:
    """Bring the database to `target` (default SCHEMA_VERSION); returns the version it was at."""
    target = SCHEMA_VERSION if target is None else target
    steps = STEPS if steps is None else steps
    with conn:
        found = current_version(conn)
        if found > target:
            raise SchemaTooNew(
                f"the database is at schema version {found}, newer than this healerd knows ({target}); "
                "upgrade healerd or use another --state-dir"
            )
        if found == target:
            return found
        version = found if (found > 0 or _has_tables(conn)) else target
        if found == 0 and _has_tables(conn):
            version = 1  # created before versioning existed: treat as version 1
        while version < target:
            step = steps.get(version)
            if step is None:
                raise RuntimeError(f"no migration step from schema version {version} to {version + 1}")
            step(conn)
            version += 1
        conn.execute(schema_sql)
        conn.execute(f"PRAGMA user_version = {int(target)}")
    return found
