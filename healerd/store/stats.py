"""The rows the fleet's success metrics are computed from (healerd.core.stats), over a window."""

from __future__ import annotations

import apsw

from healerd.store.db import rows, scalar


def window_rows(conn: apsw.Connection, since: float) -> dict:
    """Everything healerd.core.stats.compute needs for the window starting at `since`, read in one
    read transaction so the figures agree with each other."""
    with conn:   # a read transaction: one snapshot of the database
        fixes = rows(conn, "SELECT outcome, strategy, created_at, failure_started_at, production_verdict "
                           "FROM fix_history WHERE created_at >= ?", (since,))
        sources = scalar(conn, "SELECT count(*) FROM sources") or 0
        # Quarantined at any time in the window: entered it in the window, or still in it from before.
        quarantined = scalar(
            conn, "SELECT count(*) FROM source_health h WHERE h.state = 'QUARANTINED' OR EXISTS ("
                  "SELECT 1 FROM source_events e WHERE e.source_name = h.source_name "
                  "AND e.to_state = 'QUARANTINED' AND e.at >= ?)", (since,)) or 0
        calls = rows(conn, "SELECT duration_ms, outcome FROM healer_calls WHERE started_at >= ?", (since,))
        rollbacks = scalar(conn, "SELECT count(*) FROM source_events WHERE trigger = 'rollback' AND at >= ?",
                           (since,)) or 0
    return {"fixes": fixes, "sources": sources, "quarantined": quarantined, "healer_calls": calls,
            "rollbacks": rollbacks}
