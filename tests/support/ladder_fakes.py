"""In-memory ports for the healing ladder (healerd.core.ladder.ports): a source's rows in dicts,
a site as a dict of pages, the fix memory as a dict of issues, a scripted external healer and a
Deployer that judges a candidate on the live page with the core's own extraction and validation.

The trial port runs the core's real page checks (extraction, the built-in healer, drift, data
gone) in this process; only what the daemon does with processes and actors is left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from healerd.core import breakers
from healerd.core.blueprint import Blueprint, from_dict, from_json
from healerd.core.extract import PageLimits, check_page, extract
from healerd.core.ladder.ladder import HealingLadder
from healerd.core.ladder.ports import (
    CallCount,
    FetchedPage,
    FetchFailed,
    LadderPorts,
    LadderSettings,
    TrialTooSlow,
)
from healerd.core.validate import validate

NOW = 1_900_000_000.0
URL = "http://shop.test/stats"

ROWS = [("Ada", 31), ("Grace", 27), ("Linus", 24), ("Margaret", 22), ("Ken", 19)]
LISTING_BP = {"url": URL, "items": "table.stats tr.player",
              "fields": {"name": {"css": "td.name"}, "score": {"css": "td.score", "type": "int"}}}


def listing_v1(rows=ROWS) -> str:
    body = "".join(f'<tr class="player"><td class="name">{n}</td><td class="score">{s}</td></tr>' for n, s in rows)
    return (f'<html><head><title>Stats</title></head><body><nav><a href="/">home</a></nav>'
            f'<table class="stats"><tr><th>Name</th><th>Score</th></tr>{body}</table></body></html>')


def listing_v2(rows=ROWS) -> str:
    """A redesign: classes renamed, the table wrapped."""
    body = "".join(f'<tr class="row-player"><td class="player-name">{n}</td><td class="pts">{s}</td></tr>'
                   for n, s in rows)
    return (f'<html><head><title>Stats</title></head><body><nav><a href="/">home</a></nav><div class="wrap">'
            f'<table class="league-table"><tr><th>Name</th><th>Score</th></tr>{body}</table></div></body></html>')


def listing_no_score(rows=ROWS) -> str:
    """The score column is gone, and the classes renamed: nothing to heal it from."""
    body = "".join(f'<tr class="row-player"><td class="player-name">{n}</td></tr>' for n, _ in rows)
    return (f'<html><head><title>Stats</title></head><body><nav><a href="/">home</a></nav>'
            f'<table class="league-table"><tr><th>Name</th></tr>{body}</table></body></html>')


# A single record whose title is now in two alike places: the healer refuses, with a best guess.
RECIPE_URL = "http://shop.test/soup"
RECIPE_BP = {"url": RECIPE_URL, "fields": {"title": {"css": "div.recipe h1.recipe-title"},
                                           "first": {"css": "ul.ingredients li"},
                                           "second": {"css": "ul.ingredients li:nth-child(2)"}}}
BEFORE = ('<html><body><nav><a href="/">Home</a></nav><div class="recipe"><h1 class="recipe-title">Kettle Soup</h1>'
          '<p class="intro">A warming soup.</p><ul class="ingredients"><li>2 carrots</li><li>1 onion</li>'
          '<li>1 l stock</li></ul></div></body></html>')
AMBIGUOUS = ('<html><body><nav><a href="/">Home</a></nav><main><div class="c1"><h1 class="t1">Kettle Soup</h1></div>'
             '<div class="c2"><h1 class="t2">Kettle Soup</h1></div><p>A warming soup.</p>'
             '<ul class="list"><li>2 carrots</li><li>1 onion</li><li>1 l stock</li></ul></main></body></html>')
GONE = ('<html><body><nav><a href="/">Home</a></nav><main><div class="c1"><h1 class="t1">Kettle Soup</h1></div>'
        '<div class="c2"><h1 class="t2">Kettle Soup</h1></div><p>A warming soup.</p></main></body></html>')


def bp_of(d: dict) -> Blueprint:
    return from_dict(dict(d))


class Clock:
    def __init__(self, now: float = NOW):
        self.now = now

    def __call__(self) -> float:
        return self.now


# -- the ports ----------------------------------------------------------------------------------

class Reads:
    def __init__(self, world: World):
        self.w = world

    def source(self, name):
        return dict(self.w.source) if self.w.source is not None and name == self.w.name else None

    def halt(self):
        return self.w.halt

    def failed_attempts(self, name, window, after):
        since = self.w.clock() - window
        if after is not None:
            since = max(since, after)
        return sum(1 for f in self.w.fixes if f["name"] == name and f["outcome"] in breakers.FAILED_OUTCOMES
                   and f["at"] >= since)

    def production(self, name):
        return self.w.version, self.w.blueprint

    def last_good(self, name):
        return self.w.last_good

    def failing_page(self, name):
        return self.w.failing

    def value_profiles(self, name):
        return getattr(self.w, "profiles", {})

    def recent_attempts(self, name, since):
        rows = [f for f in self.w.fixes if since is None or f["at"] >= since]
        return [{"at": f["at"], "strategy": f["strategy"], "outcome": f["outcome"], "reason": f["reason"]}
                for f in reversed(rows)]

    def staged_versions(self, name):
        return [v for v, d in sorted(self.w.versions.items()) if d["status"] == "staging"]

    def already_rejected(self, name, body, since):
        return any(d["status"] == "rejected" and d["body"] == body and d["at"] >= (since or 0.0) and d["judged"]
                   for d in self.w.versions.values())

    def healer_calls(self, name, since):
        starts = [c["started_at"] for c in self.w.calls if c["started_at"] > since and name in (None, c["name"])]
        return CallCount(len(starts), min(starts, default=None), max(starts, default=None))

    def budget_alert_at(self, name):
        ts = [a["at"] for a in self.w.alerts if a["event"] == "BUDGET_PAUSED" and a["source"] == name]
        return max(ts, default=None)

    def state(self, name):
        return self.w.source["state"] if self.w.source else None

    def last_error_type(self, name):
        return self.w.source.get("last_error_type") if self.w.source else None


class Pages:
    def __init__(self, world: World):
        self.w = world

    def _page(self, url):
        self.w.fetched.append(url)
        page = self.w.site.get(url)
        if page is None:
            raise FetchFailed("HTTP_ERROR", f"HTTP 404 for {url}", 404)
        if isinstance(page, FetchFailed):
            raise page
        return page

    def fetch(self, url, bp=None):
        page = self._page(url)
        if isinstance(page, FetchedPage):
            return page
        return FetchedPage(url, page, 200)

    def get_text(self, url):
        try:
            page = self._page(url)
        except FetchFailed as exc:
            if exc.status is None:
                raise
            return exc.status, ""
        return 200, page.text if isinstance(page, FetchedPage) else page


class Trials:
    """The core's page checks, here; `slow` names the checks that run past the deadline."""

    def __init__(self, world: World):
        self.w = world

    def _check(self, what):
        self.w.trials.append(what)
        if what in self.w.slow:
            raise TrialTooSlow(f"too slow on this page ({what} ran past 15s)")

    def run_parser(self, bp, html, limits=None):
        self._check("parser")
        limits = limits or PageLimits()
        check_page(html, limits.max_elements, limits.max_depth)
        return extract(html, bp, max_items=limits.max_items)

    def bounded(self, name, *args):
        self._check(name)
        if name == "heal":
            from healerd.core.heal.pipeline import heal
            return heal(*args)
        if name == "gone_fields":
            from healerd.core.heal.checks.data_gone import gone_fields
            return gone_fields(*args)
        if name == "by_telling_feature":
            from healerd.core.telling_feature import by_telling_feature
            return by_telling_feature(*args)
        if name == "missing_records":
            from healerd.core.completeness import missing_records
            return missing_records(*args)
        from healerd.core import drift
        return getattr(drift, name)(*args)

    def heal(self, bp, original_html, last_good_records, current_html):
        self._check("builtin")
        from healerd.core.heal.pipeline import heal
        return heal(bp, original_html, last_good_records, current_html)


