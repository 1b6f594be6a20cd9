"""Sources and their health: registration, schedule, counters, the status view."""

from __future__ import annotations

import json
import time
from urllib.parse import urlsplit

import apsw

from healerd.core.blueprint import Blueprint
from healerd.core.errors import HealerdError, Refusal
from healerd.core.timeutil import iso
from healerd.store.db import masked_source_url
from healerd.store.fixes import FAILED_OUTCOMES
from healerd.store.lifecycle import ACTIVE
from healerd.store.sql import row, rows


class SourceNotFound(KeyError, HealerdError):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"no source named {self.name!r}"


class SourceExists(ValueError, Refusal):
    pass


def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def add(conn: apsw.Connection, name: str, bp: Blueprint, *, origin: str = "cli", now: float | None = None,
        first_run_at: float | None = None) -> None:
    """Register a source: its row, an ACTIVE health row, version 1 (human, production), a 'register' event."""
    now = time.time() if now is None else now
    if not bp.url:
        raise ValueError("url: missing")
    with conn:
        if row(conn, "SELECT name FROM sources WHERE name = ?", (name,)):
            raise SourceExists(f"a source named {name!r} exists already")
        conn.execute(
            "INSERT INTO sources (name, url, host, blueprint, every_s, paused, next_run_at, origin, current_version, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?, 1, ?, ?)",
            (name, bp.url, host_of(bp.url), bp.to_json(), bp.every, now if first_run_at is None else first_run_at,
             origin, now, now),
        )
        conn.execute("INSERT INTO source_health (source_name, state, created_at, updated_at) VALUES (?, ?, ?, ?)",
                     (name, ACTIVE, now, now))
        conn.execute(
            "INSERT INTO parser_versions (source_name, version, kind, body, origin, status, created_at, promoted_at, note) "
            "VALUES (?, 1, ?, ?, 'human', 'production', ?, ?, 'registered')",
            (name, bp.kind, bp.to_json(), now, now),
        )
        conn.execute("INSERT INTO source_events (source_name, from_state, to_state, trigger, reason, at) "
                     "VALUES (?, 'NEW', ?, 'register', ?, ?)", (name, ACTIVE, f"registered ({origin})", now))


def add_many(conn: apsw.Connection, entries: list[tuple[str, Blueprint]], *, origin: str,
             now: float | None = None) -> dict[str, str]:
    """Register many sources as `add` does, one statement per table for the lot (loading a
    sources directory). Returns {name: why} for those not added (a name taken, no url); the
    others are added."""
    now = time.time() if now is None else now
    refused: dict[str, str] = {}
    names = [name for name, _ in entries]
    taken = {r[0] for r in conn.execute("SELECT name FROM sources WHERE name IN (SELECT value FROM json_each(?))",
                                        (json.dumps(names),))}
    fresh: list[tuple[str, Blueprint, str]] = []
    for name, bp in entries:
        if name in taken:
            refused[name] = f"a source named {name!r} exists already"
        elif not bp.url:
            refused[name] = "url: missing"
        else:
            taken.add(name)   # the same name twice in `entries`: the first is added
            fresh.append((name, bp, bp.to_json()))
    with conn:
        conn.executemany(
            "INSERT INTO sources (name, url, host, blueprint, every_s, paused, next_run_at, origin, current_version, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?, 1, ?, ?)",
            [(name, bp.url, host_of(bp.url), text, bp.every, now, origin, now, now) for name, bp, text in fresh])
        conn.executemany("INSERT INTO source_health (source_name, state, created_at, updated_at) VALUES (?, ?, ?, ?)",
                         [(name, ACTIVE, now, now) for name, _, _ in fresh])
        conn.executemany(
            "INSERT INTO parser_versions (source_name, version, kind, body, origin, status, created_at, promoted_at, "
            "note) VALUES (?, 1, ?, ?, 'human', 'production', ?, ?, 'registered')",
            [(name, bp.kind, text, now, now) for name, bp, text in fresh])
        conn.executemany("INSERT INTO source_events (source_name, from_state, to_state, trigger, reason, at) "
                         "VALUES (?, 'NEW', ?, 'register', ?, ?)",
                         [(name, ACTIVE, f"registered ({origin})", now) for name, _, _ in fresh])
    return refused


