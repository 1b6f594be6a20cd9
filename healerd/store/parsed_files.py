"""The parsed form of each sources_dir blueprint file, kept between starts, so a restart parses
only the files whose bytes changed.

A file's entry is its name, the SHA-256 of its bytes, the parsing rules that read it (`rules()`:
this healerd's version, the TOML parser's and selectolax's, and the text of the core modules that
check a blueprint) and the blueprint it gave, as `Blueprint.to_json()`. A file whose bytes and
rules are those of its entry is not parsed again: its blueprint's JSON is compared with the
registered one as is (most files at a restart: unchanged, nothing to do), and turned into a
Blueprint only where one is needed. Only selector blueprints that parsed are kept: a file that
fails is parsed again each time (it says why each time), and a code `parser` is checked by the
sandbox, whose verdict depends on the machine.

The entries live in a SQLite file of their own beside the database (`parsed_files.db`): nothing
in it is the sources' data, only a cache the sync reads and rewrites on its own thread, so it
takes no part in the database's schema versions or its one writer. A cache that cannot be opened
or read is no error: every file is then parsed, as without it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import apsw

from healerd import __version__
from healerd.core import blueprint as blueprint_module
from healerd.core import terminal, timeutil
from healerd.core.blueprint import Blueprint, from_json, parse_file_bytes

log = logging.getLogger("healerd.sources_dir")

FILE_NAME = "parsed_files.db"
_SCHEMA = ("CREATE TABLE IF NOT EXISTS parsed_files (file_name TEXT PRIMARY KEY, sha256 TEXT NOT NULL, "
           "rules TEXT NOT NULL, blueprint TEXT NOT NULL) WITHOUT ROWID")


@lru_cache(maxsize=1)
def rules() -> str:
    """What decides the blueprint a file's bytes give: a new release, parser or check reads every file again."""
    h = hashlib.sha256(__version__.encode())
    for dist in ("tomli", "selectolax"):
        try:
            h.update(f"{dist} {metadata.version(dist)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{dist} -".encode())
    for module in (blueprint_module, timeutil, terminal):
        h.update(Path(module.__file__ or "").read_bytes())
    h.update(sys.version.encode())
    return h.hexdigest()[:32]


class ParsedFiles:
    """The entries of one sources_dir sync: `blueprint_json` per file, then `save` once."""

    def __init__(self, state_dir: str | os.PathLike):
        self.path = Path(state_dir) / FILE_NAME
        self.rules = rules()
        self.known: dict[str, tuple[str, str]] = {}       # file name -> (sha256, blueprint JSON)
        self.fresh: dict[str, tuple[str, str]] = {}       # parsed in this sync, to be saved
        self.seen: set[str] = set()
        self.conn: apsw.Connection | None = None
        try:
            self.conn = apsw.Connection(str(self.path))
            self.conn.setbusytimeout(5000)
            self.conn.execute(_SCHEMA)
            self.known = {r[0]: (r[1], r[3]) for r in self.conn.execute(
                "SELECT file_name, sha256, rules, blueprint FROM parsed_files") if r[2] == self.rules}
        except apsw.Error as exc:   # no cache: every file is parsed
            log.warning("sources_dir: the parsed files cache %s cannot be used (%s); every file is parsed",
                        self.path, exc)
            self.close()

    def blueprint_json(self, file_name: str, path: str, raw: bytes) -> tuple[str, Blueprint | None]:
        """The JSON of the blueprint the bytes `raw` of the file `file_name` (at `path`) hold, and the
        Blueprint when the file had to be parsed (None when its entry gave the JSON).
        BlueprintError when they hold none."""
        self.seen.add(file_name)
        sha = hashlib.sha256(raw).hexdigest()
        hit = self.known.get(file_name)
        if hit is not None and hit[0] == sha:
            return hit[1], None
        bp = parse_file_bytes(raw, path, require_url=True)
        text = bp.to_json()
        if not bp.parser:
            self.fresh[file_name] = (sha, text)
        return text, bp

    @staticmethod
    def blueprint(text: str, parsed: Blueprint | None) -> Blueprint:
        """The Blueprint of `blueprint_json`'s answer (read back from its JSON when it was not parsed)."""
        return parsed if parsed is not None else from_json(text)

    def save(self) -> None:
        """Keep this sync's new entries and drop those of files no longer there (or read by other rules)."""
        if self.conn is None:
            return
        try:
            with self.conn:
                gone = [(name,) for name in self.known if name not in self.seen]
                if gone or len(self.known) != self._stored():
                    self.conn.execute("DELETE FROM parsed_files WHERE rules != ?", (self.rules,))
                    self.conn.executemany("DELETE FROM parsed_files WHERE file_name = ?", gone)
                self.conn.executemany(
                    "INSERT INTO parsed_files (file_name, sha256, rules, blueprint) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (file_name) DO UPDATE SET sha256 = excluded.sha256, rules = excluded.rules, "
                    "blueprint = excluded.blueprint",
                    [(name, sha, self.rules, text) for name, (sha, text) in self.fresh.items()])
        except apsw.Error as exc:
            log.warning("sources_dir: the parsed files cache %s was not updated (%s)", self.path, exc)

    def _stored(self) -> int:
        assert self.conn is not None
        return int(next(iter(self.conn.execute("SELECT count(*) FROM parsed_files")))[0])

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
