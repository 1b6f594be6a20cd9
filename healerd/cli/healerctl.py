"""healerctl: control a running healerd over its Unix socket.

Exit codes: 0 success; 1 the request was refused or failed (one line on stderr saying
why); 2 usage error; 3 the daemon cannot be reached (the message names the socket).
"""

from __future__ import annotations

import csv
import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import click

from healerd import __version__
from healerd.control.client import DaemonUnreachable, call, client_socket_path
from healerd.control.protocol import ControlError
from healerd.core.blueprint import Blueprint, BlueprintError, load_file
from healerd.core.sanitize import mask_url
from healerd.core.terminal import json_text, visible
from healerd.core.timeutil import ago, parse_iso

DEFAULT_TIMEOUT = 30.0
DIFF_LINES_SHOWN = 200   # `healerctl diff` without --full: a 5 MB page must not flood the terminal
RUN_TIMEOUT = 900.0      # a scrape: fetch timeouts, retries, rate limits
HEAL_TIMEOUT = 1800.0    # the whole healing ladder, an external healer's cycles included
FOLLOW_INTERVAL = 0.5

STATE_COLOURS = {"ACTIVE": "green", "DEGRADED": "yellow", "QUARANTINED": "magenta", "DEAD": "red"}
LEVEL_COLOURS = {"warning": "yellow", "error": "red", "critical": "red", "info": "cyan"}
STATES = ("ACTIVE", "DEGRADED", "QUARANTINED", "DEAD")


# -- errors -------------------------------------------------------------------------------


class VersionNumber(click.ParamType):
    """A parser version: a whole number from 1, said in words when it is not one."""

    name = "VERSION"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        text = str(value).strip()
        if text.isdigit() and int(text) >= 1:
            return int(text)
        self.fail(f"the version must be a number like 3, not {text!r} (`healerctl history NAME` lists them)",
                  param, ctx)


class CtlError(click.ClickException):
    """One line on stderr, `healerctl: <message>`, and the given exit code."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(visible(message))
        self.exit_code = exit_code

    def show(self, file=None) -> None:
        click.echo(f"healerctl: {self.format_message()}", err=True)


# -- plumbing -----------------------------------------------------------------------------


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


def _error_answer(exc: ControlError, path: str) -> CtlError:
    """The daemon's error answer as healerctl's error: exit 1, or 3 when this user may not use it.

    A peer the daemon refuses (SO_PEERCRED, `forbidden`) cannot use it at all, the same as a
    socket it has no permission to open: exit 3 with "permission denied" and the socket path.
    """
    if exc.code == "forbidden":
        unreachable = DaemonUnreachable(f"permission denied ({exc.message or 'refused by the daemon'})", path)
        return CtlError(str(unreachable), exit_code=3)
    return CtlError(exc.message or exc.code, exit_code=1)


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


# -- the group ----------------------------------------------------------------------------


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


@cli.command()
@socket_option
@click.pass_context
def ping(ctx: click.Context, socket_path: str | None) -> None:
    """Check that the daemon answers.

    Prints the daemon's version, pid and start time; exits 3 when it cannot be reached.
    """
    r = _call(ctx, socket_path, "ping")
    started = _ts(r.get("started_at"))
    up = f"up for {_duration(max(0.0, time.time() - started))}" if started is not None else "up"
    click.echo(f"healerd {r.get('version')} (pid {r.get('pid')}) {up}, since {r.get('started_at') or '-'}")


# -- sources ------------------------------------------------------------------------------


def _schedule_line(obj: dict) -> str:
    bp = obj.get("blueprint") or {}
    every = bp.get("every")
    parts = []
    if every is not None:
        try:
            parts.append(f"every {_duration(float(every))}")
        except (TypeError, ValueError):
            parts.append(f"every {every}")
    if obj.get("paused"):
        parts.append("paused")
    elif obj.get("next_run_at"):
        parts.append(f"next run {_rel(obj['next_run_at'])} ({obj['next_run_at']})")
    return "; ".join(parts) or "-"


@cli.command()
@click.argument("name")
@click.option("--blueprint", "blueprint_file", required=True, metavar="FILE",
              type=click.Path(dir_okay=False), help="The blueprint: TOML, or the same structure in JSON.")
@click.option("--url", default=None, metavar="URL", help="The page to scrape (overrides the blueprint's url).")
@click.option("--no-wait", is_flag=True, help="Do not scrape it now (the first scrape runs on its schedule).")
@json_option
@socket_option
@click.pass_context
def add(ctx, name, blueprint_file, url, no_wait, as_json, socket_path):
    """Register a source from a blueprint file, scrape it once and print how it went.

    The blueprint is checked here first (selectors, types, url); a problem is reported
    naming the key and nothing is sent. The url may come from the file or from --url.
    Exits 1 when that first scrape fails (the source stays added); --no-wait skips it.
    """
    bp, args = _blueprint_request(name, blueprint_file, url, require_url=True)
    if no_wait:
        args["wait"] = False
    r = _call(ctx, socket_path, "add", args, timeout=DEFAULT_TIMEOUT if no_wait else RUN_TIMEOUT)
    scrape = r.get("scrape")
    if as_json:
        _print_json(r)
        ctx.exit(1 if scrape is not None and not scrape.get("ok") else 0)
    next_run = f", next run {_rel(r.get('next_run_at'))}" if r.get("next_run_at") and scrape is None else ""
    click.echo(f"added {r.get('name', name)}: {_one_line(r.get('url') or mask_url(bp.url))}, every {_duration(bp.every)}, "
               f"state {_state(r.get('state'))}{next_run}")
    if scrape is None:
        return
    line, ok = _scrape_line(scrape, name)
    click.echo(line)
    if not ok:
        click.echo(f"the first scrape of {name} failed; the source stays added: fix it with "
                   f"`healerctl update {name} --blueprint FILE [--url URL]`, or `healerctl remove {name}`", err=True)
        ctx.exit(1)


def _blueprint_request(name: str, blueprint_file: str, url: str | None, *,
                       require_url: bool) -> tuple[Blueprint, dict[str, Any]]:
    """The blueprint file checked here (a problem names the key and nothing is sent), and the
    request arguments that carry it: what `add` and `update` send."""
    try:
        bp = load_file(blueprint_file, url=url, require_url=require_url)
    except BlueprintError as exc:
        raise CtlError(f"invalid blueprint {blueprint_file}: {exc}") from None
    args: dict[str, Any] = {"name": name, "blueprint": bp.to_dict()}
    if url:
        args["url"] = url
    return bp, args


def _scrape_line(r: dict, name: str) -> tuple[str, bool]:
    """One line for a scrape's outcome, and whether it passed."""
    took = f"{float(r.get('duration_ms') or 0):.0f} ms"
    version = r.get("version")
    ver = f"version {version}" if version is not None else "no version"
    if r.get("ok"):
        if r.get("not_modified"):
            return f"{r.get('name', name)}: ok, page not modified ({ver}, {took}); state {_state(r.get('state'))}", True
        items = r.get("item_count")
        what = f"{r.get('records', 0)} record(s)" + (f", {items} item(s)" if items is not None else "")
        return f"{r.get('name', name)}: ok, {what} ({ver}, {took}); state {_state(r.get('state'))}", True
    etype = r.get("error_type") or "error"
    return (f"{r.get('name', name)}: failed, {etype}: {_one_line(r.get('error'))} ({took}); "
            f"state {_state(r.get('state'))}"), False


