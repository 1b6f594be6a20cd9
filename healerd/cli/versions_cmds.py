"""healerctl's commands on a source's parser versions and its healing: `history`, `diff`,
`rollback`, `approve`, `heal` and `unquarantine`. Registered on healerctl's group by
`register(group)`."""

from __future__ import annotations

from typing import Any

import click

from healerd.cli.calls import HEAL_TIMEOUT, RUN_TIMEOUT, _call, json_option, socket_option
from healerd.cli.output import _one_line, _print_json, _state, _style, _table
from healerd.core.terminal import visible

DIFF_LINES_SHOWN = 200   # `healerctl diff` without --full: a 5 MB page must not flood the terminal


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


@click.command()
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


@click.command()
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


@click.command()
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


@click.command()
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


@click.command()
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


@click.command()
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


def register(group: click.Group) -> None:
    for command in (heal, unquarantine, history, diff, rollback, approve):
        group.add_command(command)
