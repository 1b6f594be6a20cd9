"""healerctl's click group: its options and every command registered on it.

Exit codes: 0 success; 1 the request was refused or failed (one line on stderr saying
why); 2 usage error; 3 the daemon cannot be reached (the message names the socket).

The entry point (`healerd.cli.healerctl:main`) answers the common queries without click
(healerd/cli/light.py) and hands everything else to `main` here. The commands live by what
they act on: `sources_cmds` (add, update, remove, pause, resume, run,
status), `versions_cmds` (history, diff, rollback, approve, heal, unquarantine), `fleet_cmds`
(ping, stats, alerts, reload, resume-healing, memory), `data_out` (records, changes, feeds),
`blueprint_cmds` (export, try, suggest);
`calls` talks to the daemon, `output`, `text` and `views` print. Heavy modules (lexbor for
blueprints) are imported only inside the commands that need them.
"""

from __future__ import annotations

import os
import sys

import click

from healerd import __version__
from healerd.cli import blueprint_cmds, data_out, fleet_cmds, sources_cmds, versions_cmds


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--socket", "socket_path", metavar="PATH", envvar="HEALERD_SOCKET", default=None,
              help="The daemon's control socket. Default: $HEALERD_SOCKET, else "
                   "$RUNTIME_DIRECTORY/healerd.sock, else <state-dir>/healerd.sock.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=None, metavar="SECONDS",
              help="How long to wait for the daemon's answer (default: 30s; longer for run and heal).")
@click.version_option(__version__, "--version", prog_name="healerctl")
@click.pass_context
def cli(ctx: click.Context, socket_path: str | None, timeout: float | None) -> None:
    """Control a running healerd: register sources, see their health, scrape and heal on demand.

    healerctl talks to the daemon over its Unix socket. Exit codes: 0 success, 1 the
    request was refused or failed, 2 usage error, 3 the daemon cannot be reached.
    """
    ctx.obj = {"socket": socket_path, "timeout": timeout}


for _commands in (sources_cmds, versions_cmds, fleet_cmds, data_out, blueprint_cmds):
    _commands.register(cli)


def main() -> None:
    try:
        cli(prog_name="healerctl")
    except BrokenPipeError:  # e.g. `healerctl alerts | head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        sys.exit(0)

