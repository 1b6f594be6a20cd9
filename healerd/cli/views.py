"""healerctl's views of the daemon's answers to the common queries, printed without click: one
source in detail (`status NAME`), the daemon (`ping`) and the records table (`records`). The
click commands and the light path (healerd/cli/light.py) print through these, the same text."""

from __future__ import annotations

import time
from collections.abc import Iterable

from healerd.cli.text import (
    _cell,
    _duration,
    _one_line,
    _print_mapping,
    _rate,
    _rel,
    _state,
    _style,
    _table,
    _ts,
    _when,
    echo,
)

# typing only for the type checker: importing it costs healerctl's light path ~10 ms of CPU
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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


def _print_detail(s: dict) -> None:
    name = s.get("name", "-")
    state = str(s.get("state") or "-")
    flags = []
    if s.get("paused"):
        flags.append("paused")
    if s.get("flagged_for_review"):
        flags.append("flagged for review")
    echo(_style(str(name), None, bold=True))
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
        echo(f"  {(key + ':').ljust(width + 1)} {value}")

    m = s.get("metrics") or {}
    if m:
        echo("")
        echo("metrics")
        echo(f"  fix attempts: {m.get('fix_attempts', 0)}; success rate {_rate(m.get('fix_success_rate'))}; "
                   f"median recovery {_duration(m.get('median_recovery_s'))}")

    report = s.get("deferred_report")
    if report:
        echo("")
        if state == "QUARANTINED":
            title = "deferred report (healing gave up; a person is needed)"
        elif report.get("reason"):
            title = f"a person is needed: {_one_line(report['reason'])}"
        else:
            title = "report of the last fix attempt"
        echo(_style(title, "yellow"))
        _print_mapping({k: v for k, v in report.items()
                        if (k != "reason" or state == "QUARANTINED") and k != "blueprint_toml"})
        toml = report.get("blueprint_toml")
        if isinstance(toml, str) and toml:
            echo(f"  the blueprint to save as {s.get('name', 'NAME')}.toml:")
            for line in toml.splitlines():
                echo(f"    {_one_line(line)}" if line else "")

    events = s.get("events") or []
    echo("")
    echo("lifecycle (newest first)")
    if not events:
        echo("  no transitions yet")
    else:
        rows2 = []
        for e in events:
            rows2.append([str(e.get("at") or "-"), f"{e.get('from') or '-'} -> {e.get('to') or '-'}",
                          str(e.get("trigger") or "-"), _one_line(e.get("reason"), 80)])
        widths = [max(len(r[i]) for r in rows2) for i in range(3)]
        for r in rows2:
            echo("  " + "  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3])


def print_ping(r: dict) -> None:
    started = _ts(r.get("started_at"))
    up = f"up for {_duration(max(0.0, time.time() - started))}" if started is not None else "up"
    echo(f"healerd {r.get('version')} (pid {r.get('pid')}) {up}, since {r.get('started_at') or '-'}")


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


TABLE_ITEMS = 20   # items of one scrape shown in the table (--json and --csv give them all)


def print_records_table(name: str, answer: list[dict] | None, limit: int) -> None:
    """The records answer as `healerctl records` shows it: the newest `limit` scrapes, at most
    TABLE_ITEMS items of each (a line says how many more), values cut to 40."""
    if not answer:
        echo(f"no records for {name} yet")
        return
    cut = [{**rec, "data": rec["data"][:TABLE_ITEMS]} if isinstance(rec.get("data"), list) else rec
           for rec in answer]
    hidden = sum(len(rec["data"]) - TABLE_ITEMS for rec in answer
                 if isinstance(rec.get("data"), list) and len(rec["data"]) > TABLE_ITEMS)
    header, rows = _flatten_records(cut)
    shown = [[_one_line(c, 40) if c else "-" for c in row] for row in rows]
    _table([h.upper() for h in header], shown)
    if hidden:
        echo(f"… {hidden} more item(s) not shown (the table shows {TABLE_ITEMS} per scrape); "
             f"`--json` or `--csv` gives every item")
    if len(answer) >= limit:
        echo(f"… the newest {limit} scrape(s); `--limit N` shows more, `--json` or `--csv` gives whole values")
