"""The Ledger: every write healerd makes, as plain methods on one connection.

The StoreWriter actor owns the only writing connection and calls these methods
one message at a time, so writes never contend. Each public method is one
transaction; lifecycle triggers run inside it (lifecycle.fire nests as a
savepoint), so a state change, its audit event and the data that caused it
commit together or not at all.

Methods return `Effects`: the alerts to raise, which the actor hands to the
Alerter after the commit. The Ledger knows nothing of actors or sockets.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import apsw

from healerd.config import Config
from healerd.core import breakers, errors
from healerd.core.blueprint import Blueprint
from healerd.core.timeutil import iso
from healerd.store import alerts as alerts_store
from healerd.store import answers, fixes, lifecycle, probation, records, snapshots, sources, tasks, versions
from healerd.store import feeds as feeds_store
from healerd.store.lifecycle import ACTIVE, DEAD, DEGRADED, QUARANTINED
from healerd.store.sql import row, rows, scalar

R = TypeVar("R")

HALT_KEY = "systemic_halt"
ITEM_COUNT_MEMORY = 20
HEALABLE_HTTP = (404, 410)
FORCED_MARK = "it fails the current page"   # in the audit reason of a forced manual rollback


@dataclass
class ScrapeOutcome:
    """What one scrape produced, from the Scraper and the Validator to the Ledger."""

    name: str
    url: str
    ok: bool
    started_at: float
    finished_at: float
    version: int | None = None
    not_modified: bool = False
    error_type: str | None = None
    error: str | None = None
    status: int | None = None
    data: Any = None
    item_count: int | None = None
    html: str | None = None
    page_sha: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    retry_after: float | None = None
    fingerprint: str | None = None
    permanent_redirect: str | None = None
    dns_failure: bool = False
    request_id: str | None = None
    plan: dict | None = None      # production.Plan.to_dict(): a rollback or merge instead of healing
    snapshot_z: bytes | None = None    # the page already compressed (then `html` may be None)

    def summary(self, state: str) -> dict:
        return {
            "name": self.name, "ok": self.ok, "error_type": self.error_type, "error": self.error,
            "item_count": self.item_count,
            "records": 0 if (self.data is None or not self.ok) else (len(self.data) if isinstance(self.data, list) else 1),
            "state": state, "version": self.version, "not_modified": self.not_modified,
            "duration_ms": round((self.finished_at - self.started_at) * 1000, 1),
        }


@dataclass
class Effects:
    alerts: list[dict] = field(default_factory=list)
    result: Any = None

    def alert(self, event: str, source: str | None, message: str, level: str = "warning",
              details: dict | None = None, state: str | None = None) -> None:
        self.alerts.append({"event": event, "source": source, "message": message, "level": level,
                            "details": details or {}, "state": state})


class Ledger:
    def __init__(self, conn: apsw.Connection, config: Config, clock: Callable[[], float] = time.time,
                 rng: random.Random | None = None):
        self.conn = conn
        self.config = config
        self.clock = clock
        self.rng = rng or random.Random()
        self.models: dict[str, lifecycle.SourceLifecycle] = {}
        self._keys: dict[str, tuple[str, tuple[str, ...]]] = {}   # per source: (blueprint JSON, its `key`)

    # -- lifecycle -----------------------------------------------------------------
    def model(self, name: str) -> lifecycle.SourceLifecycle:
        m = self.models.get(name)
        if m is None:
            state = scalar(self.conn, "SELECT state FROM source_health WHERE source_name = ?", (name,))
            if state is None:
                raise sources.SourceNotFound(name)
            m = lifecycle.make_model(name, state)
            self.models[name] = m
        return m

    def state_of(self, name: str, src: dict) -> str:
        """`name`'s lifecycle state: its model's when one is loaded, else `src`'s (its row read in
        this transaction). A scrape that moves no state never builds a model (building one adds
        every trigger of the machine to it: a tenth of a millisecond a source)."""
        m = self.models.get(name)
        return m.state if m is not None else src["state"]

    def resync_models(self) -> None:
        """Drop the cached lifecycle models (after a rolled-back write); they reload from SQLite."""
        for name in list(self.models):
            self._forget_model(name)

    def _forget_model(self, name: str) -> None:
        m = self.models.pop(name, None)
        if m is not None:
            lifecycle.drop_model(m)

    def fire(self, name: str, trigger: str, reason: str = "") -> tuple[str, str]:
        return lifecycle.fire(self.conn, self.model(name), trigger, reason, at=self.clock())

    def _jittered(self, seconds: float) -> float:
        j = self.config.daemon.jitter
        return max(0.05, seconds * (1 + self.rng.uniform(-j, j))) if j else seconds

    # -- sources -----------------------------------------------------------------------
    def add_source(self, name: str, bp: Blueprint, origin: str = "cli") -> Effects:
        now = self.clock()
        sources.add(self.conn, name, bp, origin=origin, now=now)
        return Effects(result=sources.status_one(self.conn, name, now=self.clock()))

    def add_sources(self, entries: list[tuple[str, Blueprint]], origin: str = "sources_dir") -> Effects:
        """Register many sources in one transaction (loading a sources directory): one commit and
        one statement per table for the lot instead of a transaction each. One that cannot be added
        (a name taken meanwhile) is reported in the result's `errors` and the others are added."""
        errors = sources.add_many(self.conn, entries, origin=origin, now=self.clock())
        return Effects(result={"added": [name for name, _ in entries if name not in errors], "errors": errors})

    def remove_source(self, name: str) -> Effects:
        sources.remove(self.conn, name)
        self._forget_model(name)
        return Effects(result={"removed": name})

    def update_blueprint(self, name: str, bp: Blueprint) -> Effects:
        sources.update_blueprint(self.conn, name, bp, now=self.clock())
        return Effects(result=sources.status_one(self.conn, name, now=self.clock()))

    def replace_blueprint(self, name: str, bp: Blueprint) -> Effects:
        """`healerctl update`: a person's new blueprint, promoted as a `human` version; a fresh attempt budget;
        a quarantined or dead source back to DEGRADED; scraped at once (the caller waits for that scrape)."""
        fx = Effects()
        now = self.clock()
        with self.conn:
            src = sources.get(self.conn, name)
            if src["origin"] == "sources_dir":
                raise ValueError(f"{name} comes from the sources directory: edit its file there and "
                                 f"`healerctl reload` (an update here would be undone by the next reload)")
            sources.update_blueprint(self.conn, name, bp, now=now)
            version = scalar(self.conn, "SELECT current_version FROM sources WHERE name = ?", (name,))
            state = self.model(name).state
            if state in (QUARANTINED, DEAD):
                self.fire(name, "unquarantine", f"blueprint replaced by a person (version {version})")
            sources.audit(self.conn, name, "update", f"blueprint replaced by a person: version {version}", now)
            self.conn.execute("UPDATE source_health SET quarantine_until = NULL, attempts_since = ?, retry_only = 0, "
                              "fix_attempts_today = 0, deferred_report = NULL, host_unresolved_since = NULL, "
                              "item_counts = '[]' WHERE source_name = ?", (now, name))   # a new baseline
            self.conn.execute("UPDATE sources SET next_run_at = ? WHERE name = ?", (now, name))
            # A fix queued for the old blueprint is moot.
            self.conn.execute("UPDATE task_queue SET state = 'COMPLETED', completed_at = ?, "
                              "error_message = 'the blueprint was replaced by a person' "
                              "WHERE type = 'FIX_SOURCE' AND target = ? AND state = 'PENDING'", (now, name))
        fx.result = {**sources.status_one(self.conn, name, now=now), "version": version}
        return fx

    def set_paused(self, name: str, paused: bool) -> Effects:
        sources.set_paused(self.conn, name, paused, now=self.clock())
        return Effects(result=sources.status_one(self.conn, name, now=self.clock()))

    def schedule_now(self, name: str) -> None:
        sources.set_next_run(self.conn, name, self.clock())

    def set_next_run(self, name: str, at: float) -> None:
        sources.set_next_run(self.conn, name, at)

    def requeue_unfinished(self, dispatched: dict[str, float]) -> None:
        """Shutdown: a scrape dispatched at `dispatched[name]` whose outcome was never recorded is due again now."""
        now = self.clock()
        with self.conn:
            for name, at in dispatched.items():
                self.conn.execute(
                    "UPDATE sources SET next_run_at = ? WHERE name = ? AND (next_run_at IS NULL OR next_run_at > ?) "
                    "AND EXISTS (SELECT 1 FROM source_health h WHERE h.source_name = sources.name "
                    "AND max(COALESCE(h.last_success_at, 0), COALESCE(h.last_failure_at, 0)) < ?)",
                    (now, name, now, at))

    # -- scrape outcomes ---------------------------------------------------------------
    def record_scrape(self, o: ScrapeOutcome) -> Effects:
        fx = Effects()
        now = self.clock()
        with self.conn:
            src = row(self.conn, "SELECT s.*, h.* FROM sources s JOIN source_health h ON h.source_name = s.name "
                                 "WHERE s.name = ?", (o.name,))
            if src is None:  # removed while the scrape was in flight
                fx.result = o.summary("REMOVED")
                return fx
            self._judge_probation(src, o, now)
            if not o.ok and o.plan is not None:
                o = self._apply_plan(src, o, now, fx) or o
            if o.ok:
                self._record_success(src, o, now, fx)
            else:
                self._record_failure(src, o, now, fx)
            fx.result = o.summary(self.state_of(o.name, src))
        return fx

    # -- production: probation, rollback, merge ------------------------------------------
    def _judge_probation(self, src: dict, o: ScrapeOutcome, now: float) -> None:
        """A scrape by a version the daemon promoted counts towards its probation; a parser
        failure within it makes it (and the fix that promoted it) a production false positive."""
        from healerd.core.production import FALSE_POSITIVE, probation_verdict

        if o.version is None or o.version != src["current_version"] or o.not_modified:
            return
        v = probation.version_row(self.conn, o.name, o.version)
        if v is None or v["origin"] == "human" or v["promoted_by"] != versions.DAEMON or v["production_verdict"]:
            return
        verdict = probation_verdict(v["probation_scrapes"], o.ok, o.error_type, self.config.doctor.probation)
        if o.ok:
            probation.count_good_scrape(self.conn, o.name, o.version)
        if verdict == FALSE_POSITIVE:
            verdict = self._failure_verdict(o)
        if verdict:
            probation.set_verdict(self.conn, o.name, o.version, verdict, now)

    def _failure_verdict(self, o: ScrapeOutcome) -> str:
        """False positive, or the site changed layout since the version was proved (its page's template
        signature against the failing page's): a new breakage is not held against the fix."""
        from healerd.core.htmldiff import template_signature
        from healerd.core.pagecodec import decompress_page
        from healerd.core.production import failure_verdict

        proved = probation.get_page(self.conn, o.name, o.version) if o.version is not None else None
        failing = o.html if o.html is not None else (decompress_page(o.snapshot_z) if o.snapshot_z else None)
        return failure_verdict(template_signature(proved["html"]) if proved and proved["html"] else None,
                               template_signature(failing) if failing else None)

    def _apply_plan(self, src: dict, o: ScrapeOutcome, now: float, fx: Effects) -> ScrapeOutcome | None:
        """The Validator's plan for a failing production version: the previous version comes
        back, or the two are merged — no fix attempt spent on a rollback. Returns the scrape
        as the version now in production gives it, or None when the plan no longer applies
        (production moved since the Validator looked)."""
        from dataclasses import replace

        from healerd.core.blueprint import from_json
        from healerd.core.production import MERGE, ROLLBACK

        name, plan = o.name, o.plan
        if src["current_version"] != o.version or plan.get("action") not in (ROLLBACK, MERGE):
            return None
        state = self.model(name).state
        action = plan["action"]
        if action == MERGE and src["flagged_for_review"]:
            action = ROLLBACK   # parser changes wait for a person; a known version may come back
            plan = {**plan, "to_version": plan["merged_from"][0]}
        if action == ROLLBACK:
            to = plan["to_version"]
            target = probation.version_row(self.conn, name, to)
            if target is None or target["status"] != "archived":
                return None
            versions.promote(self.conn, name, to, now=now, by=versions.DAEMON)
            reason = probation.rollback_reason(o.version, to, plan["reason"])
            probation.audit(self.conn, name, state, "rollback", reason, now)
            fx.alert("HEALED", name, f"{reason}; no fix attempt spent", level="info",
                     details={"rollback": True, "version": to, "from": o.version}, state=state)
            new = to
        else:
            bp = from_json(plan["merged"])
            a, b = plan["merged_from"]
            note = f"merged versions {a} and {b}: both layouts the site serves"
            same = probation.version_with_body(self.conn, name, bp.to_json())
            new = same["version"] if same else versions.create(self.conn, name, bp, origin="builtin",
                                                               status="staging", note=note, now=now)
            versions.promote(self.conn, name, new, validation={"proved_on": plan.get("proof")}, now=now,
                             by=versions.DAEMON)
            reason = f"{plan['reason']} (version {new})"
            fixes.record(self.conn, source_name=name, error_type=o.error_type or errors.PARSE_ERROR, strategy="merge",
                         outcome="promoted", reason=reason, patch=bp.to_json(), deployed_to="PRODUCTION",
                         version=new, fingerprint=o.fingerprint, duration_ms=0.0,
                         failure_started_at=src["failing_since"] or o.started_at, now=now)
            probation.audit(self.conn, name, state, "merge", reason, now)
            fx.alert("HEALED", name, f"merge fix promoted as version {new}: {reason}", level="info",
                     details={"strategy": "merge", "version": new, "merged_from": [a, b]}, state=state)
        return replace(o, ok=True, version=new, data=plan["data"], item_count=plan.get("item_count"),
                       error_type=None, error=None, fingerprint=None, plan=None)

    def record_scrapes(self, outcomes: list[ScrapeOutcome]) -> list[Effects | Exception]:
        """Several scrape outcomes in one transaction (group commit): one commit instead of one each.

        Each outcome runs in its own savepoint (record_scrape's transaction nests), so one that
        raises is rolled back alone and its exception takes its place in the returned list while
        the others commit together. When the transaction itself cannot commit, this raises and
        nothing of it is kept: the caller writes the outcomes one by one."""
        results: list[Effects | Exception] = []
        try:
            with self.conn:
                for o in outcomes:
                    try:
                        results.append(self.record_scrape(o))
                    except Exception as exc:   # its savepoint rolled back; a model it moved must follow
                        self._forget_model(o.name)
                        results.append(exc)
        except Exception:
            self.resync_models()
            raise
        return results

    def _record_success(self, src: dict, o: ScrapeOutcome, now: float, fx: Effects) -> None:
        name = o.name
        if not o.not_modified:
            data_json = records.to_json(o.data)   # serialised once, for the records row and the snapshot
            records.insert(self.conn, name, o.data, o.version, self.config.daemon.records_retention, now=now,
                           data_json=data_json, key=self._record_key(name, src["blueprint"]))
            if o.version is not None and (o.html is not None or o.snapshot_z is not None or o.page_sha):
                probation.keep_good_page(self.conn, name, o.version, o.url, o.html, o.data, sha256=o.page_sha,
                                         body_z=o.snapshot_z, now=now)
            good = scalar(self.conn, "SELECT sha256 FROM snapshots WHERE source_name = ? AND kind = 'last_good'", (name,))
            if (o.html is not None or o.snapshot_z is not None) and (good != o.page_sha or o.page_sha is None):
                snapshots.put(self.conn, name, snapshots.LAST_GOOD, o.url, o.html, o.status, records=o.data, now=now,
                              sha256=o.page_sha, body_z=o.snapshot_z, records_json=data_json)
        counts = sources.item_counts(src)
        if o.item_count is not None:
            counts = (counts + [o.item_count])[-ITEM_COUNT_MEMORY:]
        self.conn.execute(
            "UPDATE source_health SET last_success_at = ?, success_count = success_count + 1, consecutive_failures = 0, "
            "last_error = NULL, last_error_type = NULL, failing_since = NULL, host_unresolved_since = NULL, "
            "last_fingerprint = NULL, deferred_report = NULL, item_counts = ?, updated_at = ? WHERE source_name = ?",
            (now, json.dumps(counts), now, name),
        )
        etag = o.etag if not o.not_modified else src["etag"]
        lastmod = o.last_modified if not o.not_modified else src["last_modified"]
        self.conn.execute("UPDATE sources SET next_run_at = ?, interval_factor = 1.0, etag = ?, last_modified = ? "
                          "WHERE name = ?", (now + self._jittered(src["every_s"]), etag, lastmod, name))
        if o.permanent_redirect and sources.host_of(o.permanent_redirect) == src["host"] \
                and o.permanent_redirect != src["url"]:
            # Follow a permanent redirect on the same site: scrape the new address from now on.
            self.conn.execute("UPDATE sources SET url = ? WHERE name = ?", (o.permanent_redirect, name))
        if self.state_of(name, src) == DEGRADED:
            self.fire(name, "recover", "scrape passed validation")
            fx.alert("RECOVERED", name, "scrape passes validation again", level="info", state=ACTIVE)
            # A FIX task queued for this episode is no longer needed.
            self.conn.execute("UPDATE task_queue SET state = 'COMPLETED', completed_at = ?, "
                              "error_message = 'source recovered before the fix ran' "
                              "WHERE type = 'FIX_SOURCE' AND target = ? AND state = 'PENDING'", (now, name))
        self._maybe_clear_halt(name, fx)

    def _record_key(self, name: str, blueprint_json: str) -> tuple[str, ...]:
        """The blueprint's `key` (what identifies a record across scrapes), read once per blueprint text."""
        hit = self._keys.get(name)
        if hit is None or hit[0] != blueprint_json:
            value = json.loads(blueprint_json).get("key")
            hit = self._keys[name] = (blueprint_json, (value,) if isinstance(value, str) else tuple(value or ()))
        return hit[1]

    def _record_failure(self, src: dict, o: ScrapeOutcome, now: float, fx: Effects) -> None:
        from healerd.core.sanitize import mask_text

        name = o.name
        message = mask_text(o.error or o.error_type or "failed")[:1000]
        if o.html is not None or o.snapshot_z is not None:
            snapshots.put(self.conn, name, snapshots.CURRENT, o.url, o.html, o.status, records=o.data, now=now,
                          sha256=o.page_sha, body_z=o.snapshot_z)
        consecutive = src["consecutive_failures"] + 1
        self.conn.execute(
            "UPDATE source_health SET last_failure_at = ?, failure_count = failure_count + 1, consecutive_failures = ?, "
            "last_error = ?, last_error_type = ?, last_fingerprint = ?, failing_since = COALESCE(failing_since, ?), "
            "updated_at = ? WHERE source_name = ?",
            (now, consecutive, message, o.error_type, o.fingerprint, now, now, name),
        )
        every = src["every_s"]
        factor = src["interval_factor"] or 1.0
        if o.error_type == errors.TIMEOUT:
            delay = min(every, self.config.doctor.timeout_backoff * (2 ** (consecutive - 1)))
        elif o.error_type == errors.RATE_LIMIT:
            factor = min(factor * 2, 32.0)
            delay = max(o.retry_after or 0.0, every * factor)
        else:
            delay = every
        self.conn.execute("UPDATE sources SET next_run_at = ?, interval_factor = ? WHERE name = ?",
                          (now + self._jittered(delay), factor, name))

        state = self.model(name).state
        forced = self._forced_rollback(name, src) if self._healable(o) and o.version == src["current_version"] else None
        if state == ACTIVE:
            self.fire(name, "fail", f"{o.error_type}: {message}")
            state = DEGRADED
            said = f"{o.error_type}: {message}"
            if forced:
                said = (f"version {o.version}, rolled back to by a person with --force, fails the page "
                        f"({said}): not healed; `healerctl rollback {name} --to VERSION` or `healerctl update`")
            elif not breakers.has_good_past(src["success_count"]):
                said = f"{breakers.NEVER_SCRAPED} ({said})"
            fx.alert("DEGRADED", name, said, details={"error_type": o.error_type, "status": o.status,
                                                      **({"forced_rollback": True} if forced else {})},
                     state=DEGRADED)
        if o.dns_failure:
            since = src["host_unresolved_since"] or now
            self.conn.execute("UPDATE source_health SET host_unresolved_since = ? WHERE source_name = ?", (since, name))
            if now - since >= self.config.doctor.dead_after and state != DEAD:
                self.fire(name, "die", f"host {src['host']} has not resolved since {iso(since)}")
                fx.alert("DEAD", name, f"host {src['host']} has not resolved since {iso(since)}", level="error",
                         state=DEAD)
                return
        else:
            self.conn.execute("UPDATE source_health SET host_unresolved_since = NULL WHERE source_name = ?", (name,))

        if forced and state == DEGRADED:
            # The person's rollback, not a site change: healing it would undo their act and spend attempts.
            self.conn.execute("UPDATE source_health SET deferred_report = ? WHERE source_name = ?",
                              (json.dumps({"reason": f"version {o.version} was rolled back to by a person with "
                                                     f"--force and fails the page: it is not healed",
                                           "last_error": message,
                                           "options": [f"healerctl rollback {name} --to VERSION",
                                                       f"healerctl update {name} --blueprint FILE"]}), name))
        elif self._healable(o) and state == DEGRADED and not breakers.has_good_past(src["success_count"]):
            # Nothing to heal towards: a typo'd URL or a wrong blueprint is a person's to fix.
            self.conn.execute("UPDATE source_health SET deferred_report = ? WHERE source_name = ?",
                              (json.dumps({"reason": breakers.NEVER_SCRAPED, "last_error": message,
                                           "options": [f"healerctl update {name} --blueprint FILE [--url URL]",
                                                       f"healerctl remove {name}"]}), name))
        elif self._healable(o) and state == DEGRADED:
            tasks.enqueue(self.conn, tasks.FIX_SOURCE, name,
                          {"error_type": o.error_type, "error": message, "fingerprint": o.fingerprint,
                           "status": o.status}, now=now)
        elif o.error_type not in errors.HEALABLE_BY_SELECTORS and o.error_type not in errors.PAGE_PROBLEMS:
            self._check_systemic(o.fingerprint, o.error_type, message, now, fx)

    @staticmethod
    def _healable(o: ScrapeOutcome) -> bool:
        if o.error_type in errors.HEALABLE_BY_SELECTORS:
            return True
        return o.error_type == errors.HTTP_ERROR and (o.status in HEALABLE_HTTP or bool(o.permanent_redirect))

    # -- the systemic breaker ----------------------------------------------------------
    def halt(self) -> dict | None:
        return systemic_halt(self.conn)

    def _check_systemic(self, fingerprint: str | None, error_type: str | None, message: str, now: float,
                        fx: Effects, failed_fixes: bool = False) -> None:
        if not fingerprint or self.halt() is not None:
            return
        since = now - self.config.doctor.systemic_window
        if failed_fixes:
            failing = rows(self.conn, "SELECT f.source_name AS name, s.host, f.fingerprint FROM fix_history f "
                                      "JOIN sources s ON s.name = f.source_name WHERE f.fingerprint = ? "
                                      "AND f.created_at > ? AND f.outcome IN ('rejected','error')", (fingerprint, since))
        else:
            failing = rows(self.conn, "SELECT h.source_name AS name, s.host, h.last_fingerprint AS fingerprint "
                                      "FROM source_health h JOIN sources s ON s.name = h.source_name "
                                      "WHERE h.last_fingerprint = ? AND h.last_failure_at > ? "
                                      "AND h.consecutive_failures > 0", (fingerprint, since))
        hosts = breakers.systemic_halt([(r["host"], r["fingerprint"]) for r in failing], fingerprint,
                                       self.config.doctor.systemic_threshold)
        if hosts is None:
            return
        affected = sorted({r["name"] for r in failing})
        halt = {"fingerprint": fingerprint, "since": now, "error_type": error_type, "sources": affected,
                "hosts": hosts, "reason": f"{error_type} on {len(hosts)} hosts: {message}"}
        self.conn.execute("INSERT OR REPLACE INTO daemon_state (key, value) VALUES (?, ?)", (HALT_KEY, json.dumps(halt)))
        fx.alert("SYSTEMIC_HALT", None,
                 f"healing halted everywhere: the same failure on {len(hosts)} hosts ({error_type}: {message})",
                 level="error", details={"sources": affected, "hosts": hosts, "fingerprint": fingerprint})

    def _maybe_clear_halt(self, name: str, fx: Effects) -> None:
        h = self.halt()
        if h and name in h.get("sources", []):
            self.conn.execute("DELETE FROM daemon_state WHERE key = ?", (HALT_KEY,))

    def resume_healing(self) -> Effects:
        with self.conn:
            self.conn.execute("DELETE FROM daemon_state WHERE key = ?", (HALT_KEY,))
        return Effects(result={"systemic_halt": False})

    # -- tasks -----------------------------------------------------------------------------
    def enqueue_fix(self, name: str, context: dict, priority: int = 3) -> Effects:
        sources.get(self.conn, name)
        tid = tasks.enqueue(self.conn, tasks.FIX_SOURCE, name, context, priority=priority, now=self.clock())
        return Effects(result=tid)

    def claim_fix(self, worker: str) -> dict | None:
        return tasks.claim(self.conn, worker, (tasks.FIX_SOURCE,), now=self.clock())

    def claim_task_by_id(self, task_id: int, worker: str) -> dict | None:
        return tasks.claim_by_id(self.conn, task_id, worker, now=self.clock())

    def complete_task(self, task_id: int, context: dict | None = None) -> None:
        tasks.complete(self.conn, task_id, context, now=self.clock())

    def fail_task(self, task_id: int, error: str, retry: bool = True) -> str:
        return tasks.fail(self.conn, task_id, error, retry=retry, now=self.clock())

    def release_task(self, task_id: int, not_before: float | None = None) -> None:
        tasks.release(self.conn, task_id, not_before)

    def recover_tasks(self) -> dict:
        return tasks.recover_in_progress(self.conn, now=self.clock())

    def reject_interrupted_versions(self) -> list[tuple[str, int]]:
        """Start-up: staging versions a crash left unjudged are rejected (never approvable by mistake)."""
        return versions.reject_orphans(self.conn)

    # -- fixes, quarantine -----------------------------------------------------------------
    def attempts_used(self, name: str) -> int:
        """Failed attempts in the window: what the budget counts."""
        h = row(self.conn, "SELECT attempts_since FROM source_health WHERE source_name = ?", (name,)) or {}
        return fixes.attempts_in_window(self.conn, name, self.config.doctor.attempt_window, now=self.clock(),
                                        after=h.get("attempts_since"), outcomes=breakers.FAILED_OUTCOMES)

    def _masked_fix(self, name: str, context: dict | None, patch: str | None) -> tuple[dict | None, str | None]:
        """The diagnosis context and the candidate as stored in fix_history: every secret masked,
        the source's own values (cookies, secret headers, URL credentials and secret query values
        of the production blueprint and of the candidate) as literals."""
        from healerd.core.sanitize import blueprint_secrets, mask_mapping, mask_text

        bp = scalar(self.conn, "SELECT blueprint FROM sources WHERE name = ?", (name,))
        secrets = set(blueprint_secrets(bp) if bp else ())
        if patch:
            secrets.update(blueprint_secrets(patch))
            try:
                as_dict = json.loads(patch)
            except ValueError:
                as_dict = None
            patch = (json.dumps(mask_mapping(as_dict, secrets), sort_keys=True) if isinstance(as_dict, dict)
                     else mask_text(patch, secrets))
        if context:
            context = mask_mapping(context, secrets)
        return context, patch

    def record_fix(self, *, name: str, error_type: str, strategy: str, outcome: str, reason: str,
                   context: dict | None = None, patch: str | None = None, validation: dict | None = None,
                   deployed_to: str | None = None, version: int | None = None, fingerprint: str | None = None,
                   duration_ms: float | None = None, deferred_report: dict | None = None,
                   data_gone: list[str] | None = None) -> Effects:
        """One fix attempt: its fix_history row, the attempt counters, and — when the budget is spent — quarantine.

        `data_gone`: the fields a refusal showed gone from the page. Such a refusal still uses the attempt
        budget (trying again cannot bring data back), but it is not a failed fix in the metrics, and its
        alert says what it found."""
        fx = Effects()
        now = self.clock()
        with self.conn:
            h = row(self.conn, "SELECT * FROM source_health WHERE source_name = ?", (name,))
            if h is None:
                return fx
            context, patch = self._masked_fix(name, context, patch)
            fixes.record(self.conn, source_name=name, error_type=error_type, strategy=strategy, outcome=outcome,
                         reason=reason, diagnosis_context=context, patch=patch, validation=validation,
                         deployed_to=deployed_to, version=version, fingerprint=fingerprint, duration_ms=duration_ms,
                         failure_started_at=h["failing_since"], now=now,
                         data_gone=bool(data_gone) and outcome in breakers.FAILED_OUTCOMES)
            if outcome == "promoted" and version is not None:
                probation.adopt_verdict(self.conn, name, version, now)
            used = fixes.attempts_in_window(self.conn, name, self.config.doctor.attempt_window, now=now,
                                            after=h["attempts_since"])
            failed = fixes.attempts_in_window(self.conn, name, self.config.doctor.attempt_window, now=now,
                                              after=h["attempts_since"], outcomes=breakers.FAILED_OUTCOMES)
            budget = breakers.attempt_budget(self.config.doctor.max_fix_attempts, h["retry_only"])
            self.conn.execute("UPDATE source_health SET fix_attempts_today = ? WHERE source_name = ?", (used, name))
            state = self.model(name).state
            if outcome == "promoted":
                self.conn.execute("UPDATE source_health SET deferred_report = NULL, retry_only = 0 WHERE source_name = ?",
                                  (name,))
                self.conn.execute("UPDATE sources SET next_run_at = ? WHERE name = ?", (now, name))  # the new version, now
                fx.alert("HEALED", name, f"{strategy} fix promoted as version {version}: {reason}", level="info",
                         details={"strategy": strategy, "version": version}, state=state)
            elif outcome == "staged":
                # Held for a person: never quarantined for it, but said once per staged version,
                # or the source stays DEGRADED with nobody told what would end it.
                fx.alert("FLAGGED_FOR_REVIEW", name,
                         f"{strategy} candidate staged as version {version}: awaits `healerctl approve {name} "
                         f"{version}`: {reason}", details={"strategy": strategy, "version": version}, state=state)
            elif breakers.should_quarantine(outcome, failed, budget, state):
                until = now + self.config.doctor.quarantine_for
                report = dict(deferred_report or {})
                report.setdefault("attempts", failed)
                report.setdefault("last_error", reason)
                self.conn.execute("UPDATE source_health SET quarantine_until = ?, deferred_report = ?, retry_only = 0 "
                                  "WHERE source_name = ?", (until, json.dumps(report, default=str), name))
                spent = breakers.spent_phrase(failed, _human_duration(self.config.doctor.attempt_window))
                if data_gone:
                    spent = breakers.data_gone_phrase(failed, _human_duration(self.config.doctor.attempt_window),
                                                      list(data_gone))
                self.fire(name, "quarantine", f"{spent}; last: {reason}")
                self.conn.execute("UPDATE task_queue SET state = 'QUARANTINED', completed_at = ? "
                                  "WHERE type = 'FIX_SOURCE' AND target = ? AND state = 'PENDING'", (now, name))
                fx.alert("QUARANTINED", name, f"{spent}; next try {iso(until)}",
                         level="error", details={"deferred_report": report, "quarantine_until": iso(until)},
                         state=QUARANTINED)
            elif outcome in breakers.FAILED_OUTCOMES and data_gone:
                fx.alert("HEAL_FAILED", name, f"refused ({strategy}): the data for {', '.join(data_gone)} is gone "
                                              f"from the page; {failed} of {budget} attempts allowed in the window "
                                              f"are used: {reason}",
                         details={"strategy": strategy, "attempt": failed, "budget": budget,
                                  "data_gone": list(data_gone)}, state=state)
            elif outcome in breakers.FAILED_OUTCOMES:
                fx.alert("HEAL_FAILED", name, f"fix attempt failed ({strategy}); {failed} of {budget} failed "
                                              f"attempts allowed in the window are spent: {reason}",
                         details={"strategy": strategy, "attempt": failed, "budget": budget}, state=state)
            if outcome in breakers.FAILED_OUTCOMES:
                self._check_systemic(fingerprint, error_type, reason, now, fx, failed_fixes=True)
            fx.result = {"attempts_used": used, "state": self.model(name).state}
        return fx

    def expire_quarantines(self) -> Effects:
        """Quarantines whose time has come: back to DEGRADED for one automatic retry, scraped at once."""
        fx = Effects()
        now = self.clock()
        due = rows(self.conn, "SELECT source_name FROM source_health WHERE state = 'QUARANTINED' "
                              "AND quarantine_until IS NOT NULL AND quarantine_until <= ?", (now,))
        for r in due:
            name = r["source_name"]
            with self.conn:
                self.fire(name, "quarantine_expired", "quarantine time is over: one automatic retry")
                self.conn.execute("UPDATE source_health SET quarantine_until = NULL, attempts_since = ?, retry_only = 1 "
                                  "WHERE source_name = ?", (now, name))
                self.conn.execute("UPDATE sources SET next_run_at = ? WHERE name = ?", (now, name))
            fx.alert("UNQUARANTINED", name, "quarantine expired: one automatic retry", level="info", state=DEGRADED)
        return fx

    def unquarantine(self, name: str, reason: str = "") -> Effects:
        fx = Effects()
        now = self.clock()
        with self.conn:
            state = self.model(name).state
            self.fire(name, "unquarantine", reason or "by a person")
            self.conn.execute("UPDATE source_health SET quarantine_until = NULL, attempts_since = ?, retry_only = 0, "
                              "fix_attempts_today = 0, host_unresolved_since = NULL WHERE source_name = ?", (now, name))
            self.conn.execute("UPDATE sources SET next_run_at = ?, paused = 0 WHERE name = ?", (now, name))
        fx.alert("UNQUARANTINED", name, f"{state} -> DEGRADED with a fresh attempt budget" + (f": {reason}" if reason else ""),
                 level="info", state=DEGRADED)
        fx.result = sources.status_one(self.conn, name, now=self.clock())
        return fx

    def flag_for_review(self, name: str, reason: str) -> Effects:
        """Set the review flag. The FLAGGED_FOR_REVIEW alert comes with the staged candidate
        (record_fix, outcome `staged`), which names the version to approve; raised here, before
        any version exists, it could not, and the alert dedupe would then swallow the one that does."""
        with self.conn:
            self.conn.execute("UPDATE source_health SET flagged_for_review = 1 WHERE source_name = ?", (name,))
        return Effects()

    # -- parser versions -------------------------------------------------------------------
    def stage_version(self, name: str, bp: Blueprint, origin: str, note: str = "",
                      validation: dict | None = None) -> int:
        return versions.create(self.conn, name, bp, origin=origin, status="staging", validation=validation, note=note,
                               now=self.clock())

    def stage_answer(self, name: str, bp: Blueprint, digest: str, origin: str, note: str = "") -> dict:
        """Stage a healer's answer, unless the same answer (`digest`: the normalized candidate) was
        staged for this source before: {"version": v, "seen": None} or {"version": None, "seen":
        {"version", "status", "note", "first_at"}}."""
        version, before = answers.stage(self.conn, name, bp, digest, origin=origin, note=note, now=self.clock())
        return {"version": version, "seen": before}

    def promote(self, name: str, version: int, validation: dict | None = None, url: str | None = None,
                by: str | None = None, page: dict | None = None, rescrape: bool = True) -> Effects:
        """Production pointer moves to `version`, the old one archived — one transaction.

        `page` ({"url", "html", "records"}): the live page it was validated on, kept as the
        version's page (a later merge of two layouts is proved on it). With `rescrape` the
        source is scraped at once; a fix the Doctor deploys passes False, and its
        `record_fix(outcome="promoted")` schedules that scrape: HEALED is said before RECOVERED."""
        fx = Effects()
        now = self.clock()
        with self.conn:
            prev = versions.promote(self.conn, name, version, validation=validation, now=now, by=by)
            if page:
                probation.put_page(self.conn, name, version, page["url"], page["html"], page.get("records"), now=now)
            if url:
                self.conn.execute("UPDATE sources SET url = ?, host = ?, etag = NULL, last_modified = NULL "
                                  "WHERE name = ?", (url, sources.host_of(url), name))
            self.conn.execute("UPDATE sources SET next_run_at = CASE WHEN ? THEN ? ELSE next_run_at END, etag = NULL, "
                              "last_modified = NULL WHERE name = ?", (rescrape, now, name))
        fx.result = {"version": version, "previous": prev}
        return fx

    def reject_version(self, name: str, version: int, reason: str, validation: dict | None = None) -> None:
        versions.reject(self.conn, name, version, reason, validation)

    def rollback_target(self, name: str, to: int | None = None) -> int:
        """The version `healerctl rollback` would re-promote (default: the newest archived one); raises
        VersionNotFound when there is none or it is not archived."""
        sources.get(self.conn, name)
        if to is None:
            to = versions.latest_archived(self.conn, name)
            if to is None:
                raise versions.VersionNotFound(f"source {name!r} has no archived parser version to roll back to")
        v = versions.get(self.conn, name, to)
        if v["status"] not in ("archived", "production"):
            raise versions.VersionNotFound(
                f"version {to} of {name!r} is {v['status']}; only archived versions can be re-promoted "
                f"(use `healerctl approve` for staged ones)")
        return to

    def rollback(self, name: str, to: int | None = None, fails: str | None = None) -> Effects:
        """A person's rollback: no fix attempt, no fix row; audited as `manual_rollback`. `fails`: why the
        version fails the current page, when the person forced it anyway (its failures are then the
        rollback's: not healed, see `_record_failure`)."""
        with self.conn:
            to = self.rollback_target(name, to)
            v = versions.get(self.conn, name, to)
            url = json.loads(v["body"]).get("url")
            current = sources.get(self.conn, name)["current_version"]
            fx = self.promote(name, to, url=url if url and url != sources.get(self.conn, name)["url"] else None,
                              by=versions.PERSON)
            reason = f"rolled back by a person from version {current} to version {to}"
            if fails:
                reason += f" with --force: {FORCED_MARK} ({fails})"
            # Recorded for `history` (a version event) and the audit trail.
            sources.audit(self.conn, name, "manual_rollback", reason, self.clock())
            if fails:
                self.conn.execute("UPDATE task_queue SET state = 'COMPLETED', completed_at = ?, "
                                  "error_message = 'a person rolled back the parser' "
                                  "WHERE type = 'FIX_SOURCE' AND target = ? AND state = 'PENDING'", (self.clock(), name))
        return fx

    def _forced_rollback(self, name: str, src: dict) -> str | None:
        """The audit reason when the production version is there by a person's forced rollback (and
        nothing changed production since), else None."""
        ev = row(self.conn, "SELECT trigger, reason, at FROM source_events WHERE source_name = ? AND trigger IN "
                            "('manual_rollback', 'rollback', 'merge', 'update', 'register') ORDER BY id DESC LIMIT 1",
                 (name,))
        if ev is None or ev["trigger"] != "manual_rollback" or FORCED_MARK not in ev["reason"]:
            return None
        v = probation.version_row(self.conn, name, src["current_version"])
        promoted_at = scalar(self.conn, "SELECT promoted_at FROM parser_versions WHERE source_name = ? AND version = ?",
                             (name, src["current_version"]))
        if v is None or v["promoted_by"] != versions.PERSON or promoted_at is None or promoted_at > ev["at"]:
            return None
        return str(ev["reason"])

    def approve(self, name: str, version: int) -> Effects:
        with self.conn:
            v = versions.get(self.conn, name, version)
            if v["status"] != "staging":
                raise versions.VersionNotFound(f"version {version} of {name!r} is {v['status']}, not staged")
            fx = self.promote(name, version, by=versions.PERSON)
            self.conn.execute("UPDATE source_health SET flagged_for_review = 0 WHERE source_name = ?", (name,))
            self.conn.execute("UPDATE sources SET review_approved_until = ? WHERE name = ?",
                              (self.clock() + self.config.doctor.review_window, name))
            body = json.loads(v["body"])
            if body.get("url"):
                from healerd.store.sources import host_of
                self.conn.execute("UPDATE sources SET url = ?, host = ? WHERE name = ?",
                                  (body["url"], host_of(body["url"]), name))
            state = self.model(name).state
            if state in (QUARANTINED, DEAD):
                self.fire(name, "unquarantine", f"a person approved version {version}")
                self.conn.execute("UPDATE source_health SET quarantine_until = NULL, attempts_since = ? "
                                  "WHERE source_name = ?", (self.clock(), name))
        fx.result = {"version": version}
        return fx

    def set_deferred_report(self, name: str, report: dict | None) -> None:
        with self.conn:
            self.conn.execute("UPDATE source_health SET deferred_report = ? WHERE source_name = ?",
                              (json.dumps(report, default=str) if report else None, name))

    # -- alerts, healer calls, memory ------------------------------------------------------------
    def insert_alert(self, alert: dict, ts: float) -> int:
        return alerts_store.insert(self.conn, alert, ts)

    def record_healer_call(self, *, name: str, cycle: int, backend: str, started_at: float, duration_ms: float,
                           http_status: int | None, outcome: str, reason: str) -> None:
        with self.conn:
            self.conn.execute("INSERT INTO healer_calls (source_name, cycle, backend, started_at, duration_ms, http_status, "
                              "outcome, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                              (name, cycle, backend, started_at, duration_ms, http_status, outcome, reason[:1000]))

    # -- feeds ----------------------------------------------------------------------------------
    def sync_feeds(self, names: list[str]) -> list[str]:
        """One cursor per configured feed (new ones start at the newest stored scrape)."""
        return feeds_store.sync(self.conn, names, self.clock())

    def feed_advanced(self, feed: str, cursor: int, delivered: int) -> Effects:
        """The feed dealt with every stored scrape up to `cursor`; when it delivered some, that ends
        its outage (one RECOVERED: a batch with nothing for it proves nothing)."""
        fx = Effects()
        now = self.clock()
        since = feeds_store.advance(self.conn, feed, cursor, delivered, now, recovered=delivered > 0)
        if since is not None:
            fx.alert("RECOVERED", None, f"feed {feed} delivers again after {_human_duration(round(now - since))}",
                     level="info", details={"cause": "feed", "feed": feed})
        return fx

    def feed_progress(self, feed: str, cursor: int, delivered: int) -> None:
        """Part of a batch was delivered before a failure: the cursor moves, the outage goes on."""
        feeds_store.advance(self.conn, feed, cursor, delivered, self.clock(), recovered=False)

    def feed_failed(self, feed: str, error: str) -> Effects:
        """A delivery of the feed failed: the first failure of an outage raises its one alert."""
        fx = Effects()
        if feeds_store.failed(self.conn, feed, error, self.clock()):
            fx.alert("SYSTEMIC_HALT", None, f"feed {feed} cannot deliver ({error}); retrying with backoff, "
                     "nothing is lost", level="error", details={"cause": "feed", "feed": feed})
        return fx

    def memory(self, method: Callable[..., R], /, **kwargs: Any) -> R:
        """Run a FixMemory method (unbound: `FixMemory.search`) on the writer's connection."""
        from healerd.store.memory import FixMemory

        return method(FixMemory(self.conn, clock=self.clock), **kwargs)

    def call(self, fn: Callable, *args, **kwargs):
        """Run a store function on the writer's connection (for the few one-off writes)."""
        return fn(self.conn, *args, **kwargs)


def systemic_halt(conn: apsw.Connection) -> dict | None:
    """The systemic halt in force ({"fingerprint", "since", "error_type", "sources", "hosts",
    "reason"}), or None while healing runs."""
    v = scalar(conn, "SELECT value FROM daemon_state WHERE key = ?", (HALT_KEY,))
    return json.loads(v) if v else None


def _human_duration(seconds: float) -> str:
    units = ((3600, "h"), (60, "m")) if seconds <= 48 * 3600 else ((86400, "d"), (3600, "h"), (60, "m"))
    for size, unit in units:
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