def remove(conn: apsw.Connection, name: str) -> None:
    with conn:
        get(conn, name)
        # Its fix history goes too: a source added again under the same name starts clean.
        for table, col in (("records", "source_name"), ("snapshots", "source_name"), ("parser_versions", "source_name"),
                           ("fix_history", "source_name"), ("value_profiles", "source_name"),
                           ("source_health", "source_name")):
            conn.execute(f"DELETE FROM {table} WHERE {col} = ?", (name,))
        conn.execute("DELETE FROM task_queue WHERE target = ? AND state IN ('PENDING','IN_PROGRESS')", (name,))
        conn.execute("DELETE FROM sources WHERE name = ?", (name,))
        conn.execute("INSERT INTO source_events (source_name, from_state, to_state, trigger, reason, at) "
                     "VALUES (?, 'ANY', 'REMOVED', 'remove', '', ?)", (name, time.time()))


def get(conn: apsw.Connection, name: str) -> dict:
    found = row(conn, "SELECT s.*, h.* FROM sources s JOIN source_health h ON h.source_name = s.name WHERE s.name = ?",
                (name,))
    if not found:
        raise SourceNotFound(name)
    return found


def exists(conn: apsw.Connection, name: str) -> bool:
    return row(conn, "SELECT 1 AS x FROM sources WHERE name = ?", (name,)) is not None


def names(conn: apsw.Connection) -> list[str]:
    return [r["name"] for r in rows(conn, "SELECT name FROM sources ORDER BY name")]


def states(conn: apsw.Connection) -> dict[str, str]:
    return {r["source_name"]: r["state"] for r in rows(conn, "SELECT source_name, state FROM source_health")}


def set_paused(conn: apsw.Connection, name: str, paused: bool, now: float | None = None) -> None:
    now = time.time() if now is None else now
    with conn:
        get(conn, name)
        conn.execute("UPDATE sources SET paused = ?, updated_at = ?, next_run_at = CASE WHEN ? = 0 THEN ? ELSE next_run_at END "
                     "WHERE name = ?", (1 if paused else 0, now, 1 if paused else 0, now, name))


def set_next_run(conn: apsw.Connection, name: str, at: float) -> None:
    with conn:
        conn.execute("UPDATE sources SET next_run_at = ? WHERE name = ?", (at, name))


def update_blueprint(conn: apsw.Connection, name: str, bp: Blueprint, now: float | None = None) -> None:
    """A person changed the blueprint (sources_dir reload): new human production version, schedule updated."""
    from healerd.store import versions  # local: versions imports this module

    now = time.time() if now is None else now
    with conn:
        get(conn, name)
        conn.execute("UPDATE sources SET url = ?, host = ?, blueprint = ?, every_s = ?, updated_at = ?, etag = NULL, "
                     "last_modified = NULL WHERE name = ?", (bp.url, host_of(bp.url), bp.to_json(), bp.every, now, name))
        v = versions.create(conn, name, bp, origin="human", status="staging", note="blueprint changed by a person", now=now)
        versions.promote(conn, name, v, now=now)


_ISO = "strftime('%Y-%m-%dT%H:%M:%SZ', {col}, 'unixepoch')"
# Fix attempts that spent budget (the failed ones: a promotion or a candidate held for a person
# spends none) in the 24 hours before the bound parameter (now), and not before an unquarantine
# (attempts_since): counted when asked, so old attempts age out.
ATTEMPTS_24H_SQL = (
    "(SELECT count(*) FROM fix_history f WHERE f.source_name = s.name "
    "AND f.created_at > max(?1 - 86400.0, COALESCE(h.attempts_since, 0)) "
    f"AND f.outcome IN ({', '.join(repr(o) for o in FAILED_OUTCOMES)}))"
)
STATUS_KEYS = ("name", "url", "state", "version", "last_success_at", "last_failure_at", "failure_count",
                "fix_attempts_24h", "quarantine_until", "paused", "next_run_at", "last_error")


def status_object(r: dict) -> dict:
    """The `healerctl status --json` object, docs/REFERENCE.md (times already ISO from SQL)."""
    return {
        "name": r["name"],
        "url": r["url"],
        "state": r["state"],
        "version": r["version"],
        "last_success_at": r["last_success_at"],
        "last_failure_at": r["last_failure_at"],
        "failure_count": r["failure_count"],
        "fix_attempts_24h": r["fix_attempts_24h"],
        "quarantine_until": r["quarantine_until"],
        "paused": bool(r["paused"]),
        "next_run_at": r["next_run_at"],
        "last_error": r["last_error"],
    }


def default_now(now: float | None) -> float:
    """`now` when given, else the current time."""
    return time.time() if now is None else now


