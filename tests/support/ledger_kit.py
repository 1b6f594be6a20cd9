"""The Ledger on a real SQLite file with an injected clock: a source, good and bad scrape outcomes,
what they wrote, and a promoted fix. Its fixtures (conn, clock, make_ledger, ledger) are in
tests/store/conftest.py."""

from __future__ import annotations

import dataclasses
import hashlib

from healerd.config import Config
from healerd.core import errors
from healerd.core.blueprint import from_dict
from healerd.core.production import ROLLBACK
from healerd.store.ledger import Ledger
from healerd.store.outcomes import ScrapeOutcome
from healerd.store.sql import row, rows

T0 = 1_700_000_000.0
EVERY = 600.0


class Clock:
    def __init__(self, t: float = T0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> float:
        self.t += seconds
        return self.t


def config(**overrides) -> Config:
    """Defaults, no jitter, with `section__key=value` overrides."""
    cfg = Config()
    by_section: dict[str, dict] = {"daemon": {"jitter": 0.0}}
    for k, v in overrides.items():
        section, key = k.split("__")
        by_section.setdefault(section, {})[key] = v
    for section, values in by_section.items():
        cfg = dataclasses.replace(cfg, **{section: dataclasses.replace(getattr(cfg, section), **values)})
    return cfg


def add(led: Ledger, name: str = "shop", host: str = "shop.example", every: float = EVERY,
        good_past: bool = True) -> str:
    """A source; with `good_past` it counts one scrape that passed (healing needs one), without changing its state."""
    bp = from_dict({"url": f"http://{host}/{name}", "every": every, "items": "li.p",
                    "fields": {"name": {"css": ".n"}, "price": {"css": ".v", "type": "float"}}})
    led.add_source(name, bp)
    if good_past:
        with led.conn:
            led.conn.execute("UPDATE source_health SET success_count = 1 WHERE source_name = ?", (name,))
    return name


def items(n: int, tag: str = "") -> list[dict]:
    return [{"name": f"Widget {i}{tag}", "price": 10.0 + i} for i in range(n)]


def good(led: Ledger, name: str = "shop", n: int = 3, html: str | None = None, **kw) -> ScrapeOutcome:
    now = led.clock()
    html = html if html is not None else f"<ul>{'<li class=p>x</li>' * n}</ul>"
    fields = dict(name=name, url=f"http://shop.example/{name}", ok=True, started_at=now - 0.2, finished_at=now,
                  version=1, status=200, data=items(n), item_count=n, html=html,
                  page_sha=hashlib.sha256(html.encode()).hexdigest(), etag='"v1"', last_modified="Mon, 01 Jan 2024")
    fields.update(kw)
    return ScrapeOutcome(**fields)


def bad(led: Ledger, name: str = "shop", error_type: str = errors.PARSE_ERROR, **kw) -> ScrapeOutcome:
    now = led.clock()
    fields = dict(name=name, url=f"http://shop.example/{name}", ok=False, started_at=now - 0.2, finished_at=now,
                  version=1, error_type=error_type, error=f"{error_type} on the page", status=200,
                  html="<html><body>redesigned</body></html>", fingerprint=f"{error_type}:{name}")
    fields.update(kw)
    return ScrapeOutcome(**fields)


def health(conn, name: str = "shop") -> dict:
    return row(conn, "SELECT * FROM source_health WHERE source_name = ?", (name,))


def source(conn, name: str = "shop") -> dict:
    return row(conn, "SELECT * FROM sources WHERE name = ?", (name,))


def events(conn, name: str = "shop") -> list[tuple]:
    return [(r["from_state"], r["to_state"], r["trigger"]) for r in
            rows(conn, "SELECT * FROM source_events WHERE source_name = ? ORDER BY id", (name,))]


def fix_tasks(conn, name: str = "shop") -> list[dict]:
    return rows(conn, "SELECT * FROM task_queue WHERE type = 'FIX_SOURCE' AND target = ? ORDER BY task_id", (name,))


def alert_events(fx) -> list[str]:
    return [a["event"] for a in fx.alerts]


V2 = from_dict({"url": "http://shop.example/shop", "every": 600, "items": "li.q",
                "fields": {"name": {"css": ".n"}, "price": {"css": ".v", "type": "float"}}})


def promote_fix(led, name="shop") -> int:
    """v2 staged, promoted by the Deployer, and its promoted fix recorded by the Doctor."""
    v = led.stage_version(name, V2, "builtin")
    led.promote(name, v, page={"url": "http://shop.example/shop", "html": "<ul><li class=q>x</li></ul>",
                               "records": items(3)})
    led.record_fix(name=name, error_type=errors.PARSE_ERROR, strategy="builtin", outcome="promoted", reason="r",
                   version=v)
    return v


def verdicts(conn, name="shop"):
    return [(r["version"], r["production_verdict"]) for r in
            rows(conn, "SELECT version, production_verdict FROM fix_history WHERE source_name = ? AND outcome = "
                       "'promoted' ORDER BY fix_id", (name,))]


def rollback_plan(to=1):
    return {"action": ROLLBACK, "reason": "version 2 fails on the live page and version 1 passes on it",
            "to_version": to, "data": items(3), "item_count": 3, "validation": None}
