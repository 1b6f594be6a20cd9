"""healerctl's requests to the daemon: the `--socket` and `--json` options every command takes,
the timeouts, and the daemon's answers turned into healerctl's errors (exit 1, or 3 when the
daemon cannot be reached or refuses this user)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import click

from healerd.cli.light import refusal
from healerd.cli.output import CtlError
from healerd.control.client import DaemonUnreachable, call, client_socket_path
from healerd.control.protocol import ControlError

DEFAULT_TIMEOUT = 30.0
RUN_TIMEOUT = 900.0      # a scrape: fetch timeouts, retries, rate limits
HEAL_TIMEOUT = 1800.0    # the whole healing ladder, an external healer's cycles included
FOLLOW_INTERVAL = 0.5    # --follow polls twice a second


def socket_option(f: Callable) -> Callable:
    return click.option(
        "--socket", "socket_path", metavar="PATH", default=None,
        help="The daemon's control socket (overrides the group's --socket and $HEALERD_SOCKET).",
    )(f)


def json_option(f: Callable) -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="Print the daemon's answer as JSON.")(f)


def _socket(ctx: click.Context, socket_path: str | None) -> str:
    root = ctx.find_root().obj or {}
    return client_socket_path(socket_path or root.get("socket"))


def _call(ctx: click.Context, socket_path: str | None, op: str, args: dict | None = None,
          timeout: float = DEFAULT_TIMEOUT) -> Any:
    root = ctx.find_root().obj or {}
    if root.get("timeout"):
        timeout = root["timeout"]
    path = _socket(ctx, socket_path)
    try:
        return call(path, op, args or {}, timeout=timeout)
    except DaemonUnreachable as exc:
        raise CtlError(str(exc), exit_code=3) from None
    except ControlError as exc:
        raise _error_answer(exc, path) from None


def poll_follow(path: str, op: str, args_after: Callable[[], dict], emit: Callable[[Any], None]) -> None:
    """Poll `op` twice a second until Ctrl-C, handing each answer to `emit` (which prints it and
    moves the cursor `args_after` reads). A daemon that cannot be reached (restarting) is said once
    on stderr and tried again; its coming back is said once too."""
    lost = False
    try:
        while True:
            time.sleep(FOLLOW_INTERVAL)
            try:
                answer = call(path, op, args_after(), timeout=DEFAULT_TIMEOUT)
            except DaemonUnreachable as exc:
                if not lost:
                    click.echo(f"healerctl: {exc}; still trying", err=True)
                    lost = True
                continue
            except ControlError as exc:
                raise _error_answer(exc, path) from None
            if lost:
                click.echo("healerctl: connected to the daemon again", err=True)
                lost = False
            emit(answer)
            sys.stdout.flush()
    except KeyboardInterrupt:
        return


def _error_answer(exc: ControlError, path: str) -> CtlError:
    """The daemon's error answer as healerctl's error: exit 1, or 3 when this user may not use it.

    A peer the daemon refuses (SO_PEERCRED, `forbidden`) cannot use it at all, the same as a
    socket it has no permission to open: exit 3 with "permission denied" and the socket path.
    """
    line, code = refusal(exc, path)
    return CtlError(line, exit_code=code)