@cli.command()
@click.argument("name")
@click.option("--blueprint", "blueprint_file", required=True, metavar="FILE",
              type=click.Path(dir_okay=False), help="The new blueprint: TOML, or the same structure in JSON.")
@click.option("--url", default=None, metavar="URL", help="The page to scrape (overrides the blueprint's url; "
                                                         "without either the source keeps its url).")
@json_option
@socket_option
@click.pass_context
def update(ctx, name, blueprint_file, url, as_json, socket_path):
    """Replace a source's blueprint.

    Checked like `add`; promoted as a new `human` parser version (`history` shows it,
    `rollback` can go back); the fix-attempt budget is reset (a quarantined source is
    back to DEGRADED); the source is scraped once and the outcome printed. Exits 1 when
    that scrape fails. A source from the sources directory is changed by editing its file.
    """
    _, args = _blueprint_request(name, blueprint_file, url, require_url=False)
    r = _call(ctx, socket_path, "update", args, timeout=RUN_TIMEOUT)
    scrape = r.get("scrape") or {}
    if as_json:
        _print_json(r)
        ctx.exit(0 if scrape.get("ok") else 1)
    click.echo(f"updated {name}: blueprint promoted as version {r.get('version')} (human); "
               f"fix-attempt budget reset")
    line, ok = _scrape_line(scrape, name)
    click.echo(line)
    if not ok:
        ctx.exit(1)


@cli.command()
@click.argument("name")
@socket_option
@click.pass_context
def remove(ctx, name, socket_path):
    """Unregister a source.

    Its schedule stops and its records, versions and fix history are deleted (adding it
    again starts clean). A source from the sources directory is refused: delete its file
    and reload.
    """
    r = _call(ctx, socket_path, "remove", {"name": name})
    click.echo(f"removed {r.get('removed', name)}")


@cli.command()
@click.argument("name")
@socket_option
@click.pass_context
def pause(ctx, name, socket_path):
    """Stop scraping a source until it is resumed.

    The source keeps its state, versions and records.
    """
    r = _call(ctx, socket_path, "pause", {"name": name})
    click.echo(f"{r.get('name', name)} paused (state {_state(r.get('state'))})")


@cli.command()
@click.argument("name")
@socket_option
@click.pass_context
def resume(ctx, name, socket_path):
    """Resume scraping a paused source.

    The next scrape is scheduled as usual.
    """
    r = _call(ctx, socket_path, "resume", {"name": name})
    nxt = f", next run {_rel(r.get('next_run_at'))}" if r.get("next_run_at") else ""
    click.echo(f"{r.get('name', name)} resumed (state {_state(r.get('state'))}{nxt})")


def _status_rows(sources: list[dict]) -> list[list[str]]:
    rows = []
    for s in sources:
        nxt = "paused" if s.get("paused") else _rel(s.get("next_run_at"))
        if s.get("state") == "QUARANTINED" and s.get("quarantine_until") and not s.get("paused"):
            nxt = f"{_rel(s['quarantine_until'])} (quarantine)"
        version = s.get("version")
        rows.append([
            str(s.get("name", "-")),
            str(s.get("state") or "-"),
            "-" if version is None else str(version),
            _rel(s.get("last_success_at")),
            _rel(s.get("last_failure_at")),
            str(s.get("failure_count", 0)),
            str(s.get("fix_attempts_24h", 0)),
            nxt,
            _one_line(s.get("last_error"), 60),
        ])
    return rows