@dataclass
class Match:
    issue_id: str
    canonical_title: str


class Memory:
    """Issues: id -> the blueprint their bundle makes (None: forgotten since the search)."""

    def __init__(self, world: World):
        self.w = world

    def search(self, **query):
        self.w.memory_log.append(("search", query))
        if self.w.memory_broken:
            raise RuntimeError("the fix memory is unreadable")
        return [Match(i, f"known fix {i}") for i in self.w.issues]

    def bundle(self, issue_id, source_name):
        self.w.memory_log.append(("retrieved", issue_id))
        bp = self.w.issues.get(issue_id)
        if bp is None:
            raise KeyError(f"no issue {issue_id}")
        return {"blueprint": bp.to_json()}

    def apply(self, blueprint, bundle):
        new = from_json(bundle["blueprint"])
        return None if new.to_json() == blueprint.to_json() else new

    def record_usage(self, event_type, issue_id, source_name):
        self.w.memory_log.append((event_type, issue_id))

    def confirm(self, issue_id, source_name, success, notes):
        self.w.memory_log.append(("confirm", issue_id, success))

    def remember(self, ctx, new, *, host, diff_sig, tmpl, broken):
        self.w.memory_log.append(("remember", new.to_json(), host, tuple(broken)))


@dataclass
class Answer:
    ok: bool
    outcome: str
    reason: str
    blueprint: Blueprint | None = None
    changes_summary: str = ""
    http_status: int | None = 200
    duration_ms: float = 5.0


