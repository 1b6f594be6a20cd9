"""`healerd`: the daemon (`healerd run`) and its demo (`healerd demo`)."""

from __future__ import annotations

import sys

import click

from healerd import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="healerd")
def main():
    """healerd keeps a fleet of web scrapers healthy by itself.

    It scrapes the pages you register, notices when a site change breaks
    extraction, repairs the selectors, proves the repair on the live page and
    promotes it — and alerts you only when it cannot. Control it with `healerctl`.
    """


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="TOML configuration file.")
@click.option("--state-dir", type=click.Path(file_okay=False),
              help="Where the database lives [default: $STATE_DIRECTORY, $HEALERD_STATE_DIR or ./healerd-state].")
@click.option("--socket", "socket_path", type=click.Path(dir_okay=False),
              help="Control socket [default: $HEALERD_SOCKET, $RUNTIME_DIRECTORY/healerd.sock or <state-dir>/healerd.sock].")
@click.option("--log-dir", type=click.Path(file_okay=False),
              help="Where alerts.jsonl goes [default: $LOGS_DIRECTORY or the state dir].")
def run(config_path, state_dir, socket_path, log_dir):
    """Run the daemon in the foreground until SIGTERM/SIGINT.

    SIGHUP (or `healerctl reload` for the sources directory) reloads the
    configuration and the sources directory.
    """
    from healerd.adapters.lean_process import import_httpx

    import_httpx()   # first: without its command-line tool's libraries
    from healerd import logsetup
    from healerd.config import ConfigError, load
    from healerd.core.terminal import visible
    from healerd.daemon import Daemon, StateDirInUse, resolve_paths

    try:
        config = load(config_path)
    except ConfigError as exc:
        click.echo(f"healerd: {visible(exc)}", err=True)
        sys.exit(2)
    logsetup.setup(config.daemon.log_level)
    state, sock, logs = resolve_paths(state_dir, socket_path, log_dir)
    try:
        code = Daemon(config, state, sock, logs, config_path).run()
    except StateDirInUse as exc:
        click.echo(f"healerd: {visible(exc)}", err=True)
        sys.exit(1)
    except Exception as exc:  # a clear line for systemd's journal, then a non-zero exit for Restart=
        click.echo(f"healerd: {type(exc).__name__}: {visible(exc)}", err=True)
        sys.exit(1)
    sys.exit(code)


@main.command()
@click.option("--state-dir", type=click.Path(file_okay=False), help="Keep the demo's state here [default: a temp dir].")
@click.option("--port", type=int, default=0, show_default=True, help="Port of the demo site (0: any free port).")
@click.option("--keep-running", is_flag=True, help="Leave the site and the daemon up afterwards for healerctl.")
def demo(state_dir, port, keep_running):
    """Watch a source break and heal — no network, no LLM, no setup.

    Starts a small local site whose layout changes over time and a daemon
    watching it, tells the story as it happens, and exits 0 when it is over.
    """
    from healerd.demo.runner import run_demo

    sys.exit(run_demo(state_dir=state_dir, port=port, keep_running=keep_running))