def _print_summary(summary: dict) -> None:
    total = summary.get("sources", 0)
    by_state = summary.get("by_state") or {}
    order = [s for s in STATES if by_state.get(s)] + sorted(k for k in by_state if k not in STATES and by_state[k])
    counts = ", ".join(f"{by_state[s]} {_state(s)}" for s in order) or "none"
    click.echo("")
    click.echo(f"{total} source{'s' if total != 1 else ''}: {counts}")
    click.echo(f"fix success rate {_rate(summary.get('fix_success_rate'))}; "
               f"median recovery {_duration(summary.get('median_recovery_s'))}")
    if summary.get("systemic_halt"):
        reason = summary.get("halt_reason") or "the same error on several sources"
        click.echo(_style(f"HEALING HALTED (systemic): {_one_line(reason)}", "red", bold=True))
        click.echo("  automatic healing is off until scrapes pass again or `healerctl resume-healing`")


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


def _print_detail(s: dict) -> None:
    name = s.get("name", "-")
    state = str(s.get("state") or "-")
    flags = []
    if s.get("paused"):
        flags.append("paused")
    if s.get("flagged_for_review"):
        flags.append("flagged for review")
    click.echo(_style(str(name), None, bold=True))
    rows = [
        ("url", _one_line(s.get("url"))),
        ("state", _state(state) + (f" ({', '.join(flags)})" if flags else "")),
        ("version", "-" if s.get("version") is None else str(s.get("version"))),
        ("schedule", _schedule_line(s)),
        ("last success", _when(s.get("last_success_at"))),
        ("last failure", _when(s.get("last_failure_at"))),
        ("failures", str(s.get("failure_count", 0))),
        ("fix attempts/24h", str(s.get("fix_attempts_24h", 0))),
    ]
    if s.get("quarantine_until"):
        rows.append(("quarantined until", _when(s.get("quarantine_until"))))
    err = s.get("last_error")
    if err:
        etype = s.get("last_error_type")
        rows.append(("last error", (f"{etype}: " if etype else "") + _one_line(err)))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        click.echo(f"  {(key + ':').ljust(width + 1)} {value}")

    m = s.get("metrics") or {}
    if m:
        click.echo("")
        click.echo("metrics")
        click.echo(f"  fix attempts: {m.get('fix_attempts', 0)}; success rate {_rate(m.get('fix_success_rate'))}; "
                   f"median recovery {_duration(m.get('median_recovery_s'))}")

    report = s.get("deferred_report")
    if report:
        click.echo("")
        if state == "QUARANTINED":
            title = "deferred report (healing gave up; a person is needed)"
        elif report.get("reason"):
            title = f"a person is needed: {_one_line(report['reason'])}"
        else:
            title = "report of the last fix attempt"
        click.echo(_style(title, "yellow"))
        _print_mapping({k: v for k, v in report.items()
                        if (k != "reason" or state == "QUARANTINED") and k != "blueprint_toml"})
        toml = report.get("blueprint_toml")
        if isinstance(toml, str) and toml:
            click.echo(f"  the blueprint to save as {s.get('name', 'NAME')}.toml:")
            for line in toml.splitlines():
                click.echo(f"    {_one_line(line)}" if line else "")

    events = s.get("events") or []
    click.echo("")
    click.echo("lifecycle (newest first)")
    if not events:
        click.echo("  no transitions yet")
    else:
        rows2 = []
        for e in events:
            rows2.append([str(e.get("at") or "-"), f"{e.get('from') or '-'} -> {e.get('to') or '-'}",
                          str(e.get("trigger") or "-"), _one_line(e.get("reason"), 80)])
        widths = [max(len(r[i]) for r in rows2) for i in range(3)]
        for r in rows2:
            click.echo("  " + "  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3])


STATUS_TEXT_ROWS = 1000    # rows of `status` without --limit: a fleet this size or smaller is shown whole, by name
STATUS_JSON_PAGE = 5000    # rows asked for at a time by `status --json`, printed as they come


@cli.command()
@click.argument("name", required=False)
@click.option("--limit", type=click.IntRange(1, None), default=None,
              help=f"At most this many rows (default {STATUS_TEXT_ROWS}; with --json, every source).")
@click.option("--offset", type=click.IntRange(0, None), default=0, help="Skip this many rows first.")
@click.option("--state", "states", multiple=True, type=click.Choice(STATES, case_sensitive=False),
              help="Only the sources in this lifecycle state (repeatable).")
@json_option
@socket_option
@click.pass_context
def status(ctx, name, limit, offset, states, as_json, socket_path):
    """Show the health of all sources or of one.

    Without NAME: one row per source and a summary (counts by state, fix success rate,
    median recovery time, a systemic halt). A fleet of more than 1000 sources shows 1000
    rows, the sources needing attention first (DEGRADED, QUARANTINED, DEAD), then the
    ACTIVE ones; --limit, --offset and --state page through it. With NAME: url, state,
    schedule, last error, metrics, the deferred report when healing gave up, and the
    lifecycle history. --json prints the array of sources by name (or the one source)
    for scripts, read from the daemon a page at a time and printed as it comes.
    """
    if name:
        if limit is not None or offset or states:
            raise click.UsageError("--limit, --offset and --state list the fleet: not with NAME")
        r = _call(ctx, socket_path, "status", {"name": name})
        if as_json:
            _print_json(r)
        else:
            _print_detail(r)
        return
    wanted = [s.upper() for s in states] or None
    if as_json:
        _stream_status_json(ctx, socket_path, limit, offset, wanted)
        return
    shown = limit or STATUS_TEXT_ROWS
    r = _call(ctx, socket_path, "status", {"table": True, "limit": min(shown, 10_000), "offset": offset,
                                           "state": wanted, "order": "auto"})
    sources = _status_objects(r)
    summary = r.get("summary") or {"sources": len(sources), "by_state": {}}
    if not sources and not summary.get("sources"):
        click.echo("no sources yet; register one with `healerctl add NAME --blueprint FILE`")
    elif not sources:
        click.echo(f"no {' or '.join(wanted) + ' ' if wanted else ''}sources"
                   f"{f' after the first {offset}' if offset else ''}")
    else:
        _table(["NAME", "STATE", "VER", "LAST OK", "LAST FAIL", "FAILS", "FIX/24H", "NEXT RUN", "ERROR"],
               _status_rows(sources), {1: _state})
    total = r.get("total", len(sources))
    if sources and (offset or len(sources) < total):
        first = "needing attention first, then by name" if r.get("order") == "attention" else "by name"
        more = f"; more with --offset {offset + len(sources)}" if offset + len(sources) < total else ""
        click.echo(f"rows {offset + 1}-{offset + len(sources)} of {total} ({first}){more}")
    _print_summary(summary)
    from healerd.cli.data_out import feeds_section

    feeds_section(ctx, socket_path)


def _stream_status_json(ctx, socket_path, limit: int | None, offset: int, states: list[str] | None) -> None:
    """Print the fleet's status objects as one JSON array (the same text as `_print_json` of the
    whole list), asking the daemon for STATUS_JSON_PAGE rows at a time, by name: a script reads
    100,000 sources without either side holding them all."""
    out = sys.stdout
    left = limit
    args: dict[str, Any] = {"table": True, "offset": offset, "state": states, "order": "name"}
    printed = 0
    while left is None or left > 0:
        want = STATUS_JSON_PAGE if left is None else min(STATUS_JSON_PAGE, left)
        r = _call(ctx, socket_path, "status", {**args, "limit": want})
        objects = _status_objects(r)
        for obj in objects:
            text = json_text(obj, indent=2).replace("\n", "\n  ")
            out.write(("[\n  " if printed == 0 else ",\n  ") + text)
            printed += 1
        if len(objects) < want or not r.get("last"):
            break
        if left is not None:
            left -= len(objects)
        args = {"table": True, "after": r["last"], "state": states, "order": "name"}
    out.write("\n]\n" if printed else "[]\n")
    out.flush()


@cli.command()
@click.argument("name")
@click.option("--no-wait", is_flag=True, help="Queue the scrape and return at once.")
@json_option
@socket_option
@click.pass_context
def run(ctx, name, no_wait, as_json, socket_path):
    """Scrape a source now.

    By default waits for the outcome and prints it (records stored, or the error and
    the new state) and exits 1 when the scrape failed (fetch or validation); with
    --no-wait it only queues the scrape.
    """
    r = _call(ctx, socket_path, "run", {"name": name, "wait": not no_wait},
              timeout=DEFAULT_TIMEOUT if no_wait else RUN_TIMEOUT)
    failed = not no_wait and not r.get("queued") and not r.get("ok")
    if as_json:
        _print_json(r)
        ctx.exit(1 if failed else 0)
    if no_wait or r.get("queued"):
        click.echo(f"{name}: queued")
        return
    took = f"{float(r.get('duration_ms') or 0):.0f} ms"
    version = r.get("version")
    ver = f"version {version}" if version is not None else "no version"
    if r.get("ok"):
        if r.get("not_modified"):
            click.echo(f"{r.get('name', name)}: ok, page not modified ({ver}, {took}); state {_state(r.get('state'))}")
        else:
            items = r.get("item_count")
            what = f"{r.get('records', 0)} record(s)" + (f", {items} item(s)" if items is not None else "")
            click.echo(f"{r.get('name', name)}: ok, {what} ({ver}, {took}); state {_state(r.get('state'))}")
    else:
        etype = r.get("error_type") or "error"
        click.echo(f"{r.get('name', name)}: failed, {etype}: {_one_line(r.get('error'))} ({took}); "
                   f"state {_state(r.get('state'))}")
        ctx.exit(1)


@cli.command()
@click.argument("name")
@json_option
@socket_option
@click.pass_context
def heal(ctx, name, as_json, socket_path):
    """Run the Doctor on a source now.

    It runs even if the last scrape passed validation. Prints what happened: a repaired version promoted, staged for approval, rejected,
    declined, or the source quarantined. Exits 0 only when a fix was promoted (the state
    shown is the one after the scrape with the promoted version); otherwise 1.
    """
    r = _call(ctx, socket_path, "heal", {"name": name}, timeout=HEAL_TIMEOUT)
    promoted = r.get("outcome") == "promoted"
    if as_json:
        _print_json(r)
        ctx.exit(0 if promoted else 1)
    outcome = str(r.get("outcome") or "-")
    colour = {"promoted": "green", "staged": "cyan", "unchanged": None, "declined": "yellow",
              "rejected": "yellow", "error": "red", "quarantined": "magenta"}.get(outcome)
    bits = [_style(outcome, colour)]
    if r.get("version") is not None:
        bits.append(f"version {r['version']}")
    if r.get("strategy"):
        bits.append(f"by {_one_line(r['strategy'])}")
    click.echo(f"{r.get('name', name)}: {' '.join(bits)}; state {_state(r.get('state'))}")
    if r.get("reason"):
        click.echo(f"  {_one_line(r['reason'])}")
    if outcome == "staged" and r.get("version") is not None:
        click.echo(f"  waits for a person: review it, then `healerctl approve {r.get('name', name)} {r['version']}`")
    if not promoted:
        ctx.exit(1)


@cli.command()
@click.argument("name")
@click.option("--reason", default=None, metavar="TEXT", help="Why (recorded with the transition).")
@socket_option
@click.pass_context
def unquarantine(ctx, name, reason, socket_path):
    """Bring a quarantined or dead source back.

    QUARANTINED (or DEAD) becomes DEGRADED, with a fresh fix-attempt budget and an
    immediate scrape.
    """
    args = {"name": name}
    if reason:
        args["reason"] = reason
    r = _call(ctx, socket_path, "unquarantine", args)
    click.echo(f"{r.get('name', name)}: now {_state(r.get('state'))} with a fresh attempt budget; a scrape is queued")


def _window(ctx, param, value) -> float:
    from healerd.core.timeutil import parse_duration

    try:
        seconds = parse_duration(value, "--window")
    except ValueError as exc:
        raise click.BadParameter(str(exc).split(": ", 1)[-1]) from None
    if not seconds > 0:
        raise click.BadParameter("must be greater than zero")
    if seconds == float("inf"):
        raise click.BadParameter("too large: give a finite duration like 7d")
    return seconds


def _pct(v) -> str:
    return "-" if v is None else f"{v * 100:.1f} %"


def _secs(v) -> str:
    if v is None:
        return "-"
    return f"{v:.1f} s" if v < 120 else f"{v / 60:.1f} min"


@cli.command()
@click.option("--window", "window", default="7d", show_default=True, callback=_window,
              help="How far back: seconds, or 30m / 24h / 7d.")
@json_option
@socket_option
@click.pass_context
def stats(ctx, window, as_json, socket_path):
    """Show the fleet's success metrics, each beside its target.

    Fix success rate (fixes that passed probation / those + failed attempts; a refusal that
    found the data gone is not a failure), production false-positive rate (promoted fixes that
    then failed on the layout they were proved on), quarantine rate, median and p90 recovery time, heals by rung and the
    external healer's calls, over the last --window.
    """
    r = _call(ctx, socket_path, "stats", {"window_s": window})
    if as_json:
        _print_json(r)
        return
    targets = r.get("targets") or {}

    def target(key: str, fmt) -> tuple[str, str]:
        t = targets.get(key)
        if not t:
            return "", ""
        met = {True: _style("ok", "green"), False: _style("missed", "red"), None: "-"}[t.get("met")]
        return f"{t['op']} {fmt(t['target'])}", met

    rows = []
    for key, label, fmt, extra in (
            ("fix_success_rate", "fix success rate", _pct,
             f"{r.get('fixes_passed', 0)}/{r.get('fixes_passed', 0) + r.get('failed_attempts', 0) + r.get('false_positives', 0)}"),
            ("false_positive_rate", "false positive rate", _pct, f"{r.get('false_positives', 0)}/{r.get('fixes_judged', 0)}"),
            ("quarantine_rate", "quarantine rate", _pct, f"{r.get('sources_quarantined', 0)}/{r.get('sources', 0)}"),
            ("median_recovery_s", "median recovery", _secs, ""),
            ("p90_recovery_s", "p90 recovery", _secs, "")):
        rows.append([label, fmt(r.get(key)), extra, *target(key, fmt)])
    click.echo(f"fleet metrics over the last {_human_window(r.get('window_s'))}")
    _table(["METRIC", "VALUE", "OF", "TARGET", ""], rows)
    rungs = r.get("heals_by_rung") or {}
    click.echo("heals by rung: " + (", ".join(visible(f"{k} {v}") for k, v in rungs.items()) or "-"))
    calls = r.get("healer_calls") or {}
    lat = calls.get("median_latency_ms")
    click.echo(f"external healer calls: {calls.get('count', 0)}"
               + (f", median latency {lat / 1000:.1f} s" if lat is not None else ""))
    click.echo(f"fixes on probation: {r.get('fixes_on_probation', 0)}; refusals that found the data gone "
               f"(not failures): {r.get('data_gone_refusals', 0)}")
    click.echo(f"automatic rollbacks: {r.get('rollbacks', 0)}; manual rollbacks: {r.get('manual_rollbacks', 0)}")


def _human_window(seconds) -> str:
    seconds = float(seconds or 0)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


@cli.command()
@click.argument("name")
@json_option
@socket_option
@click.pass_context
def history(ctx, name, as_json, socket_path):
    """Show parser versions and fix attempts.

    Newest first. Versions show their origin (human, builtin, memory, external, relocate) and status
    (automatic rollbacks and merges appear as their own rows); fix attempts show the error
    type, strategy, outcome and reason; a promoted fix that failed within its probation on
    the layout it was proved on is marked "false positive", and a refusal that found the data
    gone from the page "data gone".
    """
    r = _call(ctx, socket_path, "history", {"name": name})
    if as_json:
        _print_json(r)
        return
    if not r:
        click.echo(f"no history for {name}")
        return
    rows = []
    for h in r:
        if h.get("kind") == "version":
            rows.append([str(h.get("at") or "-"), h.get("event") or "version",
                         f"v{h.get('version')} ({h.get('origin') or '-'})",
                         str(h.get("status") or "-"), _one_line(h.get("reason") or h.get("note") or "", 70)])
        else:
            what = f"{h.get('error_type') or '-'} via {h.get('strategy') or '-'}"
            verdict = {"false_positive": " (false positive)", None: " (probation)",
                       "site_changed": " (worked; the site changed since)"}.get(h.get("production"), "") \
                if h.get("outcome") == "promoted" else ""
            if h.get("data_gone"):
                verdict = " (data gone)"
            rows.append([str(h.get("at") or "-"), "fix", what, str(h.get("outcome") or "-") + verdict,
                         _one_line(h.get("reason"), 70)])
    colour = {"production": "green", "promoted": "green", "rejected": "yellow", "declined": "yellow",
              "error": "red", "staging": "cyan"}
    _table(["AT", "KIND", "WHAT", "RESULT", "DETAIL"], rows, {3: lambda c: _style(c, colour.get(c))})


@cli.command()
@click.argument("name")
@socket_option
@click.pass_context
def diff(ctx, name, socket_path):
    """Diff the last good page against the current one.

    A structural HTML diff; this is the evidence the Doctor works from when a source breaks.
    """
    r = _call(ctx, socket_path, "diff", {"name": name})
    text = r.get("diff") or ""
    good, cur = r.get("last_good_at"), r.get("current_at")
    if not text.strip():
        if not good:
            click.echo(f"{name}: no last good page stored yet")
        else:
            click.echo(f"{name}: no structural difference between the last good page ({good}) and the current one ({cur or '-'})")
        return
    if r.get("fix_at"):
        click.echo(f"{name} is not failing now; the diff its last fix attempt ({r['fix_at']}) worked from:")
    else:
        click.echo(f"last good page: {good or '-'}; current page: {cur or '-'}")
    lines = text.splitlines()
    hidden = 0
    if len(lines) > DIFF_LINES_SHOWN:
        hidden = len(lines) - DIFF_LINES_SHOWN
        lines = lines[:DIFF_LINES_SHOWN]
    for line in lines:
        line = visible(line, one_line=False)
        line = line if len(line) <= 400 else line[:400] + " …"
        if line.startswith(("+++", "---")):
            click.echo(_style(line, None, bold=True))
        elif line.startswith("+"):
            click.echo(_style(line, "green"))
        elif line.startswith("-"):
            click.echo(_style(line, "red"))
        elif line.startswith("@@"):
            click.echo(_style(line, "cyan"))
        else:
            click.echo(line)
    if hidden:
        click.echo(f"… {hidden} more line(s) not shown")


@cli.command()
@click.argument("name")
@click.option("--to", "to_version", type=VersionNumber(), default=None, metavar="VERSION",
              help="The archived version to re-promote (default: the one before the current).")
@click.option("--force", is_flag=True, help="Roll back even when that version fails the current page.")
@socket_option
@click.pass_context
def rollback(ctx, name, to_version, force, socket_path):
    """Re-promote an archived parser version.

    A person's act: it spends no fix attempt. The version is first tried on the live page;
    when it fails it, production is kept and the exit code is 1, unless --force (then its
    failures are reported as the rollback's and not healed). The current production version
    is archived.
    """
    args: dict[str, Any] = {"name": name}
    if to_version is not None:
        args["to"] = to_version
    if force:
        args["force"] = True
    r = _call(ctx, socket_path, "rollback", args, timeout=RUN_TIMEOUT)
    prev = r.get("previous")
    click.echo(f"{name}: version {r.get('version')} is in production" + (f" (was {prev})" if prev is not None else ""))
    if r.get("forced"):
        click.echo(f"forced: it fails the current page ({r.get('check')}); its failures are not healed")
    elif r.get("checked") is None and r.get("check"):
        click.echo(f"not checked on the current page ({r.get('check')})")


@cli.command()
@click.argument("name")
@click.argument("version", type=VersionNumber())
@socket_option
@click.pass_context
def approve(ctx, name, version, socket_path):
    """Promote a staged version awaiting approval.

    The version is a staged parser version waiting for a person's approval; used when a repair was flagged for review instead of being promoted automatically.
    """
    r = _call(ctx, socket_path, "approve", {"name": name, "version": version})
    click.echo(f"{name}: version {r.get('version', version)} approved and in production")


# -- records ------------------------------------------------------------------------------


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json_text(value, separators=(",", ":"))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _flatten_records(records: Iterable[dict]) -> tuple[list[str], list[list[str]]]:
    """Columns (field names, then scraped_at and version) and one row per item/record."""
    columns: list[str] = []
    flat: list[tuple[dict, Any, Any]] = []
    for rec in records:
        data = rec.get("data")
        items = data if isinstance(data, list) else [data]
        for item in items:
            item = item if isinstance(item, dict) else ({} if item is None else {"value": item})
            for key in item:
                if key not in columns:
                    columns.append(key)
            flat.append((item, rec.get("scraped_at"), rec.get("version")))
    extra = [c for c in ("scraped_at", "version") if c in columns]
    header = columns + [c if c not in extra else f"record_{c}" for c in ("scraped_at", "version")]
    rows = [[_cell(item.get(c)) for c in columns] + [_cell(at), _cell(ver)] for item, at, ver in flat]
    return header, rows


@cli.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the records as a JSON array.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV with a header: one row per item.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, metavar="N",
              help="How many records to show (items of a listing count one each).")