def healed(bp: Blueprint) -> Answer:
    return Answer(True, "healed", "", bp, "selectors renamed")


class Client:
    def __init__(self, world: World):
        self.w = world

    def __enter__(self):
        self.w.healer_open += 1
        return self

    def __exit__(self, *exc):
        self.w.healer_open -= 1
        return False

    def heal_cycle(self, ctx, cycle, history):
        self.w.healer_asked.append((cycle, [dict(h) for h in history]))
        script = self.w.answers
        return script[min(cycle, len(script)) - 1]


class Healer:
    def __init__(self, world: World):
        self.w = world

    def client(self):
        return Client(self.w) if self.w.answers else None

    def record_call(self, **call):
        self.w.calls.append(call)


class Deployer:
    """Judges a candidate on the live page as the real one does in substance: it must read the page
    and pass validation against the last good records. Confidence 0 (a best guess) is staged;
    `hold` stages everything; `declines` holds bodies already staged; `unfetched` judges nothing."""

    def __init__(self, world: World):
        self.w = world

    def deploy(self, name, candidate, origin, note, page_html, confidence):
        w = self.w
        body = candidate.to_json()
        w.deploys.append({"origin": origin, "note": note, "body": body, "page_html": page_html,
                          "confidence": confidence})
        if body in w.declines:
            return {"outcome": "declined", "version": w.declines[body], "reason": "already staged",
                    "validation": None, "conclusive": True}
        version = max(w.versions, default=w.version) + 1
        if w.unfetched:
            w.versions[version] = {"status": "rejected", "body": body, "at": w.clock(), "judged": False}
            return {"outcome": "rejected", "version": version, "reason": "could not fetch the live page to validate",
                    "validation": None, "conclusive": False}
        live = w.site.get(candidate.url or w.url)
        passed, why = self.judge(candidate, live.text if isinstance(live, FetchedPage) else live)
        if not passed and page_html and candidate.url == w.url and self.judge(candidate, page_html)[0] \
                and self.judge(w.blueprint, live)[0]:
            # Reads the page it was made for, production reads the live one: the two, merged, pass.
            passed, why = True, "merged with production: reads both layouts"
        if passed and (confidence == 0.0 or w.hold):
            w.versions[version] = {"status": "staging", "body": body, "at": w.clock(), "judged": True}
            return {"outcome": "staged", "version": version, "reason": "held for approval",
                    "validation": {"passed": True}, "conclusive": True}
        status = "production" if passed else "rejected"
        w.versions[version] = {"status": status, "body": body, "at": w.clock(), "judged": True}
        return {"outcome": "promoted" if passed else "rejected", "version": version, "reason": why,
                "validation": {"passed": passed}, "conclusive": True}


    def judge(self, bp, html):
        if not isinstance(html, str):
            return False, "the live page could not be read"
        try:
            ex = extract(html, bp)
        except Exception as exc:
            return False, str(exc)
        res = validate(ex, bp, last_good=(self.w.last_good or {}).get("records"), html=html, status=200)
        return res.passed, "; ".join(res.errors[:2]) or "passes on the live page"


