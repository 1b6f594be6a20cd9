"""The fleet's status as JSON text, kept up to date by re-reading only the sources that changed.

A `healerctl status` answer at 10,000 sources is ~20 ms of SQLite work when built whole,
and a daemon busy scraping commits many times a second, so nearly every answer would be
built whole. Triggers in the schema note each source whose status row may have changed
in `status_changes` (a source name and an increasing `rev`) in the same transaction as the
change. A `StatusRows` keeps every source's row as JSON text and, on each answer, reads
the names noted since the `rev` it last saw, then only those rows. The watermark and
the rows are read in one transaction, so an answer never mixes two states of the database.

Only `fix_attempts_24h` changes without a write (its 24-hour window moves with the clock):
the rows of sources with attempts in the window are read again on every answer.
"""

from __future__ import annotations

import bisect
import json

import apsw

from healerd.store.sources import MASKED_JOIN, STATUS_KEYS, default_now, masked_urls, status_columns
from healerd.store.sql import scalar

# More changed sources than this share of the fleet: read every row (one scan beats many lookups).
FULL_READ_SHARE = 0.25

_ATTEMPTS = STATUS_KEYS.index("fix_attempts_24h")
_PAUSED = STATUS_KEYS.index("paused")


def _row_sql(table: bool, where: str) -> str:
    """(name, the row as JSON text, its fix_attempts_24h) for each source matching `where`."""
    columns = status_columns()
    inner = ", ".join(f"{c} AS c{i}" for i, c in enumerate(columns))
    values = [f"c{i}" for i in range(len(columns))]
    values[_PAUSED] = f"json(CASE WHEN c{_PAUSED} THEN 'true' ELSE 'false' END)"
    if table:
        item = f"json_array({', '.join(values)})"
    else:
        item = "json_object(" + ", ".join(f"'{k}', {v}" for k, v in zip(STATUS_KEYS, values, strict=True)) + ")"
    return (f"SELECT c0, {item}, c{_ATTEMPTS} FROM (SELECT {inner} FROM sources s "
            f"JOIN source_health h ON h.source_name = s.name {MASKED_JOIN} {where})")


class StatusRows:
    """Every source's status row as JSON text (arrays in STATUS_KEYS order with `table`, else
    objects), for one connection. `json(conn)` is the fleet's array, sorted by name."""

    def __init__(self, table: bool = False):
        self._all = _row_sql(table, "")
        self._some = _row_sql(table, "WHERE s.name IN (SELECT value FROM json_each(?2))")
        self.rows: dict[str, str] | None = None
        self.counting: set[str] = set()   # sources with fix attempts in the window
        self.rev = 0
        self._order: list[str] = []
        self._text: str | None = None

    def json(self, conn: apsw.Connection, now: float | None = None) -> str:
        """The fleet's status array as JSON text, as of now (one read transaction)."""
        self.refresh(conn, now)
        if self._text is None:
            rows = self.rows
            assert rows is not None
            self._text = "[" + ",".join(map(rows.__getitem__, self._order)) + "]"
        return self._text

    def page(self, conn: apsw.Connection, limit: int, offset: int = 0, after: str | None = None,
             now: float | None = None) -> tuple[list[str], str | None, int]:
        """(up to `limit` rows by name from `offset`, or after the name `after`; the last name;
        the fleet's size), as of now: a page of the kept rows, O(changed + limit)."""
        self.refresh(conn, now)
        rows = self.rows
        assert rows is not None
        start = offset if after is None else bisect.bisect_right(self._order, after) + offset
        names = self._order[start:start + limit]
        return [rows[n] for n in names], (names[-1] if names else None), len(self._order)

    def refresh(self, conn: apsw.Connection, now: float | None = None) -> None:
        """Bring the kept rows up to date (one read transaction)."""
        now = default_now(now)
        masked_urls(conn, refresh=False)   # the table exists (made outside a transaction)
        with conn:
            top = scalar(conn, "SELECT COALESCE(max(rev), 0) FROM status_changes")
            if self.rows is None:
                self._read_all(conn, now)
            else:
                changed = [r[0] for r in conn.execute("SELECT source_name FROM status_changes WHERE rev > ?",
                                                      (self.rev,))]
                if len(changed) > FULL_READ_SHARE * max(len(self.rows), 1):
                    self._read_all(conn, now)
                elif changed or self.counting:
                    self._read_some(conn, now, set(changed) | self.counting)
            self.rev = top

    def _read_all(self, conn: apsw.Connection, now: float) -> None:
        masked_urls(conn)
        self.rows = {}
        self.counting = set()
        for name, text, attempts in conn.execute(self._all, (now,)):
            self.rows[name] = text
            if attempts:
                self.counting.add(name)
        self._order = sorted(self.rows)
        self._text = None

    def _read_some(self, conn: apsw.Connection, now: float, names: set[str]) -> None:
        rows = self.rows
        assert rows is not None
        found: set[str] = set()
        added = False
        for name, text, attempts in conn.execute(self._some, (now, json.dumps(sorted(names)))):
            found.add(name)
            added = added or name not in rows
            if rows.get(name) != text:
                rows[name] = text
                self._text = None
            if attempts:
                self.counting.add(name)
            else:
                self.counting.discard(name)
        gone = names - found
        for name in gone:
            self.counting.discard(name)
        if added or gone & rows.keys():
            for name in gone:
                rows.pop(name, None)
            self._order = sorted(rows)
            self._text = None


def status_all_json(conn: apsw.Connection, table: bool = False, now: float | None = None) -> str:
    """The same as `sources.status_all`, as JSON text built by SQLite (no Python objects per source).

    By default an array of objects; with `table`, an array of rows (value arrays in the
    order of STATUS_KEYS), which is less than half the size and decodes ~2.5x faster.
    Built whole; a caller asking again and again keeps a `StatusRows` instead.
    """
    return StatusRows(table).json(conn, now)
