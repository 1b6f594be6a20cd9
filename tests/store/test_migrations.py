"""Schema versioning: PRAGMA user_version, in-place upgrades, refusing newer databases."""

from __future__ import annotations

import importlib.resources
import threading

import apsw
import pytest

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.store import db, migrations, sources
from healerd.store.db import connect, open_db
from healerd.store.sql import rows, scalar
from tests.support.paths import ROOT

REPO_SCHEMA = ROOT / "schema.sql"


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


V = migrations.SCHEMA_VERSION


@pytest.fixture
def v1_db(tmp_path):
    """A database at the current schema version holding two sources; returns its path."""
    path = tmp_path / "healerd.db"
    conn = open_db(path)
    sources.add(conn, "alpha", blueprint(), now=1000.0)
    sources.add(conn, "beta", blueprint(), now=1001.0)
    conn.close()
    return path


def test_new_database_gets_the_schema_and_its_version(tmp_path):
    conn = open_db(tmp_path / "sub" / "healerd.db")
    try:
        assert user_version(conn) == migrations.SCHEMA_VERSION == 6
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
    assert migrations.upgrade(conn, db.schema_text()) == V
    assert user_version(conn) == V
    assert schema_objects(conn) == before
    assert rows(conn, "SELECT * FROM sources ORDER BY name") == data_before
    conn.close()
    conn = open_db(v1_db)
    try:
        assert user_version(conn) == V
        assert sources.names(conn) == ["alpha", "beta"]
    finally:
        conn.close()


def test_in_place_upgrade_keeps_the_data(v1_db):
    conn = connect(v1_db)
    try:
        before = rows(conn, "SELECT * FROM sources ORDER BY name")
        assert migrations.upgrade(conn, db.schema_text(), target=V + 1, steps={V: add_region}) == V
        assert user_version(conn) == V + 1
        assert "region" in columns(conn, "sources")
        after = rows(conn, "SELECT * FROM sources ORDER BY name")
        assert [{k: v for k, v in r.items() if k != "region"} for r in after] == before
        assert [r["region"] for r in after] == ["eu", "eu"]
        assert sources.states(conn) == {"alpha": "ACTIVE", "beta": "ACTIVE"}
        # At the target already: nothing runs again.
        assert migrations.upgrade(conn, db.schema_text(), target=V + 1, steps={V: add_region}) == V + 1
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
        migrations.upgrade(conn, db.schema_text(), target=V + 2, steps={V: step1, V + 1: step2})
        assert ran == [1, 2]
        assert user_version(conn) == V + 2
        assert rows(conn, "SELECT name, region FROM sources ORDER BY name") == [
            {"name": "alpha", "region": "eu"}, {"name": "beta", "region": "us"}]
    finally:
        conn.close()


def test_a_newer_database_is_refused_clearly(v1_db):
    conn = connect(v1_db)
    migrations.upgrade(conn, db.schema_text(), target=V + 1, steps={V: add_region})
    conn.close()
    # This healerd knows version V only.
    with pytest.raises(migrations.SchemaTooNew) as exc:
        open_db(v1_db)
    msg = str(exc.value)
    assert f"schema version {V + 1}" in msg and f"newer than this healerd knows ({V})" in msg
    assert "--state-dir" in msg
    conn = connect(v1_db)
    try:
        assert user_version(conn) == V + 1
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
            migrations.upgrade(conn, db.schema_text(), target=V + 1, steps={V: broken})
        assert not conn.in_transaction
        assert user_version(conn) == V
        assert "region" not in columns(conn, "sources")
        assert schema_objects(conn) == before
        assert sources.names(conn) == ["alpha", "beta"]
    finally:
        conn.close()


def test_a_missing_step_is_named_and_nothing_changes(v1_db):
    conn = connect(v1_db)
    try:
        with pytest.raises(RuntimeError, match=f"no migration step from schema version {V + 1} to {V + 2}"):
            migrations.upgrade(conn, db.schema_text(), target=V + 2, steps={V: add_region})
        assert user_version(conn) == V
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



