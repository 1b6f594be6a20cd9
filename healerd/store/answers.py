"""The answers external healers gave, per source, by the digest of the normalized candidate:
the same answer is staged once, never twice."""

from __future__ import annotations

import time

import apsw

from healerd.core.blueprint import Blueprint
from healerd.store import versions
from healerd.store.sql import row


def seen(conn: apsw.Connection, name: str, digest: str) -> dict | None:
    """The version the same answer was staged as before, with its status and note, or None."""
    return row(conn, "SELECT a.version, a.first_at, v.status, v.note FROM healer_answers a "
                     "LEFT JOIN parser_versions v ON v.source_name = a.source_name AND v.version = a.version "
                     "WHERE a.source_name = ? AND a.digest = ?", (name, digest))


def stage(conn: apsw.Connection, name: str, bp: Blueprint, digest: str, *, origin: str, note: str = "",
          now: float | None = None) -> tuple[int | None, dict | None]:
    """Stage `bp` and note its digest, in one transaction: (version, None); or (None, the earlier
    staging) when this answer was staged before."""
    now = time.time() if now is None else now
    with conn:
        before = seen(conn, name, digest)
        if before is not None:
            return None, before
        version = versions.create(conn, name, bp, origin=origin, status="staging", note=note, now=now)
        conn.execute("INSERT INTO healer_answers (source_name, digest, version, first_at) VALUES (?, ?, ?, ?)",
                     (name, digest, version, now))
    return version, None