@click.option("--follow", "-f", is_flag=True, help="Print each new scrape as it lands (Ctrl-C stops).")
@socket_option
@click.pass_context
def records(ctx, name, as_json, as_csv, limit, follow, socket_path):
    """Show the records scraped from a source.

    Newest first. A table by default; --json gives the records as stored, --csv one row per item
    (columns: the blueprint's fields, scraped_at, version). --follow prints each scrape stored
    from now on (with --json one JSON object per line).
    """
    if as_json and as_csv:
        raise click.UsageError("--json and --csv cannot be used together")
    if follow:
        if as_csv:
            raise click.UsageError("--follow prints lines or, with --json, JSON objects; not CSV")
        from healerd.cli.data_out import follow_records

        follow_records(ctx, name, as_json, socket_path)
        return
    r = _call(ctx, socket_path, "records", {"name": name, "limit": limit})
    if as_json:
        _print_json(r)
        return
    header, rows = _flatten_records(r or [])
    if as_csv:
        out = click.get_text_stream("stdout")
        writer = csv.writer(out, lineterminator="\n")
        # Whole values, but no control character raw on a terminal (newlines stay, quoted by csv).
        writer.writerow([visible(h) for h in header])
        writer.writerows([visible(c, one_line=False) for c in row] for row in rows)
        out.flush()
        return
    if not r:
        click.echo(f"no records for {name} yet")
        return
    shown = [[_one_line(c, 40) if c else "-" for c in row] for row in rows]
    _table([h.upper() for h in header], shown)
    if len(rows) >= limit:
        click.echo(f"… the newest {limit} record(s); `--limit N` shows more, `--json` or `--csv` gives whole values")


