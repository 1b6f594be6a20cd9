"""Opening the SQLite database and applying the schema.

One apsw connection per thread: every actor that touches the database opens its
own with `open_db`. Writes go through the StoreWriter actor's connection only
(see docs/ARCHITECTURE.md); readers use their own connections, which WAL lets run
beside the writer.
"""

from __future__ import annotations

import functools
import os
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

import apsw
import apsw.bestpractice

from healerd.core.errors import HealerdError
from healerd.store import migrations

# What a connection is, for the modules above the store that hold one and hand it back to
# store functions (apsw itself is imported in healerd/store only).
Connection = apsw.Connection

DB_FILENAME = "healerd.db"
BUSY_TIMEOUT_MS = 10_000

_bestpractice_applied = False


def schema_text() -> str:
    """The schema shipped in the package (or, in a source checkout, the repo root's)."""
    try:
        packaged = resources.files("healerd").joinpath("schema.sql")
        if packaged.is_file():
            return packaged.read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        pass
    root = Path(__file__).resolve().parents[2] / "schema.sql"
    if root.is_file():
        return root.read_text(encoding="utf-8")
    raise RuntimeError("schema.sql is missing from the healerd package; reinstall healerd")


def connection_busy_timeout_long(connection: apsw.Connection) -> None:
    """Wait up to BUSY_TIMEOUT_MS for a lock, already while the connection opens.

    The recommended hooks run `PRAGMA optimize` as the connection opens, and their own
    busy timeout is 100 ms: opening beside a longer write transaction would fail."""
    connection.set_busy_timeout(BUSY_TIMEOUT_MS)


def _apply_bestpractice() -> None:
    global _bestpractice_applied
    if not _bestpractice_applied:
        hooks = tuple(connection_busy_timeout_long if f is apsw.bestpractice.connection_busy_timeout else f
                      for f in apsw.bestpractice.recommended)
        apsw.bestpractice.apply(hooks)
        _bestpractice_applied = True


def connect(path: str | os.PathLike, readonly: bool = False) -> apsw.Connection:
    """A configured connection: WAL, synchronous=NORMAL, foreign keys, busy timeout, stable query plans."""
    _apply_bestpractice()
    flags = apsw.SQLITE_OPEN_READONLY if readonly else (apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
    conn = apsw.Connection(str(path), flags=flags)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    with conn:
        pass
    conn.execute("PRAGMA foreign_keys = ON")
    if not readonly:
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    # One plan per statement whatever its bound values. Without it, this SQLite (built with
    # STAT4) marks a join's bound parameters as plan-changing and prepares the statement again
    # on every execution, cached or not: a source's row joined with its health took 35 µs
    # instead of 6, on every scrape outcome the StoreWriter records.
    conn.config(apsw.SQLITE_DBCONFIG_ENABLE_QPSG, 1)
    # Status answers show a source's URL through this: its credentials and secret query values masked.
    conn.create_scalar_function("healerd_mask_url", _mask_url, 1, deterministic=True)
    return conn


def _mask_url(url):
    return url if url is None else _masked_url(url)


@functools.lru_cache(maxsize=1 << 17)
def _masked_url(url: str) -> str:
    """mask_url, remembered: a status answer masks every source's URL (about 12 µs each, 120 ms
    for 10,000 sources), and the URLs hardly change between two answers. Sized for a fleet of
    100,000 sources (~30 MB when full): a fleet read page after page in name order, larger
    than the cache, would evict every URL before it is asked again."""
    from healerd.core.sanitize import mask_url

    return mask_url(url)


def masked_source_url(url: str) -> str:
    """A source's URL as status answers show it (credentials and secret query values masked), remembered."""
    return _masked_url(url)


def open_db(path: str | os.PathLike) -> apsw.Connection:
    """Open (creating if needed) the database and bring its schema to the newest version."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = connect(path)
    migrations.upgrade(conn, schema_text())
    return conn


class DatabaseCorrupt(HealerdError):
    """The database file fails SQLite's integrity check (or is not a database at all)."""


def check_integrity(path: str | os.PathLike) -> None:
    """`PRAGMA quick_check` on an existing database file; DatabaseCorrupt (one line) when it fails.

    Run once at start, before anything writes: a corrupt database must stop the daemon with a
    clear message, not run with every source looking ACTIVE."""
    if not Path(path).exists() or Path(path).stat().st_size == 0:
        return
    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
        try:
            conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            found = [r[0] for r in conn.execute("PRAGMA quick_check(5)")]
        finally:
            conn.close()
    except apsw.Error as exc:
        raise DatabaseCorrupt(f"the database {path} cannot be read: {exc}") from None
    if found != ["ok"]:
        raise DatabaseCorrupt(f"the database {path} failed its integrity check: {'; '.join(map(str, found))[:300]}")


def data_version(conn: apsw.Connection) -> int:
    """SQLite's `PRAGMA data_version` on this connection: it changes when another connection commits."""
    return int(conn.execute("PRAGMA data_version").fetchall()[0][0])


def db_path(state_dir: str | os.PathLike) -> Path:
    return Path(state_dir) / DB_FILENAME


@contextmanager
def transaction(conn: apsw.Connection):
    """`with transaction(conn):` — one transaction, rolled back on any exception."""
    with conn:
        yield conn


@contextmanager
def write_transaction(conn: apsw.Connection):
    """One write transaction that holds the write lock from its first statement (BEGIN IMMEDIATE).

    A transaction begun deferred reads first and upgrades to a writer at its first write; if
    another connection committed in between, that upgrade fails at once with "database is
    locked" (the busy timeout does not apply). Taking the lock first makes every read-then-write
    inside safe: a rival commit waits for this one, or this one waits (busy timeout) for it.
    The `with conn:` blocks inside nest as savepoints."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
