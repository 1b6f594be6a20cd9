"""healerctl's printing: one error line and the exit codes, JSON, tables, colours, times and
durations, and text from outside (a page, a site, a healer) made safe for a terminal.

Exit codes: 0 success; 1 the request was refused or failed (one line on stderr saying
why); 2 usage error; 3 the daemon cannot be reached (the message names the socket).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import click

from healerd.core.terminal import json_text, visible
from healerd.core.timeutil import ago, parse_iso

STATE_COLOURS = {"ACTIVE": "green", "DEGRADED": "yellow", "QUARANTINED": "magenta", "DEAD": "red"}
LEVEL_COLOURS = {"warning": "yellow", "error": "red", "critical": "red", "info": "cyan"}
STATES = ("ACTIVE", "DEGRADED", "QUARANTINED", "DEAD")


class CtlError(click.ClickException):
    """One line on stderr, `healerctl: <message>`, and the given exit code."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(visible(message))
        self.exit_code = exit_code  # type: ignore[misc]  # click declares it a class variable; each error has its own

    def show(self, file=None) -> None:
        click.echo(f"healerctl: {self.format_message()}", err=True)


def _print_json(obj: Any) -> None:
    click.echo(json_text(obj, indent=2))


def _tty() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _style(text: str, colour: str | None, bold: bool = False) -> str:
    if not (colour or bold) or not _tty():
        return text
    return click.style(text, fg=colour, bold=bold or None)


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
    click.echo("  ".join(h if i == last else h.ljust(widths[i]) for i, h in enumerate(headers)).rstrip())
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            padded = cell if i == last else cell.ljust(widths[i])
            if i in colours:
                padded = colours[i](cell) + padded[len(cell):]
            cells.append(padded)
        click.echo("  ".join(cells).rstrip())



def _print_mapping(obj: Any, indent: int = 2) -> None:
    pad = " " * indent
    if isinstance(obj, dict):
        for key, value in obj.items():
            key = visible(key).replace("_", " ")
            if isinstance(value, (dict, list)) and value:
                click.echo(f"{pad}{key}:")
                _print_mapping(value, indent + 2)
            else:
                click.echo(f"{pad}{key}: {_one_line(value) if value not in ({}, []) else '-'}")
    elif isinstance(obj, list):
        for i, value in enumerate(obj, 1):
            if isinstance(value, dict):
                click.echo(f"{pad}{i}.")
                _print_mapping(value, indent + 3)
            else:
                click.echo(f"{pad}{i}. {_one_line(value)}")
    else:
        click.echo(f"{pad}{_one_line(obj)}")



def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json_text(value, separators=(",", ":"))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

