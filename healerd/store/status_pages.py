"""One page of the fleet's status: for fleets too large to show, send or hold whole.

At 100,000 sources the whole status is ~20 MB of JSON and 100,000 table rows nobody reads.
A page is `limit` rows (arrays in STATUS_KEYS order, as JSON text built by SQLite) chosen by:

- `order="attention"`: the sources that need a person first (DEGRADED, QUARANTINED, DEAD, in
  that order), then the ACTIVE ones, each state by name; `offset` counts across them. Read
  state by state through the index on `source_health(state, source_name)`, so the page costs
  O(offset + limit) index steps, not a sort of the fleet.
- `order="name"`: by name; `after` continues after a name (a script reading the whole fleet
  page after page: each page a range of the primary key, O(limit)), or `offset` skips rows.
  With `states`, each state's rows come by name from the same index and are merged.

`states` keeps only those lifecycle states. Pages are read each in its own transaction: a
fleet read page after page while it changes can miss a source added meanwhile, or show a
source's newer row, but never shows one twice (pages are taken by increasing name).
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Sequence

import apsw

from healerd.store.sources import MASKED_JOIN, STATUS_KEYS, default_now, masked_urls, state_counts, status_columns

ATTENTION_ORDER = ("DEGRADED", "QUARANTINED", "DEAD", "ACTIVE")
ORDERS = ("name", "attention")

_PAUSED = STATUS_KEYS.index("paused")


def _select(where: str, order: str) -> str:
    """(name, the row as a JSON array) of the sources matching `where`, ordered by `order`; the
    parameters: ?1 now, ?2 and ?3 those of `where`, then LIMIT and OFFSET."""
    values = list(status_columns())
    values[_PAUSED] = f"json(CASE WHEN {values[_PAUSED]} THEN 'true' ELSE 'false' END)"
    # One row for the page: its names as a JSON array and its rows joined by newlines (a row is
    # JSON text, where a newline is always escaped). Read row by row, each row's step gave the GIL
    # back and took it again: 100,000 rows on a daemon busy scraping took seconds of thread switches.
    return (f"SELECT json_group_array(n ORDER BY n), group_concat(j, char(10) ORDER BY n) FROM ("
            f"SELECT s.name AS n, json_array({', '.join(values)}) AS j FROM sources s "
            f"JOIN source_health h ON h.source_name = s.name {MASKED_JOIN} WHERE {where} "
            f"ORDER BY {order} LIMIT ?4 OFFSET ?5)")


def _fetch(conn: apsw.Connection, sql: str, params: tuple) -> list[tuple[str, str]]:
    """(name, row JSON text) of each row of a page query, in order, read in one step."""
    names, texts = conn.execute(sql, params).fetchall()[0]
    if texts is None:
        return []
    return list(zip(json.loads(str(names)), str(texts).split("\n"), strict=True))


# Both walk an index in its order (no sort of the matching rows): the primary key of `sources`,
# or `source_health(state, source_name)` from a name on.
_ALL = _select("s.name > ?2", "s.name")   # (?3 unused)
_ONE_STATE = _select("h.state = ?3 AND h.source_name > ?2", "h.source_name")


def page(conn: apsw.Connection, *, limit: int, offset: int = 0, order: str = "name",
         states: Sequence[str] | None = None, after: str | None = None, now: float | None = None) -> dict:
    """{"rows": [JSON text of each row], "total": the sources matching `states`, "by_state": counts,
    "last": the name of the page's last row (None when empty)}."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}")
    now = default_now(now)
    # A page of some states or by attention masks only its own rows' URLs (remembered by
    # store.db._masked_url): bringing the connection's table of masked URLs up to date masks the
    # whole fleet the first time. The whole fleet by name (`status --json`, page after page) is
    # read whole anyway: at its first page, its URLs are masked in one pass (sources.masked_urls),
    # not one SQL function call (and GIL hand-over) per row. URLs masked before are reused.
    masked_urls(conn, refresh=order == "name" and states is None and after is None)
    with conn:
        counts = state_counts(conn)
        wanted = [s for s in ATTENTION_ORDER if states is None or s in states]
        total = sum(counts.get(s, 0) for s in wanted)
        found: list = []   # (name, row JSON text)
        if order == "attention":
            skip = offset
            for state in wanted:
                if len(found) >= limit:
                    break
                n = counts.get(state, 0)
                if skip >= n:
                    skip -= n
                    continue
                found += _fetch(conn, _ONE_STATE, (now, "", state, limit - len(found), skip))
                skip = 0
        elif states is None:
            found = _fetch(conn, _ALL, (now, after or "", None, limit, offset))
        else:
            # Each state's rows by name from the index, merged: the first offset + limit of each suffice.
            runs: list[list] = [_fetch(conn, _ONE_STATE, (now, after or "", state, offset + limit, 0))
                    for state in wanted if counts.get(state)]
            found = list(heapq.merge(*runs))[offset:offset + limit]
    return {"rows": [text for _, text in found], "total": total, "by_state": counts,
            "last": found[-1][0] if found else None}
