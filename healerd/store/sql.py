"""The raw-SQL helpers the store modules run their queries with: all rows as dicts, one row, one value.

For healerd/store only: everything above the store asks a store function named for what it
returns (the import-linter contract "SQL stays in the store" in pyproject.toml).
"""

from __future__ import annotations

import apsw


def rows(conn: apsw.Connection, sql: str, params=()) -> list[dict]:
    """All rows of a query as dicts (the cursor is finished before returning)."""
    cur = conn.execute(sql, params)
    try:
        desc = None
        out = []
        for row in cur:
            if desc is None:
                desc = [d[0] for d in cur.getdescription()]
            out.append(dict(zip(desc, row)))
        return out
    finally:
        cur.close()


def row(conn: apsw.Connection, sql: str, params=()) -> dict | None:
    found = rows(conn, sql, params)
    return found[0] if found else None


def scalar(conn: apsw.Connection, sql: str, params=()):
    cur = conn.execute(sql, params)
    try:
        for r in cur:
            return r[0]
        return None
    finally:
        cur.close()