def masked_urls(conn: apsw.Connection, refresh: bool = True) -> None:
    """Bring this connection's table of masked source URLs (`temp.masked_urls`) up to date.

    Masking a URL is Python (healerd.core.sanitize); called from SQL for every source of a
    fleet's status it needed the GIL 10,000 times per answer, and on a daemon busy scraping
    each of those waits could last a thread switch. Only URLs not masked before are masked
    here; the status queries join the table and mask in SQL only a URL that changed since.
    Without `refresh`, the table is only made to exist (empty the first time)."""
    if not conn.execute("SELECT 1 FROM sqlite_temp_master WHERE name = 'masked_urls'").fetchall():
        # In memory: the table holds the URLs as stored (credentials and all), never a temp file.
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("CREATE TEMP TABLE masked_urls (url TEXT PRIMARY KEY, masked TEXT NOT NULL)")
    if not refresh:
        return
    # The URLs not masked yet come as one JSON text and go back as one: masked by a Python loop
    # holding the GIL, not by an SQL function called once per URL (each call takes the GIL again,
    # and on a daemon busy scraping each of those waits is a thread switch: 100,000 URLs took
    # ~10 s while the fleet scraped).
    todo = json.loads(conn.execute("SELECT json_group_array(url) FROM (SELECT DISTINCT url FROM sources "
                                   "WHERE url NOT IN (SELECT url FROM temp.masked_urls))").fetchall()[0][0])
    if todo:
        conn.execute("INSERT OR IGNORE INTO temp.masked_urls SELECT value ->> 0, value ->> 1 FROM json_each(?)",
                     (json.dumps([[u, masked_source_url(u)] for u in todo]),))
    kept, live = conn.execute("SELECT (SELECT count(*) FROM temp.masked_urls), (SELECT count(*) FROM sources)") \
        .fetchall()[0]
    if kept > 2 * live + 1000:   # URLs changed or sources removed: forget the old ones
        conn.execute("DELETE FROM temp.masked_urls WHERE url NOT IN (SELECT url FROM sources)")


MASKED_JOIN = "LEFT JOIN temp.masked_urls m ON m.url = s.url"


def status_all(conn: apsw.Connection, now: float | None = None) -> list[dict]:
    """All status objects, fast: one query (URLs masked through `masked_urls`), times formatted by
    SQLite, tuples zipped into dicts."""
    masked_urls(conn)
    cur = conn.execute(f"SELECT {', '.join(status_columns())} FROM sources s "
                       f"JOIN source_health h ON h.source_name = s.name {MASKED_JOIN} ORDER BY s.name", (default_now(now),))
    try:
        keys = STATUS_KEYS
        return [dict(zip(keys, (*r[:9], r[9] == 1, *r[10:]))) for r in cur]
    finally:
        cur.close()


def status_columns(url: str = "COALESCE(m.masked, healerd_mask_url(s.url))") -> tuple[str, ...]:
    """SQL for each value of STATUS_KEYS, in order (times as ISO text, paused the stored 0/1), over
    `sources s JOIN source_health h`; `url` masks the source's URL (by default through the
    table of `masked_urls`, joined as `m`)."""
    iso = _ISO.format
    return (
        "s.name", url, "h.state", "s.current_version", iso(col="h.last_success_at"),
        iso(col="h.last_failure_at"), "h.failure_count", ATTEMPTS_24H_SQL, iso(col="h.quarantine_until"), "s.paused",
        f"CASE WHEN s.paused = 0 AND h.state IN ('ACTIVE','DEGRADED') THEN {iso(col='s.next_run_at')} END",
        "h.last_error",
    )


# One source's status (status_one): the fleet's columns under their keys, and a few more.
STATUS_SQL = (
    "SELECT " + ", ".join(f"{c} AS {k}" for k, c in zip(STATUS_KEYS, status_columns("healerd_mask_url(s.url)"),
                                                        strict=True))
    + ", h.last_error_type, h.flagged_for_review, h.consecutive_failures, h.success_count "
    "FROM sources s JOIN source_health h ON h.source_name = s.name"
)


def state_counts(conn: apsw.Connection) -> dict[str, int]:
    return {r["state"]: r["n"] for r in rows(conn, "SELECT state, count(*) AS n FROM source_health GROUP BY state")}


def status_one(conn: apsw.Connection, name: str, now: float | None = None) -> dict:
    found = rows(conn, STATUS_SQL + " WHERE s.name = ?2", (default_now(now), name))
    if not found:
        raise SourceNotFound(name)
    out = status_object(found[0])
    out["last_error_type"] = found[0]["last_error_type"]
    out["flagged_for_review"] = bool(found[0]["flagged_for_review"])
    out["success_count"] = found[0]["success_count"]
    return out


