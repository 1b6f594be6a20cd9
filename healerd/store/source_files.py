"""The sources a sources directory registered, with the blueprint each file gave last, and the
settings of a file applied to every parser version of its source (core/blueprint_settings.py)."""

from __future__ import annotations

import time

import apsw

from healerd.core.blueprint import Blueprint, from_json
from healerd.core.blueprint_settings import changed_settings, with_settings
from healerd.store import sources
from healerd.store.sql import rows

# The versions a person's blueprint made: the registration and each changed file (or update).
PERSON_NOTES = ("registered", "blueprint changed by a person")


def registered(conn: apsw.Connection) -> dict[str, dict]:
    """Every source's {"name", "origin", "blueprint", "loaded"} by name; `loaded` is the body of the
    newest version a person's blueprint made (for a sources-directory source: what its file said
    when it was loaded last), whatever version is in production since (a fix, a rollback)."""
    marks = ",".join("?" * len(PERSON_NOTES))
    return {r["name"]: r for r in rows(
        conn, "SELECT s.name, s.origin, s.blueprint, (SELECT v.body FROM parser_versions v WHERE v.source_name = s.name "
              f"AND v.origin = 'human' AND v.note IN ({marks}) ORDER BY v.version DESC LIMIT 1) AS loaded "
              "FROM sources s", PERSON_NOTES)}


def apply_settings(conn: apsw.Connection, name: str, file_bp: Blueprint, now: float | None = None) -> list[str]:
    """The settings of `file_bp` (url, every, headers, cookies, fetch, wait_for, key) on every parser
    version of the source, its selectors kept: production keeps its healed selectors, and a rollback
    later brings back no stale setting. Returns the names of the settings that changed."""
    now = time.time() if now is None else now
    with conn:
        src = sources.get(conn, name)
        changed = changed_settings(from_json(src["blueprint"]), file_bp)
        for r in rows(conn, "SELECT version, body FROM parser_versions WHERE source_name = ?", (name,)):
            body = with_settings(from_json(r["body"]), file_bp).to_json()
            conn.execute("UPDATE parser_versions SET body = ? WHERE source_name = ? AND version = ?",
                         (body, name, r["version"]))
        human = with_settings(from_json(src["blueprint"]), file_bp)
        conn.execute("UPDATE sources SET url = ?, host = ?, blueprint = ?, every_s = ?, updated_at = ?, etag = NULL, "
                     "last_modified = NULL WHERE name = ?",
                     (human.url, sources.host_of(human.url or ""), human.to_json(), human.every, now, name))
        sources.audit(conn, name, "settings", "settings changed in the sources file ("
                      + ", ".join(changed or ["none"]) + "); the production selectors are kept", now)
    return changed
