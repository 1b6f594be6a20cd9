"""Logging to stderr, one line per event, secrets masked."""

from __future__ import annotations

import logging
import sys


class _MaskingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        from healerd.sanitize import mask_text

        return mask_text(super().format(record))


def setup(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_MaskingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, str(level).upper(), logging.INFO))
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)
    logging.getLogger("pykka").setLevel(logging.WARNING)
    logging.getLogger("transitions").setLevel(logging.WARNING)
