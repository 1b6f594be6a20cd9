"""One page of the fleet's status: for fleets too large to show, send or hold whole.

At 100,000 sources the whole status is ~20 MB of JSON and 100,000 table rows nobody reads.
A page is `limit` rows (arrays in STATUS_KEYS order, as JSON text built by SQLite) chosen by:

- `order="attention"`: the sources that need a person first (DEGRADED, QUARANTINED, DEAD, in
  that order), then the ACTIVE ones, each state by name; `offset` counts across them. Read
  state by state through the index on `source_health(state, source_name)`, so the page costs
  O(offset + limit) index steps, not a sort of the fleet.
- `order="name"`: by name; `after` continues after a name (a script reading the whole fleet
  page after page: each page a range of the primary key, O(limit)), or `offset` skips rows.

`states` keeps only those lifecycle states. Pages are read each in its own transaction: a
fleet read page after page while it changes can miss a source added meanwhile, or show a
source's newer row, but never shows one twice (pages are taken by increasing name).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import apsw

from healerd.store.sources import STATUS_KEYS, default_now, state_counts, status_columns

ATTENTION_ORDER = ("DEGRADED", "QUARANTINED", "DEAD", "ACTIVE")
ORDERS = ("name", "attention")

_PAUSED = STATUS_KEYS.index("paused")


def _select(where: str, order: str) -> str:
    """(name, the row as a JSON array) of the sources matching `where`, ordered by `order`; the
    parameters: ?1 now, then those of `where`, then LIMIT and OFFSET last."""
    values = list(status_columns("healerd_mask_url(s.url)"))
    values[_PAUSED] = f"json(CASE WHEN {values[_PAUSED]} THEN 'true' ELSE 'false' END)"
    return (f"SELECT s.name, json_array({', '.join(values)}) FROM source_health h "
            f"JOIN sources s ON s.name = h.source_name WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?")


_BY_STATE = _select("h.state = ?2", "h.source_name")
_STATES_SQL = "h.state IN (SELECT value FROM json_each(?2))"
_BY_NAME = _select(_STATES_SQL, "s.name")
_BY_NAME_AFTER = _select(f"{_STATES_SQL} AND s.name > ?3", "s.name")


def page(conn: apsw.Connection, *, limit: int, offset: int = 0, order: str = "name",
         states: Sequence[str] | None = None, after: str | None = None, now: float | None = None) -> dict:
    """{"rows": [JSON text of each row], "total": the sources matching `states`, "by_state": counts,
    "last": the name of the page's last row (None when empty)}."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}")
    now = default_now(now)
    with conn:
        counts = state_counts(conn)
        wanted = [s for s in ATTENTION_ORDER if states is None or s in states]
        total = sum(counts.get(s, 0) for s in wanted)
        out: list[str] = []
        last: str | None = None
        if order == "attention":
            skip = offset
            for state in wanted:
                if len(out) >= limit:
                    break
                n = counts.get(state, 0)
                if skip >= n:
                    skip -= n
                    continue
                for name, text in conn.execute(_BY_STATE, (now, state, limit - len(out), skip)):
                    out.append(text)
                    last = name
                skip = 0
        else:
            if after is None:
                found = conn.execute(_BY_NAME, (now, json.dumps(wanted), limit, offset))
            else:
                found = conn.execute(_BY_NAME_AFTER, (now, json.dumps(wanted), after, limit, offset))
            for name, text in found:
                out.append(text)
                last = name
    return {"rows": out, "total": total, "by_state": counts, "last": last}
