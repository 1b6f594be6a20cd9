"""healerctl commands that take data out: `records NAME --follow`, `changes`, `feeds`, and the
feeds section of `status`. Registered on healerctl's group by `register(cli)`; the plumbing
(socket, errors, tables) is healerctl's own, imported when a command runs."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from healerd.control.client import DaemonUnreachable, call
from healerd.control.protocol import ControlError
from healerd.core.terminal import json_text, visible

FOLLOW_INTERVAL = 0.5


def _h():
    from healerd.cli import healerctl

    return healerctl


def _compact(value: Any) -> str:
    """One value as compact JSON, safe for a terminal (no raw control character from a page)."""
    return json_text(value, separators=(",", ":"))


def _scrape_line(name: str, rec: dict) -> str:
    data = rec.get("data")
    n = len(data) if isinstance(data, list) else (0 if data is None else 1)
    return visible(f"{rec.get('scraped_at')} {name} v{rec.get('version')}: {n} record(s)")


def follow_records(ctx: click.Context, name: str, as_json: bool, socket_path: str | None) -> None:
    """Print each scrape of `name` stored from now on, until Ctrl-C (polling twice a second)."""
    h = _h()
    first = h._call(ctx, socket_path, "records_since", {"name": name})
    last = int(first.get("last_id") or 0)
    path = h._socket(ctx, socket_path)
    lost = False
    try:
        while True:
            time.sleep(FOLLOW_INTERVAL)
            try:
                r = call(path, "records_since", {"name": name, "after_id": last}, timeout=h.DEFAULT_TIMEOUT)
            except DaemonUnreachable as exc:
                if not lost:
                    click.echo(f"healerctl: {exc}; still trying", err=True)
                    lost = True
                continue
            except ControlError as exc:
                raise h._error_answer(exc, path) from None
            if lost:
                click.echo("healerctl: connected to the daemon again", err=True)
                lost = False
            for rec in r.get("records") or []:
                if as_json:
                    click.echo(_compact(rec))
                else:
                    click.echo(_scrape_line(name, rec))
                    data = rec.get("data")
                    for item in data if isinstance(data, list) else [data]:
                        click.echo(f"  {_compact(item)}")
            sys.stdout.flush()
            last = int(r.get("last_id") or last)
    except KeyboardInterrupt:
        return


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
@click.option("--socket", "socket_path", metavar="PATH", default=None,
              help="The daemon's control socket (overrides the group's --socket and $HEALERD_SOCKET).")
@click.pass_context
def changes(ctx, name, as_json, limit, every, socket_path):
    """Show what changed between consecutive scrapes of a source.

    Newest first; only scrapes where something changed unless --all. With a blueprint `key`,
    a record whose key stays but whose values differ is `changed` (the differing fields,
    before and after); without one, records are matched whole (added / removed only).
    """
    h = _h()
    r = h._call(ctx, socket_path, "changes", {"name": name, "limit": limit, "all": every}) or []
    if as_json:
        h._print_json(r)
        return
    if not r:
        click.echo(f"no changes recorded for {name} yet")
        return
    for c in r:
        for line in _change_lines(c):
            click.echo(line)


def _feed_rows(feeds: list[dict]) -> list[list[str]]:
    h = _h()
    return [[f["name"], f["kind"], ",".join(f["sources"]) + (" (changes)" if f["only_changes"] else ""),
             str(f["backlog"]) if f["backlog"] is not None else "-", str(f["delivered"]),
             h._rel(f["last_delivered_at"]), h._one_line(f["last_error"], 60) if f["last_error"] else "-"]
            for f in feeds]


FEED_HEADERS = ["FEED", "KIND", "SOURCES", "BACKLOG", "DELIVERED", "LAST SENT", "LAST ERROR"]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the feeds as a JSON array.")
@click.option("--socket", "socket_path", metavar="PATH", default=None,
              help="The daemon's control socket (overrides the group's --socket and $HEALERD_SOCKET).")
@click.pass_context
def feeds(ctx, as_json, socket_path):
    """List the configured feeds with their backlog and last error.

    The backlog is the stored scrapes the feed has still to deliver; while a feed fails it
    is retried with backoff, and the scrapes wait in the database.
    """
    h = _h()
    r = h._call(ctx, socket_path, "feeds") or []
    if as_json:
        h._print_json(r)
        return
    if not r:
        click.echo("no feeds configured (add [[feeds]] tables to the configuration)")
        return
    h._table(FEED_HEADERS, _feed_rows(r))


def feeds_section(ctx: click.Context, socket_path: str | None) -> None:
    """The feeds under `healerctl status`: backlog and last error, when any feed is configured."""
    h = _h()
    try:
        r = h._call(ctx, socket_path, "feeds") or []
    except click.ClickException:   # a daemon without feeds support answers "unknown op"
        return
    if r:
        click.echo("")
        h._table(FEED_HEADERS, _feed_rows(r))


def register(group: click.Group) -> None:
    group.add_command(changes)
    group.add_command(feeds)
