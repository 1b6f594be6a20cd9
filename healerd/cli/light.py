"""The common queries answered without click: `healerctl status NAME`, `ping` and `records NAME`.

Scripts and monitors ask these often, and importing click costs a `healerctl` process more CPU
than everything else it does for them. `answer(argv)` handles exactly their plain forms — the
group's `--socket`, then the command with its NAME, `--json`, `--socket` (and `records`'
`--limit N`), in any order, the last of a repeated option winning as with click — and prints
what the click commands print (they print through the same healerd/cli/views.py and text.py),
errors as one `healerctl: ...` line with the same exit codes. Anything else (help, another
command or option, a malformed one, `--timeout`) returns None and goes to the click group, which
also reports every usage error.
"""

from __future__ import annotations

import os
import sys

from healerd.cli.text import _print_json, echo
from healerd.control.client import DaemonUnreachable, call, client_socket_path
from healerd.control.protocol import ControlError
from healerd.core.terminal import visible

# typing only for the type checker: importing it costs healerctl's light path ~10 ms of CPU
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_TIMEOUT = 30.0   # healerd.cli.calls.DEFAULT_TIMEOUT
RECORDS_LIMIT = 20       # `records --limit`'s default
_FLAGS = {"status": ("--json",), "records": ("--json",), "ping": ()}
_VALUED = {"status": ("--socket",), "records": ("--socket", "--limit"), "ping": ("--socket",)}
_ARGS = {"status": 1, "records": 1, "ping": 0}


def _parse(argv: list[str]) -> tuple[str, dict[str, Any], list[str], str | None] | None:
    """(command, its options, its arguments, the group's --socket), or None for any other form."""
    group_socket = None
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        tok = argv[i]
        if tok == "--socket" and i + 1 < len(argv):
            group_socket, i = argv[i + 1], i + 2
        elif tok.startswith("--socket="):
            group_socket, i = tok.split("=", 1)[1], i + 1
        else:
            return None
    if i >= len(argv) or argv[i] not in _FLAGS:
        return None
    command, rest = argv[i], argv[i + 1:]
    options: dict[str, Any] = {}
    args: list[str] = []
    j = 0
    while j < len(rest):
        tok = rest[j]
        name, eq, value = tok.partition("=")
        if tok in _FLAGS[command]:
            options[tok] = True
        elif name in _VALUED[command] and eq:
            options[name] = value
        elif tok in _VALUED[command] and j + 1 < len(rest):
            options[tok] = rest[j + 1]
            j += 1
        elif tok.startswith("-") or not tok:
            return None
        else:
            args.append(tok)
        j += 1
    if len(args) != _ARGS[command]:
        return None
    return command, options, args, group_socket


def refusal(exc: Exception, path: str) -> tuple[str, int]:
    """The line (after `healerctl: `) and exit code of a request that did not get an answer:
    3 when the daemon cannot be reached or refuses this user (SO_PEERCRED, `forbidden`), else 1."""
    if isinstance(exc, DaemonUnreachable):
        return str(exc), 3
    assert isinstance(exc, ControlError)
    if exc.code == "forbidden":
        return str(DaemonUnreachable(f"permission denied ({exc.message or 'refused by the daemon'})", path)), 3
    return exc.message or exc.code, 1


def answer(argv: list[str]) -> int | None:
    """Run `healerctl ARGV` when it is one of the plain common queries: its exit code; else None."""
    parsed = _parse(argv)
    if parsed is None:
        return None
    command, options, args, group_socket = parsed
    request: dict[str, Any] = {}
    if command == "records":
        limit = options.get("--limit", str(RECORDS_LIMIT))
        if not (limit.isascii() and limit.isdigit()) or int(limit) < 1:
            return None   # click says what is wrong with it
        request = {"name": args[0], "limit": int(limit)}
    elif command == "status":
        request = {"name": args[0]}
    # The click group's --socket falls back to $HEALERD_SOCKET when not given (an empty one is none).
    path = client_socket_path(options.get("--socket") or group_socket or os.environ.get("HEALERD_SOCKET") or None)
    try:
        try:
            r = call(path, command, request, timeout=DEFAULT_TIMEOUT)
        except (DaemonUnreachable, ControlError) as exc:
            line, code = refusal(exc, path)
            echo(f"healerctl: {visible(line)}", err=True)
            return code
        _print(command, options, args, r)
    except BrokenPipeError:   # e.g. `healerctl records NAME | head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
    return 0


def _print(command: str, options: dict[str, Any], args: list[str], r: Any) -> None:
    from healerd.cli import views

    if options.get("--json"):
        _print_json(r)
    elif command == "status":
        views._print_detail(r)
    elif command == "ping":
        views.print_ping(r)
    else:
        views.print_records_table(args[0], r, int(options.get("--limit", RECORDS_LIMIT)))
