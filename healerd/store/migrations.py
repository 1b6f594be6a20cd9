"""Schema versioning with PRAGMA user_version, and the in-place upgrade path.

`schema.sql` always describes the newest schema and is written with
`CREATE ... IF NOT EXISTS`, so applying it creates whatever is new. Changes that
`IF NOT EXISTS` cannot express (a new column on an existing table, a data fix)
are steps in STEPS: STEPS[n] upgrades a version-n database to n+1. `upgrade`
runs the missing steps, then the schema, then sets user_version — all in one
transaction, so a crash mid-upgrade leaves the old version intact.
"""

from __future__ import annotations

from typing import Callable

import apsw

SCHEMA_VERSION = 1

# STEPS[n]: from version n to n+1. Version 0 is an empty database (the schema
# creates everything), so the first real step will be STEPS[1].
STEPS: dict[int, Callable[[apsw.Connection], None]] = {}


class SchemaTooNew(RuntimeError):
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