# -- alerts -------------------------------------------------------------------------------


def _alert_line(a: dict) -> str:
    level = visible(a.get("level") or "-")
    lvl = _style(level.ljust(7), LEVEL_COLOURS.get(level.lower()))
    event = visible(a.get("event") or "-")
    ev_colour = {"HEALED": "green", "RECOVERED": "green", "UNQUARANTINED": "green", "DEGRADED": "yellow",
                 "QUARANTINED": "magenta", "DEAD": "red", "SYSTEMIC_HALT": "red", "HEAL_FAILED": "red"}.get(event)
    ev = _style(event.ljust(18), ev_colour)
    source = visible(a.get("source") or "-")
    return f"{visible(a.get('ts') or '-')} {lvl} {source.ljust(12)} {ev} {_one_line(a.get('message'))}"


def _emit_alerts(alerts: list[dict], as_json: bool, follow: bool) -> None:
    for a in alerts:
        if as_json:
            click.echo(json_text(a))
        else:
            click.echo(_alert_line(a))


def _last_id(alerts: list[dict], current: int) -> int:
    ids = [a["id"] for a in alerts if isinstance(a.get("id"), int)]
    return max([current] + ids)


@cli.command()
@click.option("--follow", "-f", is_flag=True, help="Keep printing new alerts as they arrive (Ctrl-C stops).")
@json_option
@click.option("--limit", type=click.IntRange(min=1), default=None, metavar="N", help="At most N alerts.")
@socket_option
@click.pass_context
def alerts(ctx, follow, as_json, limit, socket_path):
    """Show the alert log, or follow it.

    One line per alert: TS LEVEL SOURCE EVENT MESSAGE. --follow tails it (polling twice a second) until Ctrl-C. --json prints a JSON
    array, or with --follow one JSON object per line.
    """
    args: dict[str, Any] = {}
    if limit is not None:
        args["limit"] = limit
    first = _call(ctx, socket_path, "alerts", args) or []
    if not follow:
        if as_json:
            _print_json(first)
        elif not first:
            click.echo("no alerts")
        else:
            _emit_alerts(first, False, False)
        return
    path = _socket(ctx, socket_path)
    last = _last_id(first, 0)
    lost = False
    try:
        _emit_alerts(first, as_json, True)
        sys.stdout.flush()
        while True:
            time.sleep(FOLLOW_INTERVAL)
            try:
                new = call(path, "alerts", {"after_id": last}, timeout=DEFAULT_TIMEOUT) or []
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
            _emit_alerts(new, as_json, True)
            sys.stdout.flush()
            last = _last_id(new, last)
    except KeyboardInterrupt:
        return


