"""Where things are in the checkout, for tests that read the repository's own files."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]   # the checkout: healerd/, docs/, tests/
TESTS = ROOT / "tests"
CORPUS = TESTS / "data" / "corpus"           # real site changes (format: its README.md)