def events(conn: apsw.Connection, name: str, limit: int = 50) -> list[dict]:
    return [
        {"from": r["from_state"], "to": r["to_state"], "trigger": r["trigger"], "reason": r["reason"], "at": iso(r["at"])}
        for r in rows(conn, "SELECT * FROM source_events WHERE source_name = ? AND id >= COALESCE((SELECT max(id) "
                            "FROM source_events WHERE source_name = ? AND trigger = 'register'), 0) "
                            "ORDER BY id DESC LIMIT ?", (name, name, limit))
    ]   # since the newest registration: a source removed and added again starts a clean history


def audit(conn: apsw.Connection, name: str, trigger: str, reason: str, at: float) -> None:
    """An audit row for an act that leaves the lifecycle state as it is (update, rollback)."""
    state = row(conn, "SELECT state FROM source_health WHERE source_name = ?", (name,))["state"]
    conn.execute("INSERT INTO source_events (source_name, from_state, to_state, trigger, reason, at) "
                 "VALUES (?, ?, ?, ?, ?, ?)", (name, state, state, trigger, reason, at))


def audit_entries(conn: apsw.Connection, name: str, triggers: tuple[str, ...]) -> list[dict]:
    """The audit rows of `triggers` since the newest registration, oldest first."""
    return rows(conn, f"SELECT * FROM source_events WHERE source_name = ? AND trigger IN "
                      f"({','.join('?' * len(triggers))}) AND id >= COALESCE((SELECT max(id) FROM source_events "
                      f"WHERE source_name = ? AND trigger = 'register'), 0) ORDER BY id", (name, *triggers, name))


def set_health(conn: apsw.Connection, name: str, **values) -> None:
    if not values:
        return
    cols = ", ".join(f"{k} = ?" for k in values)
    with conn:
        conn.execute(f"UPDATE source_health SET {cols}, updated_at = ? WHERE source_name = ?",
                     (*values.values(), time.time(), name))


def item_counts(r: dict) -> list[int]:
    try:
        return [int(x) for x in json.loads(r.get("item_counts") or "[]")]
    except (ValueError, TypeError):
        return []


# -- narrow reads for the actors and the control ops (each one query, named for what it returns) --
def url_and_item_counts(conn: apsw.Connection, name: str) -> dict | None:
    """{"url", "item_counts"} (the recent item counts as stored JSON), or None without such a source."""
    return row(conn, "SELECT s.url, h.item_counts FROM sources s JOIN source_health h ON h.source_name = s.name "
                     "WHERE s.name = ?", (name,))


def review_flags(conn: apsw.Connection, name: str) -> dict | None:
    """{"review_approved_until", "flagged_for_review"}, or None without such a source."""
    return row(conn, "SELECT s.review_approved_until, h.flagged_for_review FROM sources s JOIN source_health h "
                     "ON h.source_name = s.name WHERE s.name = ?", (name,))


def item_counts_and_last_good(conn: apsw.Connection, name: str) -> dict | None:
    """{"item_counts", "records"}: the recent item counts and the last good scrape's records (both as
    stored JSON; records None without a last good page), or None without such a source."""
    return row(conn, "SELECT h.item_counts, s.records FROM source_health h LEFT JOIN snapshots s "
                     "ON s.source_name = h.source_name AND s.kind = 'last_good' WHERE h.source_name = ?", (name,))


def blueprint_json(conn: apsw.Connection, name: str) -> str | None:
    """The source's blueprint as stored (JSON), or None without such a source."""
    for (text,) in conn.execute("SELECT blueprint FROM sources WHERE name = ?", (name,)):
        return text
    return None


def registered(conn: apsw.Connection) -> dict[str, dict]:
    """Every source's {"name", "origin", "blueprint"} by name (a sources directory's sync)."""
    return {r["name"]: r for r in rows(conn, "SELECT name, origin, blueprint FROM sources")}


def current_version(conn: apsw.Connection, name: str) -> int | None:
    """The production version's number, or None without such a source."""
    found = row(conn, "SELECT current_version FROM sources WHERE name = ?", (name,))
    return found["current_version"] if found else None


def names_like(conn: apsw.Connection, name: str, spread: int = 3) -> list[str]:
    """The registered names whose length is within `spread` of `name`'s: where a mistyped name's
    intended one is (`healerctl status scors`: did you mean 'scores'?)."""
    return [r["name"] for r in rows(conn, "SELECT name FROM sources WHERE length(name) BETWEEN ? AND ?",
                                    (len(name) - spread, len(name) + spread))]