@pytest.mark.parametrize("readonly", [False, True])
def test_a_cached_join_is_not_prepared_again_for_each_new_value(tmp_path, readonly):
    """A statement joining a source with its health, run for one source after another, is
    compiled once and then reused from the statement cache. SQLite asks the authorizer only
    while it compiles a statement, so its calls count the compilations. (Built with STAT4,
    SQLite otherwise marks such a statement's parameter as able to change the plan and
    compiles it again on every run: 35 µs instead of 6 on each scrape outcome.)"""
    path = tmp_path / "healerd.db"
    setup = open_db(path)
    for i in range(5):
        sources.add(setup, f"s{i}", blueprint(), now=1000.0)
    setup.execute("ANALYZE")   # statistics, as PRAGMA optimize gathers them over time
    setup.close()
    conn = connect(path, readonly=readonly)
    compiled = []
    conn.authorizer = lambda *args: compiled.append(args) or apsw.SQLITE_OK
    sql = "SELECT s.*, h.* FROM sources s JOIN source_health h ON h.source_name = s.name WHERE s.name = ?"
    try:
        assert rows(conn, sql, ("s0",))[0]["name"] == "s0"
        once = len(compiled)
        assert once > 0
        for i in range(1, 5):
            assert rows(conn, sql, (f"s{i}",))[0]["state"] == "ACTIVE"
        assert len(compiled) == once
    finally:
        conn.close()

V1_FIX_HISTORY = """CREATE TABLE fix_history (fix_id INTEGER PRIMARY KEY AUTOINCREMENT, source_name TEXT NOT NULL,
    error_type TEXT NOT NULL, strategy TEXT NOT NULL, outcome TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '',
    diagnosis_context TEXT, patch_generated TEXT, validation_result TEXT, deployed_to TEXT, version INTEGER,
    fingerprint TEXT, duration_ms REAL, failure_started_at REAL, created_at REAL NOT NULL)"""
V1_PARSER_VERSIONS = """CREATE TABLE parser_versions (id INTEGER PRIMARY KEY AUTOINCREMENT,
    source_name TEXT NOT NULL REFERENCES sources(name) ON DELETE CASCADE, version INTEGER NOT NULL,
    kind TEXT NOT NULL DEFAULT 'selectors', body TEXT NOT NULL, origin TEXT NOT NULL, status TEXT NOT NULL,
    validation TEXT, note TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL, promoted_at REAL,
    UNIQUE (source_name, version))"""


def test_version_1_gains_production_verdicts(tmp_path):
    """A real version-1 database (fix_history and parser_versions without the probation columns)
    is upgraded in place: the columns appear, old promoted fixes count as passed, nothing is lost."""
    path = tmp_path / "healerd.db"
    conn = connect(path)
    try:
        conn.execute(V1_FIX_HISTORY)
        conn.execute(V1_PARSER_VERSIONS)
        conn.execute("CREATE TABLE sources (name TEXT PRIMARY KEY)")
        conn.execute("INSERT INTO fix_history (source_name, error_type, strategy, outcome, created_at) VALUES "
                     "('a', 'PARSE_ERROR', 'builtin', 'promoted', 10.0), ('a', 'PARSE_ERROR', 'builtin', 'rejected', 11.0)")
        conn.execute("PRAGMA user_version = 1")
    finally:
        conn.close()
    conn = open_db(path)
    try:
        assert user_version(conn) == migrations.SCHEMA_VERSION
        assert {"production_verdict", "verdict_at"} <= set(columns(conn, "fix_history"))
        assert {"probation_scrapes", "promoted_by", "production_verdict"} <= set(columns(conn, "parser_versions"))
        assert rows(conn, "SELECT outcome, production_verdict, verdict_at FROM fix_history ORDER BY fix_id") == [
            {"outcome": "promoted", "production_verdict": "passed", "verdict_at": 10.0},
            {"outcome": "rejected", "production_verdict": None, "verdict_at": None}]
        assert "version_snapshots" in {r["name"] for r in rows(conn, "SELECT name FROM sqlite_master")}
    finally:
        conn.close()


def test_version_5_gains_the_value_profiles_table(tmp_path):
    """A version-5 database (no value_profiles) is upgraded in place: the table appears, empty,
    and a source's profiles are kept, read and forgotten with it."""
    from healerd.store import value_profiles

    path = tmp_path / "healerd.db"
    conn = open_db(path)
    sources.add(conn, "alpha", blueprint(), now=1000.0)
    conn.execute("DROP TABLE value_profiles")
    conn.execute("PRAGMA user_version = 5")
    conn.close()
    conn = open_db(path)
    try:
        assert user_version(conn) == migrations.SCHEMA_VERSION == 6
        assert value_profiles.load(conn, "alpha") == {}
        value_profiles.save(conn, "alpha", {"title": {"v": 1, "scrapes": 1}}, 5.0)
        value_profiles.save(conn, "alpha", {"title": {"v": 1, "scrapes": 2}}, 6.0)
        assert value_profiles.load(conn, "alpha") == {"title": {"v": 1, "scrapes": 2}}
        sources.remove(conn, "alpha")
        assert scalar(conn, "SELECT count(*) FROM value_profiles") == 0
    finally:
        conn.close()
