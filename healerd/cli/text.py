"""healerctl's printing without click: lines on stdout, JSON, tables, colours, times and
durations, and text from outside (a page, a site, a healer) made safe for a terminal.

The common queries (`healerctl status NAME`, `ping`, `records`) print through this module alone
(healerd/cli/light.py), so they start without importing click; the click commands print through
it too, so both print the same text.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from healerd.core.terminal import json_text, visible
from healerd.core.timeutil import ago, parse_iso

# typing only for the type checker: importing it costs healerctl's light path ~10 ms of CPU
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# click.style's codes for the colours healerctl uses (click's own table), so a styled line is the
# same text whichever path printed it.
_FG = {"red": 31, "green": 32, "yellow": 33, "magenta": 35, "cyan": 36}


def echo(line: str = "", err: bool = False) -> None:
    """One line on stdout (or stderr), flushed: what click.echo does with healerctl's lines."""
    stream = sys.stderr if err else sys.stdout
    stream.write(line + "\n")
    stream.flush()


def _ansi(text: str, colour: str | None, bold: bool) -> str:
    """`click.style(text, fg=colour, bold=bold or None)`, without click."""
    return (f"\033[{_FG[colour]}m" if colour else "") + ("\033[1m" if bold else "") + text + "\033[0m"


STATE_COLOURS = {"ACTIVE": "green", "DEGRADED": "yellow", "QUARANTINED": "magenta", "DEAD": "red"}
LEVEL_COLOURS = {"warning": "yellow", "error": "red", "critical": "red", "info": "cyan"}
STATES = ("ACTIVE", "DEGRADED", "QUARANTINED", "DEAD")


def _print_json(obj: Any) -> None:
    echo(json_text(obj, indent=2))


def _tty() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _style(text: str, colour: str | None, bold: bool = False) -> str:
    if not (colour or bold) or not _tty():
        return text
    return _ansi(text, colour, bold)


def _state(state: Any) -> str:
    text = str(state or "-")
    return _style(text, STATE_COLOURS.get(text), bold=text in ("QUARANTINED", "DEAD"))


def _ts(value: Any) -> float | None:
    if not value:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return parse_iso(str(value))
    except ValueError:
        return None


def _rel(value: Any) -> str:
    ts = _ts(value)
    return "-" if ts is None else ago(ts)


def _when(value: Any) -> str:
    """'3m ago (2026-11-22T10:00:00Z)' or '-'."""
    if not value:
        return "-"
    return f"{_rel(value)} ({value})"


def _duration(seconds: Any) -> str:
    if seconds is None:
        return "-"
    s = float(seconds)
    if s < 1:
        return f"{s * 1000:.0f}ms"
    if s < 60:
        return f"{s:.0f}s" if s >= 10 or s == int(s) else f"{s:.1f}s"
    parts = []
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m"), (1, "s")):
        if s >= size:
            n = int(s // size)
            s -= n * size
            parts.append(f"{n}{unit}")
    return " ".join(parts[:2])


def _rate(value: Any) -> str:
    if value is None:
        return "-"
    v = float(value)
    if v > 1.0:  # already a percentage
        return f"{v:.0f}%"
    return f"{v * 100:.0f}%"


def _one_line(value: Any, width: int | None = None) -> str:
    """One line of text from outside (a page, a site, a healer, an error): controls made visible."""
    text = (visible(value) or "-") if value not in (None, "") else "-"
    if width and len(text) > width:
        text = text[: width - 1] + "…"
    return text


def _table(headers: list[str], rows: list[list[str]], colours: dict[int, Callable[[str], str]] | None = None) -> None:
    """Print an aligned table; `colours` styles a column's cells after padding."""
    colours = colours or {}
    headers = [visible(h) for h in headers]
    rows = [[visible(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    last = len(headers) - 1
    echo("  ".join(h if i == last else h.ljust(widths[i]) for i, h in enumerate(headers)).rstrip())
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            padded = cell if i == last else cell.ljust(widths[i])
            if i in colours:
                padded = colours[i](cell) + padded[len(cell):]
            cells.append(padded)
        echo("  ".join(cells).rstrip())



def _print_mapping(obj: Any, indent: int = 2) -> None:
    pad = " " * indent
    if isinstance(obj, dict):
        for key, value in obj.items():
            key = visible(key).replace("_", " ")
            if isinstance(value, (dict, list)) and value:
                echo(f"{pad}{key}:")
                _print_mapping(value, indent + 2)
            else:
                echo(f"{pad}{key}: {_one_line(value) if value not in ({}, []) else '-'}")
    elif isinstance(obj, list):
        for i, value in enumerate(obj, 1):
            if isinstance(value, dict):
                echo(f"{pad}{i}.")
                _print_mapping(value, indent + 3)
            else:
                echo(f"{pad}{i}. {_one_line(value)}")
    else:
        echo(f"{pad}{_one_line(obj)}")



def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json_text(value, separators=(",", ":"))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

