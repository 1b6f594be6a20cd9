"""healerctl's printing: one error line and the exit codes, JSON, tables, colours, times and
durations, and text from outside (a page, a site, a healer) made safe for a terminal.

Exit codes: 0 success; 1 the request was refused or failed (one line on stderr saying
why); 2 usage error; 3 the daemon cannot be reached (the message names the socket).
"""

from __future__ import annotations

import click

from healerd.cli.text import (  # noqa: F401  (the printing helpers, re-exported for the commands)
    LEVEL_COLOURS,
    STATE_COLOURS,
    STATES,
    _cell,
    _duration,
    _one_line,
    _print_json,
    _print_mapping,
    _rate,
    _rel,
    _state,
    _style,
    _table,
    _ts,
    _tty,
    _when,
    echo,
)
from healerd.core.terminal import visible


class CtlError(click.ClickException):
    """One line on stderr, `healerctl: <message>`, and the given exit code."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(visible(message))
        self.exit_code = exit_code  # type: ignore[misc]  # click declares it a class variable; each error has its own

    def show(self, file=None) -> None:
        click.echo(f"healerctl: {self.format_message()}", err=True)