# -- daemon-wide --------------------------------------------------------------------------


def _names(values: Any) -> str:
    values = list(values or [])
    return ", ".join(visible(v) for v in values) if values else "none"


@cli.command()
@socket_option
@click.pass_context
def reload(ctx, socket_path):
    """Re-read the config and sources directory.

    The same as sending SIGHUP to the daemon. Prints which sources were added, changed and
    removed, and each file (or the config) that could not be loaded with the reason; exits 1
    when anything could not be loaded (a missing sources directory included).
    """
    r = _call(ctx, socket_path, "reload")
    click.echo(f"reloaded: added {_names(r.get('added'))}; changed {_names(r.get('changed'))}; "
               f"removed {_names(r.get('removed'))}")
    errors = r.get("errors") or {}
    for where, why in sorted(errors.items()):
        click.echo(f"healerctl: not loaded: {visible(where)}: {_one_line(why)}", err=True)
    if errors:
        ctx.exit(1)


@cli.command("resume-healing")
@socket_option
@click.pass_context
def resume_healing(ctx, socket_path):
    """Turn healing back on after a systemic halt.

    Check the cause first: a halt means the same error hit several sources at once.
    """
    _call(ctx, socket_path, "resume_healing")
    click.echo("healing resumed")


# -- fix memory ---------------------------------------------------------------------------


