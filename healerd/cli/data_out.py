"""healerctl's commands that take data out: `records` (a table, `--json`, `--csv` or `--follow`),
`changes`, `feeds`, and the feeds section of `status`. Registered on healerctl's group by
`register(group)`."""

from __future__ import annotations

from typing import Any

import click

from healerd.cli.calls import (
    _call,
    _socket,
    poll_follow,
    socket_option,
)
from healerd.cli.output import _one_line, _print_json, _rel, _table
from healerd.cli.views import _flatten_records as _flatten_records
from healerd.cli.views import print_records_table
from healerd.core.terminal import json_text, visible


def _compact(value: Any) -> str:
    """One value as compact JSON, safe for a terminal (no raw control character from a page)."""
    return json_text(value, separators=(",", ":"))


def _scrape_line(name: str, rec: dict) -> str:
    data = rec.get("data")
    n = len(data) if isinstance(data, list) else (0 if data is None else 1)
    return visible(f"{rec.get('scraped_at')} {name} v{rec.get('version')}: {n} record(s)")


def follow_records(ctx: click.Context, name: str, as_json: bool, socket_path: str | None,
                   backlog: int = 0) -> None:
    """Print the newest `backlog` scrapes of `name` (oldest first), then each scrape stored from now
    on, until Ctrl-C (polling twice a second). Every scrape is printed whole."""
    first = _call(ctx, socket_path, "records_since", {"name": name, "backlog": backlog})
    cursor = {"after_id": 0}

    def emit(r: dict) -> None:
        for rec in r.get("records") or []:
            if as_json:
                click.echo(_compact(rec))
            else:
                click.echo(_scrape_line(name, rec))
                data = rec.get("data")
                for item in data if isinstance(data, list) else [data]:
                    click.echo(f"  {_compact(item)}")
        cursor["after_id"] = int(r.get("last_id") or cursor["after_id"])

    emit(first)
    poll_follow(_socket(ctx, socket_path), "records_since", lambda: {"name": name, **cursor}, emit)


def _change_lines(c: dict) -> list[str]:
    lines = [f"{visible(c.get('scraped_at'))} v{c.get('version')}: +{len(c['added'])} added, -{len(c['removed'])} removed, "
             f"~{len(c['changed'])} changed"]
    lines += [f"  + {_compact(r)}" for r in c["added"]]
    lines += [f"  - {_compact(r)}" for r in c["removed"]]
    for ch in c["changed"]:
        diffs = ", ".join(f"{visible(k)}: {_compact(ch['before'].get(k))} -> {_compact(ch['after'].get(k))}"
                          for k in ch["after"])
        lines.append(f"  ~ {_compact(ch['key'])}: {diffs}")
    return lines


@click.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the change sets as a JSON array.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, metavar="N",
              help="How many change sets to show.")
@click.option("--all", "every", is_flag=True, help="Also the scrapes where nothing changed.")
@socket_option
@click.pass_context
def changes(ctx, name, as_json, limit, every, socket_path):
    """Show what changed between consecutive scrapes of a source.

    Newest first; only scrapes where something changed unless --all. With a blueprint `key`,
    a record whose key stays but whose values differ is `changed` (the differing fields,
    before and after); without one, records are matched whole (added / removed only).
    """
    r = _call(ctx, socket_path, "changes", {"name": name, "limit": limit, "all": every}) or []
    if as_json:
        _print_json(r)
        return
    if not r:
        click.echo(f"no changes recorded for {name} yet")
        return
    for c in r:
        for line in _change_lines(c):
            click.echo(line)


def _feed_rows(feeds: list[dict]) -> list[list[str]]:
    return [[f["name"], f["kind"], ",".join(f["sources"]) + (" (changes)" if f["only_changes"] else ""),
             str(f["backlog"]) if f["backlog"] is not None else "-", str(f["delivered"]),
             _rel(f["last_delivered_at"]), _one_line(f["last_error"], 60) if f["last_error"] else "-"]
            for f in feeds]


FEED_HEADERS = ["FEED", "KIND", "SOURCES", "BACKLOG", "DELIVERED", "LAST SENT", "LAST ERROR"]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the feeds as a JSON array.")
@socket_option
@click.pass_context
def feeds(ctx, as_json, socket_path):
    """List the configured feeds with their backlog and last error.

    The backlog is the stored scrapes the feed has still to deliver; while a feed fails it
    is retried with backoff, and the scrapes wait in the database.
    """
    r = _call(ctx, socket_path, "feeds") or []
    if as_json:
        _print_json(r)
        return
    if not r:
        click.echo("no feeds configured (add [[feeds]] tables to the configuration)")
        return
    _table(FEED_HEADERS, _feed_rows(r))


def feeds_section(ctx: click.Context, socket_path: str | None) -> None:
    """The feeds under `healerctl status`: backlog and last error, when any feed is configured."""
    try:
        r = _call(ctx, socket_path, "feeds") or []
    except click.ClickException:   # a daemon without feeds support answers "unknown op"
        return
    if r:
        click.echo("")
        _table(FEED_HEADERS, _feed_rows(r))


@click.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the records as a JSON array.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV with a header: one row per item.")
@click.option("--limit", type=click.IntRange(min=1), default=None, metavar="N",
              help="How many scrapes to show (default 20; each scrape whole, a listing with all its items). "
                   "With --follow: the newest N scrapes first (default none).")
@click.option("--follow", "-f", is_flag=True, help="Print each new scrape as it lands (Ctrl-C stops).")
@socket_option
@click.pass_context
def records(ctx, name, as_json, as_csv, limit, follow, socket_path):
    """Show the records scraped from a source.

    Newest first; --limit counts scrapes, and a scrape is never cut (a listing comes with every
    item). A table by default; --json gives the scrapes as stored, --csv one row per item
    (columns: the blueprint's fields in its order, scraped_at, version). --follow prints each
    scrape stored from now on (with --json one JSON object per line).
    """
    if as_json and as_csv:
        raise click.UsageError("--json and --csv cannot be used together")
    if follow:
        if as_csv:
            raise click.UsageError("--follow prints lines or, with --json, JSON objects; not CSV")
        follow_records(ctx, name, as_json, socket_path, backlog=limit or 0)
        return
    limit = limit or 20
    r = _call(ctx, socket_path, "records", {"name": name, "limit": limit})
    if as_json:
        _print_json(r)
        return
    if as_csv:
        import csv

        header, rows = _flatten_records(r or [])
        out = click.get_text_stream("stdout")
        writer = csv.writer(out, lineterminator="\n")
        # Whole values, but no control character raw on a terminal (newlines stay, quoted by csv).
        writer.writerow([visible(h) for h in header])
        writer.writerows([visible(c, one_line=False) for c in row] for row in rows)
        out.flush()
        return
    print_records_table(name, r, limit)



def register(group: click.Group) -> None:
    group.add_command(records)
    group.add_command(changes)
    group.add_command(feeds)