class Outcomes:
    def __init__(self, world: World):
        self.w = world

    def complete_task(self, task_id, context):
        self.w.tasks.append(("complete", task_id, context))

    def release_task(self, task_id, not_before):
        self.w.tasks.append(("release", task_id, not_before))

    def fail_task(self, task_id, reason):
        self.w.tasks.append(("fail", task_id, reason))

    def record_fix(self, **fields):
        self.w.fixes.append(dict(fields, at=self.w.clock()))

    def schedule_now(self, name):
        self.w.scheduled.append(name)

    def set_deferred_report(self, name, report):
        self.w.reports.append(report)

    def alert(self, event, source, message, severity, details):
        self.w.alerts.append({"event": event, "source": source, "message": message, "severity": severity,
                              "details": details, "at": self.w.clock()})


# -- one source's world ---------------------------------------------------------------------------

@dataclass
class World:
    """One source (`name`) broken by a redesign: production reads `before`, the live site serves `after`."""
    name: str = "stats"
    bp: dict = field(default_factory=lambda: dict(LISTING_BP))
    before: str = field(default_factory=listing_v1)
    after: str = field(default_factory=listing_v2)
    settings: LadderSettings = field(default_factory=lambda: LadderSettings(ladder=("builtin",)))
    answers: list = field(default_factory=list)   # the external healer's answers, cycle by cycle

    def __post_init__(self):
        self.clock = Clock()
        self.blueprint = bp_of(self.bp)
        self.url = self.blueprint.url
        self.version = 1
        self.source: dict | None = {
            "url": self.url, "state": "DEGRADED", "success_count": 4, "retry_only": 0, "attempts_since": None,
            "failing_since": NOW - 600, "item_counts": json.dumps([5, 5, 5]), "failure_count": 1,
            "last_success_at": NOW - 700, "fix_attempts_today": 0, "last_fingerprint": "fp-1",
            "last_error_type": "PARSE_ERROR"}
        self.halt: dict | None = None
        self.last_good: dict | None = {"html": self.before, "records": extract(self.before, self.blueprint).data,
                                       "fetched_at": NOW - 700, "status_code": 200}
        self.failing: dict | None = None
        self.site: dict[str, Any] = {self.url: self.after}
        self.fetched: list[str] = []
        self.trials: list[str] = []
        self.slow: set[str] = set()
        self.issues: dict[str, Blueprint | None] = {}
        self.memory_broken = False
        self.memory_log: list = []
        self.calls: list[dict] = []
        self.healer_asked: list = []
        self.healer_open = 0
        self.versions: dict[int, dict] = {}
        self.declines: dict[str, int] = {}
        self.hold = False
        self.unfetched = False
        self.deploys: list[dict] = []
        self.tasks: list = []
        self.fixes: list[dict] = []
        self.scheduled: list[str] = []
        self.reports: list[dict] = []
        self.alerts: list[dict] = []
        self.ports = LadderPorts(reads=Reads(self), pages=Pages(self), trials=Trials(self), memory=Memory(self),
                                 healer=Healer(self), deployer=Deployer(self), outcomes=Outcomes(self),
                                 clock=self.clock)

    def ladder(self, **settings) -> HealingLadder:
        s = self.settings
        if settings:
            s = LadderSettings(**{**s.__dict__, **settings})
        if self.answers and not s.healer_configured:
            s = LadderSettings(**{**s.__dict__, "healer_configured": True})
        return HealingLadder(self.ports, s)

    def treat(self, task_id: int = 7, context: dict | None = None, **settings) -> dict:
        return self.ladder(**settings).treat(self.name, task_id,
                                           {"fingerprint": "fp-task"} if context is None else context)

    def past_fix(self, outcome: str, ago: float, strategy: str = "builtin") -> None:
        self.fixes.append({"name": self.name, "outcome": outcome, "strategy": strategy, "reason": "earlier",
                           "at": self.clock() - ago})

    @property
    def last_fix(self) -> dict:
        return self.fixes[-1]
