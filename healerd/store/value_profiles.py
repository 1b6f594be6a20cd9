"""The value profiles of each source's fields (healerd.core.value_profile): read by the
Validator, written with the scrape outcome that widened them."""

from __future__ import annotations

import json

import apsw


def load(conn: apsw.Connection, name: str) -> dict[str, dict]:
    """field -> profile of source `name` (empty when none was learned yet)."""
    cur = conn.execute("SELECT field, profile FROM value_profiles WHERE source_name = ?", (name,))
    try:
        out = {}
        for field, text in cur:
            try:
                out[field] = json.loads(text)
            except ValueError:   # an unreadable profile is learned again
                continue
        return out
    finally:
        cur.close()


def save(conn: apsw.Connection, name: str, profiles: dict[str, dict], now: float) -> None:
    """Write the given fields' profiles of `name` (others are kept)."""
    for field, profile in profiles.items():
        conn.execute("INSERT INTO value_profiles (source_name, field, profile, updated_at) VALUES (?, ?, ?, ?) "
                     "ON CONFLICT (source_name, field) DO UPDATE SET profile = excluded.profile, "
                     "updated_at = excluded.updated_at", (name, field, json.dumps(profile), now))


def forget(conn: apsw.Connection, name: str) -> None:
    """A person's new blueprint: the fields may mean other things, so they are learned again."""
    conn.execute("DELETE FROM value_profiles WHERE source_name = ?", (name,))
