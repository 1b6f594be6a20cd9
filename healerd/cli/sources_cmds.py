"""healerctl's commands on sources: `add`, `update`, `remove`, `pause`, `resume`, `run` and
`status` (the fleet's table a page at a time, `--json` streamed, or one source in detail).
Registered on healerctl's group by `register(group)`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from healerd.cli.calls import DEFAULT_TIMEOUT, RUN_TIMEOUT, _call, json_option, socket_option
from healerd.cli.data_out import feeds_section
from healerd.cli.output import (
    STATES,
    CtlError,
    _duration,
    _one_line,
    _print_json,
    _rate,
    _rel,
    _state,
    _style,
    _table,
)
from healerd.cli.views import _print_detail
from healerd.core.terminal import json_text

if TYPE_CHECKING:
    from healerd.core.blueprint import Blueprint


# -- sources ------------------------------------------------------------------------------


@click.command()
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
    from healerd.core.sanitize import mask_url

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
    from healerd.core.blueprint import BlueprintError, load_file  # lexbor: only add and update need it

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


@click.command()
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


@click.command()
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


@click.command()
@click.argument("name")
@socket_option
@click.pass_context
def pause(ctx, name, socket_path):
    """Stop scraping a source until it is resumed.

    The source keeps its state, versions and records.
    """
    r = _call(ctx, socket_path, "pause", {"name": name})
    click.echo(f"{r.get('name', name)} paused (state {_state(r.get('state'))})")


@click.command()
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


STATUS_TEXT_ROWS = 1000    # rows of `status` without --limit: a fleet this size or smaller is shown whole, by name
STATUS_JSON_PAGE = 5000    # rows asked for at a time by `status --json`, printed as they come


@click.command()
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


@click.command()
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


def _status_objects(answer: dict) -> list[dict]:
    """The fleet's status objects from a `status` answer, in its table form or as objects."""
    if "rows" in answer:
        keys = answer.get("columns") or []
        return [dict(zip(keys, r)) for r in answer["rows"] or []]
    return answer.get("sources") or []

def register(group: click.Group) -> None:
    for command in (add, update, remove, pause, resume, status, run):
        group.add_command(command)
