"""Logging to stderr, one line per event (tracebacks folded onto it), secrets masked, control
characters made visible."""

from __future__ import annotations

import logging
import sys


class _MaskingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        from healerd.core.sanitize import mask_text
        from healerd.core.terminal import visible

        # A message may quote a page, a site's answer or a healer's text: its escape sequences are
        # shown as text (`\x1b[2J`), never acted on by the terminal of whoever tails the journal.
        return visible(one_line(mask_text(super().format(record))), one_line=False)


def one_line(text: str) -> str:
    """One event, one line: a traceback or a multi-line message is folded with ' | '."""
    if "\n" not in text and "\r" not in text:
        return text
    first, *rest = text.splitlines() or [""]
    return " | ".join([first] + [line.strip() for line in rest if line.strip()])


SQLITE_SCHEMA = 17


def _not_sqlite_schema(record: logging.LogRecord) -> bool:
    """SQLite's "statement aborts ... database schema has changed" (SQLITE_SCHEMA) is a notice that it
    re-prepared a statement after another connection changed the schema: nothing for a person, and
    the line carries the full SQL. Dropped; every other SQLite log message is kept."""
    return getattr(record, "sqlite_code", None) != SQLITE_SCHEMA


class _SqliteNoise(logging.Filter):
    """SQLite's own log line when a transaction it already rolled back (a full disk) is rolled
    back again by apsw's `with conn:`: the write's failure is reported once by the StoreWriter."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return not (msg.startswith("SQLITE_LOG:") and "cannot rollback - no transaction is active" in msg)


def setup(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_not_sqlite_schema)
    handler.addFilter(_SqliteNoise())
    handler.setFormatter(_MaskingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, str(level).upper(), logging.INFO))
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)
    logging.getLogger("pykka").setLevel(logging.WARNING)
    logging.getLogger("transitions").setLevel(logging.WARNING)
