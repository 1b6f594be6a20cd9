"""Helpers the bench scripts share (run as `python bench/NAME.py`, so this folder is on sys.path)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile by nearest rank (p in 0..100) of a non-empty list."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def bin_cmd(name: str) -> list[str]:
    """The installed console script next to this interpreter, else on PATH, else the module."""
    script = Path(sys.executable).parent / name
    if script.exists():
        return [str(script)]
    found = shutil.which(name)
    if found:
        return [found]
    return [sys.executable, "-m", "healerd" if name == "healerd" else "healerd.cli.healerctl"]
