"""healerctl's commands on the daemon and the whole fleet: `ping`, `stats`, `alerts` (or follow
them), `reload`, `resume-healing` and the fix memory (`memory list/show/forget/stats`).
Registered on healerctl's group by `register(group)`."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from healerd.cli.calls import (
    _call,
    _socket,
    json_option,
    poll_follow,
    socket_option,
)
from healerd.cli.output import (
    LEVEL_COLOURS,
    _one_line,
    _print_json,
    _print_mapping,
    _rel,
    _style,
    _table,
)
from healerd.cli.views import print_ping
from healerd.core.terminal import json_text, visible


@click.command()
@socket_option
@click.pass_context
def ping(ctx: click.Context, socket_path: str | None) -> None:
    """Check that the daemon answers.

    Prints the daemon's version, pid and start time; exits 3 when it cannot be reached.
    """
    print_ping(_call(ctx, socket_path, "ping"))


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


@click.command()
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


def _since(value: str | None) -> float | None:
    """--since: an ISO 8601 time (`2026-11-22T10:00:00Z`, a date) or a duration ago (`90m`, `2d`)."""
    if value is None:
        return None
    from datetime import UTC, datetime

    from healerd.core.timeutil import parse_duration

    text = value.strip()
    try:
        return time.time() - parse_duration(text, "--since")
    except ValueError:
        pass
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"expected a time like 2026-11-22T10:00:00Z or a duration ago like 90m or 2d; "
                                 f"got {text!r}", param_hint="--since") from None
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


@click.command()
@click.argument("name", required=False)
@click.option("--since", "since", default=None, metavar="TIME",
              help="Only alerts raised since TIME: ISO 8601 (2026-11-22T10:00:00Z) or a duration ago (90m, 2d).")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new alerts as they arrive (Ctrl-C stops).")
@json_option
@click.option("--limit", type=click.IntRange(min=1), default=None, metavar="N", help="At most N alerts.")
@socket_option
@click.pass_context
def alerts(ctx, name, since, follow, as_json, limit, socket_path):
    """Show the alert log (one source's with NAME), or follow it.

    One line per alert: TS LEVEL SOURCE EVENT MESSAGE. --since keeps those raised since a time
    or a duration ago. --follow tails it (polling twice a second) until Ctrl-C. --json prints a
    JSON array, or with --follow one JSON object per line.
    """
    args: dict[str, Any] = {}
    if limit is not None:
        args["limit"] = limit
    if name is not None:
        args["source"] = name
    since_ts = _since(since)
    if since_ts is not None:
        args["since"] = since_ts
    first = _call(ctx, socket_path, "alerts", args) or []
    if not follow:
        if as_json:
            _print_json(first)
        elif not first:
            click.echo("no alerts")
        else:
            _emit_alerts(first, False, False)
        return
    cursor = {"after_id": _last_id(first, 0)}

    def emit(new: list | None) -> None:
        _emit_alerts(new or [], as_json, True)
        cursor["after_id"] = _last_id(new or [], cursor["after_id"])

    try:   # Ctrl-C may come while the alerts so far are still being printed
        _emit_alerts(first, as_json, True)
        sys.stdout.flush()
        poll_follow(_socket(ctx, socket_path), "alerts",
                    lambda: {**cursor, **({"source": name} if name is not None else {})}, emit)
    except KeyboardInterrupt:
        return


# -- daemon-wide --------------------------------------------------------------------------


def _names(values: Any) -> str:
    values = list(values or [])
    return ", ".join(visible(v) for v in values) if values else "none"


@click.command()
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


@click.command("resume-healing")
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


@click.group(invoke_without_command=True)
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

def register(group: click.Group) -> None:
    for command in (ping, stats, alerts, reload, resume_healing, memory):
        group.add_command(command)
