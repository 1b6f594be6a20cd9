"""A kept StatusRows (what each control thread holds) always answers what a whole read answers.

It re-reads only the sources the schema's triggers noted in `status_changes` since it last
looked, so a write path the triggers miss would leave a stale row behind: every kind of
write a status row shows goes through the real store functions here, in a random order,
and after each the kept answer must equal a fresh whole read, in both forms."""

from __future__ import annotations

import json
import random

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.store import fixes, lifecycle, sources
from healerd.store.db import open_db
from healerd.store.status_rows import StatusRows

T0 = 1_700_000_000.0


def _bp(url: str = "http://127.0.0.1:9/page") -> Blueprint:
    return Blueprint(fields={"title": FieldSpec("title", "h1")}, url=url)


def _writes(conn, rng: random.Random, live: list[str], step: int, now: float) -> str:
    """One random write a status row shows; what it did, for the failure message."""
    name = rng.choice(live) if live else None
    kind = rng.choice(["add", "add", "remove", "pause", "resume", "next_run", "url", "fail", "recover", "health",
                       "attempt", "attempt_old", "unquarantine", "version", "none"])
    if kind == "add" or name is None:
        new = f"s{step:04d}-{rng.randrange(1000)}"
        sources.add(conn, new, _bp(), now=now)
        live.append(new)
        return f"add {new}"
    if kind == "remove":
        sources.remove(conn, name)
        live.remove(name)
    elif kind in ("pause", "resume"):
        sources.set_paused(conn, name, kind == "pause", now=now)
    elif kind == "next_run":
        with conn:
            sources.set_next_run(conn, name, now + rng.randrange(10_000))
    elif kind == "url":
        sources.update_blueprint(conn, name, _bp(f"http://ann:pw{step}@127.0.0.1:9/p{step}?token=t{step}"), now=now)
    elif kind in ("fail", "recover"):
        state = sources.states(conn)[name]
        trigger = {"ACTIVE": "fail" if kind == "fail" else "die",
                   "DEGRADED": "recover" if kind == "recover" else "quarantine",
                   "QUARANTINED": "quarantine_expired", "DEAD": "revive"}[state]
        lifecycle.fire(conn, lifecycle.make_model(name, state), trigger, reason="test", at=now)
        return f"{trigger} {name}"
    elif kind == "health":   # one column at a time: each must be noted on its own
        column, value = rng.choice([("last_error", f"error {step}"), ("failure_count", step),
                                    ("last_failure_at", now), ("last_success_at", now - 5),
                                    ("quarantine_until", now + 600)])
        with conn:
            sources.set_health(conn, name, **{column: value})
        return f"health {name} {column}"
    elif kind in ("attempt", "attempt_old"):
        with conn:
            fixes.record(conn, source_name=name, error_type="SCHEMA_MISMATCH", strategy="builtin",
                         outcome=rng.choice(["rejected", "error", "declined"]), reason="x",
                         now=now - (3_600 if kind == "attempt" else 90_000))
    elif kind == "unquarantine":
        with conn:
            sources.set_health(conn, name, attempts_since=now)
    elif kind == "version":
        with conn:
            conn.execute("UPDATE sources SET current_version = coalesce(current_version, 0) + 1 WHERE name = ?",
                         (name,))
    return f"{kind} {name}"


def test_a_kept_status_equals_a_whole_read_after_every_kind_of_write(tmp_path):
    conn = open_db(str(tmp_path / "healerd.db"))
    rng = random.Random(7)
    live: list[str] = []
    for i in range(30):
        name = f"base{i:02d}"
        sources.add(conn, name, _bp(), now=T0 + i)
        live.append(name)
    kept = {True: StatusRows(table=True), False: StatusRows(table=False)}
    now = T0 + 1_000
    for step in range(400):
        did = _writes(conn, rng, live, step, now)
        # The clock moves too: attempts age out of the 24-hour window with no write at all.
        now += rng.choice([1.0, 60.0, 3_600.0, 30_000.0])
        for table, rows in kept.items():
            assert rows.json(conn, now) == StatusRows(table).json(conn, now), f"step {step}: {did}"
    assert json.loads(kept[True].json(conn, now)), "the fleet was never empty"
    conn.close()


def test_each_status_write_notes_its_source_and_other_writes_do_not(tmp_path):
    conn = open_db(str(tmp_path / "healerd.db"))
    for name in ("a", "b"):
        sources.add(conn, name, _bp(), now=T0)

    def rev(name):
        found = conn.execute("SELECT rev FROM status_changes WHERE source_name = ?", (name,)).fetchall()
        return found[0][0] if found else None

    before = rev("a")
    assert before is not None and rev("b") > before   # added: noted, in order
    with conn:   # columns the status row does not show: not noted
        conn.execute("UPDATE sources SET etag = 'x', interval_factor = 2.0 WHERE name = 'a'")
        conn.execute("UPDATE source_health SET item_counts = '[5]', success_count = 3 WHERE source_name = 'a'")
    assert rev("a") == before
    with conn:
        sources.set_next_run(conn, "a", T0 + 60)
    assert rev("a") > rev("b")
    sources.remove(conn, "b")
    assert rev("b") > rev("a")   # removed: noted, so a kept answer drops it
    conn.close()


def test_an_answer_after_a_change_reads_only_the_changed_sources(tmp_path):
    """The point of keeping the rows: one scrape's commit costs one row's read, not the fleet's."""
    conn = open_db(str(tmp_path / "healerd.db"))
    for i in range(50):
        sources.add(conn, f"s{i:02d}", _bp(), now=T0)
    read: list[set[str]] = []

    class Watched(StatusRows):
        def _read_some(self, conn, now, names):
            read.append(set(names))
            super()._read_some(conn, now, names)

    kept = Watched(table=True)
    kept.json(conn, T0 + 10)
    with conn:
        sources.set_health(conn, "s07", last_error="boom", last_failure_at=T0 + 5)
    text = kept.json(conn, T0 + 10)
    assert read == [{"s07"}]
    assert json.loads(text)[7][sources.STATUS_KEYS.index("last_error")] == "boom"
    kept.json(conn, T0 + 10)   # nothing changed since: no read at all
    assert read == [{"s07"}]
    conn.close()


def test_a_version_2_database_gains_the_change_notes_in_place(tmp_path):
    """A database from before status_changes (schema version 2) is upgraded when opened: the
    table and its triggers appear, and a kept status follows changes from then on."""
    path = str(tmp_path / "healerd.db")
    conn = open_db(path)
    for name in ("a", "b"):
        sources.add(conn, name, _bp(), now=T0)
    with conn:   # back to what version 2 had
        for (trigger,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute("DROP VIEW status_note")
        conn.execute("DROP TABLE status_changes")
        conn.execute("PRAGMA user_version = 2")
    conn.close()
    conn = open_db(path)
    from healerd.store.migrations import SCHEMA_VERSION

    assert conn.execute("PRAGMA user_version").fetchall()[0][0] == SCHEMA_VERSION
    kept = StatusRows(table=True)
    assert [r[0] for r in json.loads(kept.json(conn, T0))] == ["a", "b"]
    sources.set_paused(conn, "b", True, now=T0)
    assert kept.json(conn, T0) == StatusRows(table=True).json(conn, T0)
    assert json.loads(kept.json(conn, T0))[1][sources.STATUS_KEYS.index("paused")] is True
    conn.close()
