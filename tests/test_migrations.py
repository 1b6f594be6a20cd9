"""Schema versioning: PRAGMA user_version, in-place upgrades, refusing newer databases."""

from __future__ import annotations

import importlib.resources
import threading
from pathlib import Path

import apsw
import pytest

from healerd.blueprint import Blueprint, FieldSpec
from healerd.store import db, migrations, sources
from healerd.store.db import connect, open_db, rows, scalar

REPO_SCHEMA = Path(__file__).resolve().parents[1] / "schema.sql"


def blueprint() -> Blueprint:
    return Blueprint(fields={"title": FieldSpec("title", "h1")}, url="http://127.0.0.1:9/page")


def user_version(conn) -> int:
    return scalar(conn, "PRAGMA user_version")


def columns(conn, table: str) -> list[str]:
    return [r["name"] for r in rows(conn, f"PRAGMA table_info({table})")]


def schema_objects(conn) -> list[dict]:
    return rows(conn, "SELECT type, name, sql FROM sqlite_master ORDER BY type, name")


def add_region(conn) -> None:
    conn.execute("ALTER TABLE sources ADD COLUMN region TEXT NOT NULL DEFAULT 'eu'")


@pytest.fixture
def v1_db(tmp_path):
    """A database at schema version 1 holding two sources; returns its path."""
    path = tmp_path / "healerd.db"
    conn = open_db(path)
    sources.add(conn, "alpha", blueprint(), now=1000.0)
    sources.add(conn, "beta", blueprint(), now=1001.0)
    conn.close()
    return path