def _memory_table(items: list[dict]) -> None:
    if not items:
        click.echo("the fix memory is empty")
        return
    rows = []
    for m in items:
        conf = m.get("confidence_score")
        rows.append([
            str(m.get("issue_id", "-")),
            str(m.get("error_type") or "-"),
            str(m.get("host") or "-"),
            "-" if conf is None else f"{float(conf):.2f}",
            str(m.get("verification_count", 0)),
            str(m.get("failure_count", 0)),
            str(len(m.get("affected_sources") or [])),
            _rel(m.get("last_confirmed_at")),
            str(m.get("status") or "-"),
            _one_line(m.get("canonical_title"), 60),
        ])
    _table(["ID", "ERROR", "HOST", "CONF", "OK", "FAIL", "SOURCES", "CONFIRMED", "STATUS", "TITLE"], rows)


@cli.group(invoke_without_command=True)
@json_option
@socket_option
@click.pass_context
def memory(ctx, as_json, socket_path):
    """List or manage the fix memory.

    The fix memory holds known issues and their validated fixes. The Doctor consults it first, so a change seen on one source heals its siblings.
    Subcommands show one issue in full or forget it.
    """
    ctx.ensure_object(dict)
    ctx.obj["memory_socket"] = socket_path
    if ctx.invoked_subcommand is not None:
        return
    r = _call(ctx, socket_path, "memory_list")
    if as_json:
        _print_json(r)
    else:
        _memory_table(r or [])