def test_new_database_gets_the_schema_and_its_version(tmp_path):
    conn = open_db(tmp_path / "sub" / "healerd.db")
    try:
        assert user_version(conn) == migrations.SCHEMA_VERSION == 1
        tables = {r["name"] for r in rows(conn, "SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"sources", "source_health", "source_events", "task_queue", "parser_versions"} <= tables
        assert scalar(conn, "PRAGMA journal_mode") == "wal"
        assert scalar(conn, "PRAGMA foreign_keys") == 1
    finally:
        conn.close()


def test_reopening_is_a_no_op(v1_db):
    conn = connect(v1_db)
    before = schema_objects(conn)
    data_before = rows(conn, "SELECT * FROM sources ORDER BY name")
    assert migrations.upgrade(conn, db.schema_text()) == 1
    assert user_version(conn) == 1
    assert schema_objects(conn) == before
    assert rows(conn, "SELECT * FROM sources ORDER BY name") == data_before
    conn.close()
    conn = open_db(v1_db)
    try:
        assert user_version(conn) == 1
        assert sources.names(conn) == ["alpha", "beta"]
    finally:
        conn.close()


def test_in_place_upgrade_keeps_the_data(v1_db):
    conn = connect(v1_db)
    try:
        before = rows(conn, "SELECT * FROM sources ORDER BY name")
        assert migrations.upgrade(conn, db.schema_text(), target=2, steps={1: add_region}) == 1
        assert user_version(conn) == 2
        assert "region" in columns(conn, "sources")
        after = rows(conn, "SELECT * FROM sources ORDER BY name")
        assert [{k: v for k, v in r.items() if k != "region"} for r in after] == before
        assert [r["region"] for r in after] == ["eu", "eu"]
        assert sources.states(conn) == {"alpha": "ACTIVE", "beta": "ACTIVE"}
        # At the target already: nothing runs again.
        assert migrations.upgrade(conn, db.schema_text(), target=2, steps={1: add_region}) == 2
    finally:
        conn.close()


def test_steps_run_one_after_another(v1_db):
    ran = []

    def step1(conn):
        ran.append(1)
        add_region(conn)

    def step2(conn):
        ran.append(2)
        conn.execute("UPDATE sources SET region = 'us' WHERE name = 'beta'")

    conn = connect(v1_db)
    try:
        migrations.upgrade(conn, db.schema_text(), target=3, steps={1: step1, 2: step2})
        assert ran == [1, 2]
        assert user_version(conn) == 3
        assert rows(conn, "SELECT name, region FROM sources ORDER BY name") == [
            {"name": "alpha", "region": "eu"}, {"name": "beta", "region": "us"}]
    finally:
        conn.close()


def test_a_newer_database_is_refused_clearly(v1_db):
    conn = connect(v1_db)
    migrations.upgrade(conn, db.schema_text(), target=2, steps={1: add_region})
    conn.close()
    # This healerd knows version 1 only.
    with pytest.raises(migrations.SchemaTooNew) as exc:
        open_db(v1_db)
    msg = str(exc.value)
    assert "schema version 2" in msg and "newer than this healerd knows (1)" in msg
    assert "--state-dir" in msg
    conn = connect(v1_db)
    try:
        assert user_version(conn) == 2
        assert "region" in columns(conn, "sources")
        assert sources.names(conn) == ["alpha", "beta"]
    finally:
        conn.close()


def test_a_failing_step_leaves_the_old_version(v1_db):
    def broken(conn):
        add_region(conn)
        conn.execute("UPDATE sources SET region = 'half-done'")
        raise RuntimeError("step 1 went wrong")

    conn = connect(v1_db)
    try:
        before = schema_objects(conn)
        with pytest.raises(RuntimeError, match="step 1 went wrong"):
            migrations.upgrade(conn, db.schema_text(), target=2, steps={1: broken})
        assert not conn.in_transaction
        assert user_version(conn) == 1
        assert "region" not in columns(conn, "sources")
        assert schema_objects(conn) == before
        assert sources.names(conn) == ["alpha", "beta"]
    finally:
        conn.close()


def test_a_missing_step_is_named_and_nothing_changes(v1_db):
    conn = connect(v1_db)
    try:
        with pytest.raises(RuntimeError, match="no migration step from schema version 2 to 3"):
            migrations.upgrade(conn, db.schema_text(), target=3, steps={1: add_region})
        assert user_version(conn) == 1
        assert "region" not in columns(conn, "sources")
    finally:
        conn.close()


def test_a_database_from_before_versioning_counts_as_version_1(v1_db):
    conn = connect(v1_db)
    try:
        conn.execute("PRAGMA user_version = 0")
        migrations.upgrade(conn, db.schema_text(), target=2, steps={1: add_region})
        assert user_version(conn) == 2
        assert "region" in columns(conn, "sources")
        assert sources.names(conn) == ["alpha", "beta"]
    finally:
        conn.close()


def test_an_empty_database_needs_no_steps(tmp_path):
    conn = connect(tmp_path / "healerd.db")
    try:
        assert migrations.upgrade(conn, db.schema_text(), target=4, steps={}) == 0
        assert user_version(conn) == 4
        assert "name" in columns(conn, "sources")
    finally:
        conn.close()


def test_the_schema_ships_with_the_package():
    text = db.schema_text()
    assert "CREATE TABLE IF NOT EXISTS sources" in text
    assert "CREATE TABLE IF NOT EXISTS task_queue" in text
    packaged = importlib.resources.files("healerd").joinpath("schema.sql")
    if packaged.is_file():  # a regular install; an editable one reads the repo root's copy
        assert packaged.read_text(encoding="utf-8") == text
    if REPO_SCHEMA.is_file():  # in a checkout: the shipped schema is the one in the repo
        assert REPO_SCHEMA.read_text(encoding="utf-8") == text


def test_opening_waits_for_a_writer_instead_of_failing(tmp_path):
    """A connection opened while another holds a write transaction for longer than
    a moment must wait for it (busy timeout), not fail with 'database is locked'."""
    path = tmp_path / "healerd.db"
    conn = open_db(path)
    for i in range(20):
        sources.add(conn, f"s{i}", blueprint(), now=1000.0)
    holding, release = threading.Event(), threading.Event()

    def writer():
        with conn:
            conn.execute("UPDATE sources SET every_s = 60")
            holding.set()
            release.wait(10)

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert holding.wait(10)
        threading.Timer(0.4, release.set).start()
        other = connect(path)  # raised apsw.BusyError after 100 ms when the open hooks waited only that long
        try:
            other.execute("UPDATE sources SET paused = 1 WHERE name = 's0'")
            assert scalar(other, "SELECT every_s FROM sources WHERE name = 's0'") == 60
        finally:
            other.close()
    finally:
        release.set()
        t.join()
        conn.close()


def test_a_read_only_connection_cannot_write(v1_db):
    conn = connect(v1_db, readonly=True)
    try:
        assert sources.names(conn) == ["alpha", "beta"]
        with pytest.raises(apsw.ReadOnlyError):
            conn.execute("DELETE FROM sources")
    finally:
        conn.close()