def _memory_socket(ctx: click.Context, socket_path: str | None) -> str | None:
    parent = ctx.parent.obj if ctx.parent and isinstance(ctx.parent.obj, dict) else {}
    return socket_path or parent.get("memory_socket")


@memory.command("list")
@json_option
@socket_option
@click.pass_context
def memory_list(ctx, as_json, socket_path):
    """List the known issues (the default).

    One row per issue: id, error type, host, confidence, confirmations, failures.
    """
    r = _call(ctx, _memory_socket(ctx, socket_path), "memory_list")
    if as_json:
        _print_json(r)
    else:
        _memory_table(r or [])


@memory.command("show")
@click.argument("issue_id", metavar="ID")
@json_option
@socket_option
@click.pass_context
def memory_show(ctx, issue_id, as_json, socket_path):
    """Show one known issue in full.

    Its fix bundle, confirmations and usage; ID is the issue id from `healerctl memory`.
    """
    r = _call(ctx, _memory_socket(ctx, socket_path), "memory_show", {"id": issue_id})
    if as_json:
        _print_json(r)
        return
    click.echo(f"{r.get('issue_id', issue_id)}: {_one_line(r.get('canonical_title'))}")
    _print_mapping({k: v for k, v in r.items() if k not in ("issue_id", "canonical_title", "fix_bundle", "usage")})
    if r.get("fix_bundle") is not None:
        click.echo("fix bundle:")
        for line in json_text(r["fix_bundle"], indent=2).splitlines():
            click.echo(f"  {line}")
    if r.get("usage"):
        click.echo("usage:")
        _print_mapping(r["usage"])


@memory.command("forget")
@click.argument("issue_id", metavar="ID")
@socket_option
@click.pass_context
def memory_forget(ctx, issue_id, socket_path):
    """Delete a known issue from the fix memory.

    Use it for a fix that should never be offered again.
    """
    r = _call(ctx, _memory_socket(ctx, socket_path), "memory_forget", {"id": issue_id})
    click.echo(f"forgot {r.get('forgotten', issue_id)}")


@memory.command("stats")
@json_option
@socket_option
@click.pass_context
def memory_stats(ctx, as_json, socket_path):
    """Show how the fix memory is used.

    Searches, issues submitted and resolved, activity in the last 24 hours, and the
    most used issues.
    """
    r = _call(ctx, _memory_socket(ctx, socket_path), "memory_stats")
    if as_json:
        _print_json(r)
        return
    _print_mapping(r)


def _status_objects(answer: dict) -> list[dict]:
    """The fleet's status objects from a `status` answer, in its table form or as objects."""
    if "rows" in answer:
        keys = answer.get("columns") or []
        return [dict(zip(keys, r)) for r in answer["rows"] or []]
    return answer.get("sources") or []


def _register_data_out() -> None:
    from healerd.cli import data_out  # changes, feeds (records --follow is above)

    data_out.register(cli)


_register_data_out()


def main() -> None:
    try:
        cli(prog_name="healerctl")
    except BrokenPipeError:  # e.g. `healerctl alerts | head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        sys.exit(0)


if __name__ == "__main__":
    main()
