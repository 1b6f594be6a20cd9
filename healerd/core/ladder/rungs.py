"""The rungs of the healing ladder: the fix memory, the built-in healer, the external healer,
relocation (a page that moved), and the best guess of a refusal staged when nothing healed.

Each rung returns None (it had nothing to try) or its outcome: {"outcome", "strategy", "reason",
"version", ...}, and appends one line per thing it tried to `att.tried`.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from healerd.core.blueprint import Blueprint
from healerd.core.diagnosis import DiagnosisContext
from healerd.core.judge import REFUSAL_GUESS
from healerd.core.ladder.ports import Attempt, FetchFailed, HealerClient, LadderPorts, LadderSettings, TrialTooSlow
from healerd.core.routing import RELOCATED_NOTE, proposal, relocation_candidates, resembles_last_good
from healerd.core.sanitize import mask_text
from healerd.core.timeutil import iso
from healerd.core.validate import validate
from healerd.core.visible import visible_html

log = logging.getLogger("healerd.doctor")

RELOCATION_TRIALS = 15   # same-site addresses tried for a page that moved
DAY = 86400.0
MIN_PAUSE = 60.0         # a task paused by the external budget waits at least this long
UNTRUSTED_PAUSE = 300.0  # a task paused because another user listens where the healer should


class Rungs:
    def __init__(self, ports: LadderPorts, settings: LadderSettings):
        self.ports = ports
        self.settings = settings

    # -- shared ---------------------------------------------------------------------------------
    def deploy(self, att: Attempt, candidate: Blueprint, origin: str, note: str,
               confidence: float | None = None) -> dict:
        res = self.ports.deployer.deploy(att.name, candidate, origin, note, att.page_html, confidence)
        if res.get("version") is not None and res["outcome"] != "declined":
            att.deployed += 1   # a version was staged for it: this attempt did deploy something
        return res

    def already_rejected(self, att: Attempt, candidate: Blueprint) -> bool:
        """The same candidate already failed in this failure episode (a page seen earlier is another story)."""
        return self.ports.reads.already_rejected(att.name, candidate.to_json(), att.episode_start)

    # -- the fix memory -------------------------------------------------------------------------
    def memory(self, ctx: DiagnosisContext, att: Attempt, *, host: str, diff_sig: str, tmpl: str,
               broken: list[str]) -> dict | None:
        mem, name, tried = self.ports.memory, att.name, att.tried
        try:
            matches = mem.search(error_type=ctx.error_type, host=host, broken_selectors=broken, diff_sig=diff_sig,
                                 template_sig=tmpl, source_name=name)
        except Exception as exc:
            tried.append(f"memory: search failed ({exc})")
            return None
        if not matches:
            tried.append("memory: no known fix for this change")
            return None
        for m in matches:
            try:
                # Retrieving the bundle is its own usage event (the `retrieved` statistic).
                bundle = mem.bundle(m.issue_id, name)
            except Exception as exc:   # forgotten since the search
                tried.append(f"memory: issue {m.issue_id} could not be retrieved ({exc})")
                continue
            # A selector mapping on this source's selectors, or a parser bundle's code on this
            # source's blueprint (only once the sandbox's static check accepts it).
            candidate = mem.apply(ctx.blueprint, bundle)
            if candidate is None:
                continue
            mem.record_usage("fix_applied", m.issue_id, name)
            res = self.deploy(att, candidate, "memory", f"fix memory issue {m.issue_id}")
            success = res["outcome"] == "promoted"
            # Only a verdict on the page says something about the bundle: a staged (or already
            # staged) candidate is still pending, and a page that could not be fetched judged nothing.
            # A failure would lower its confidence and keep it from this source for good.
            if success or (res["outcome"] == "rejected" and res.get("conclusive", True)):
                mem.confirm(m.issue_id, name, success, res["reason"][:500])
            if success:
                tried.append(f"memory: issue {m.issue_id} applied")
                return {"outcome": "promoted", "strategy": "memory", "reason": f"known fix {m.issue_id} "
                        f"({m.canonical_title})", "version": res["version"], "validation": res.get("validation"),
                        "patch": candidate.to_json()}
            tried.append(f"memory: issue {m.issue_id} {res['outcome']}: {res['reason']}")
            if res["outcome"] in ("staged", "declined"):
                return {"outcome": res["outcome"], "strategy": "memory", "reason": res["reason"],
                        "version": res["version"]}
        return None

    # -- the built-in healer ----------------------------------------------------------------------
    def builtin(self, ctx: DiagnosisContext, att: Attempt) -> dict | None:
        tried = att.tried
        if ctx.blueprint.parser:
            tried.append("builtin: the source has a code parser; the built-in healer repairs selectors only")
            return None
        if not ctx.original_html or ctx.last_good_records is None:
            tried.append("builtin: no last good page to learn from")
            return None
        try:
            # The search evaluates selectors on both pages: in the trial worker, with its deadline.
            # ... on what a browser renders of the current page: hidden nodes are emptied (visible.py)
            result = self.ports.trials.heal(ctx.blueprint, ctx.original_html or "", ctx.last_good_records,
                                            visible_html(ctx.current_html or ""))
        except TrialTooSlow as exc:
            tried.append(f"builtin: {exc}")
            return {"outcome": "rejected", "strategy": "builtin", "reason": str(exc), "version": None}
        if not result.ok:
            tried.append(f"builtin: refused: {result.reason}")
            att.best_guess = (result.candidate, result.reason) if result.candidate is not None else None
            gone = self.data_gone(ctx, result.details)
            att.missing.extend(f for f in gone if f not in att.missing)
            if gone:
                att.suggested = self.without_gone(ctx, gone)
            return {"outcome": "rejected", "strategy": "builtin", "reason": f"refused: {result.reason}",
                    "version": None}
        if result.unchanged or result.blueprint is None:
            tried.append("builtin: the old selectors still work on the current page")
            return None
        candidate = self.by_telling_feature(ctx, result.blueprint)
        if self.already_rejected(att, candidate):
            tried.append("builtin: the same candidate was rejected before (not retried)")
            return {"outcome": "rejected", "strategy": "builtin", "reason": "candidate already rejected once",
                    "version": None}
        res = self.deploy(att, candidate, "builtin", result.reason, result.confidence)
        tried.append(f"builtin: {res['outcome']}: {res['reason']}")
        return {"outcome": res["outcome"], "strategy": "builtin", "reason": f"{result.reason} ({res['reason']})",
                "version": res["version"], "validation": res.get("validation"), "patch": candidate.to_json()}

    def by_telling_feature(self, ctx: DiagnosisContext, candidate: Blueprint) -> Blueprint:
        """A candidate that leaves look-alikes out by position, rewritten to leave them out by the
        class that tells them apart (`telling_feature`: it stays right when they go); else as it is."""
        try:
            return self.ports.trials.bounded("by_telling_feature", candidate,
                                             visible_html(ctx.current_html or "")) or candidate
        except Exception:
            log.exception("could not look for a telling feature for %s", ctx.source_name)
            return candidate

    def without_gone(self, ctx: DiagnosisContext, gone: list[str]) -> Blueprint | None:
        """The blueprint a person could use now: the gone fields made optional and the others repaired
        for the current page (the built-in healer run again on that blueprint); when a gone field's old
        selector now reads another field's data (a positional column removed, the next one moved into
        its place), the gone fields deleted instead and the others placed again. Tried on the live page
        before it is offered; None when nothing reads it. Only suggested in the report: making a field
        optional or deleting it is a person's call."""
        from healerd.core.blueprint_toml import with_optional

        advice = self._repaired(ctx, with_optional(ctx.blueprint, gone))
        kept = {n: f for n, f in ctx.blueprint.fields.items() if n not in gone}
        if advice is None and kept:
            advice = self._repaired(ctx, ctx.blueprint.with_fields(kept))
        if advice is None:
            return None
        try:   # the advice on the live page, in the trial worker: it must pass validation there
            ex = self.ports.trials.run_parser(advice, ctx.current_html or "")
            passed = validate(ex, advice, last_good=ctx.last_good_records).passed
        except Exception:
            log.exception("could not try the advice for %s on the live page", ctx.source_name)
            return None
        return advice if passed else None

    def _repaired(self, ctx: DiagnosisContext, bp: Blueprint) -> Blueprint | None:
        """`bp` repaired for the current page by the built-in healer (itself when its selectors still
        work), or None when the healer refuses it."""
        try:   # the built-in healer on pages nobody checked: in the trial worker, with its deadline
            again = self.ports.trials.bounded("heal", bp, ctx.original_html or "", ctx.last_good_records or {},
                                              ctx.current_html)
        except Exception:
            log.exception("could not repair the blueprint of %s without its gone fields", ctx.source_name)
            return None
        if not again.ok:
            return None
        return bp if again.unchanged or again.blueprint is None else again.blueprint

    def data_gone(self, ctx: DiagnosisContext, details: dict | None) -> list[str]:
        """The fields of a refusal whose data is gone from the page (all the fields it names, or none:
        a refusal that also names a field still on the page is a healer's limit)."""
        from healerd.core.heal.checks.data_gone import refused_fields

        refused = refused_fields(details)
        items = (details or {}).get("items")
        if not refused and isinstance(items, dict) and items.get("status") in ("gone", "ambiguous"):
            refused = list(ctx.blueprint.fields)
        if not refused or not ctx.original_html or not ctx.current_html:
            return []
        try:
            gone = self.ports.trials.bounded("gone_fields", ctx.blueprint, ctx.original_html, ctx.current_html,
                                             refused)
        except Exception:
            log.exception("could not tell whether the data of %s is gone", ctx.source_name)
            return []
        return list(gone) if set(gone) == set(refused) else []

    def best_guess(self, ctx: DiagnosisContext, att: Attempt) -> dict | None:
        """Nothing healed: the built-in healer's best guess of an ambiguous refusal, if it made one, is
        staged (confidence REFUSAL_GUESS: the judge never promotes it) for a person to approve in one command."""
        if att.best_guess is None:
            return None
        candidate, refusal = att.best_guess
        att.best_guess = None
        if self.already_rejected(att, candidate):
            return None
        res = self.deploy(att, candidate, "builtin", f"best guess of a refusal: {refusal}"[:500],
                          REFUSAL_GUESS)
        att.tried.append(f"builtin: best guess {res['outcome']}: {res['reason']}")
        if res["outcome"] not in ("staged", "declined") or res.get("version") is None:
            return None
        try:
            would = self.ports.trials.run_parser(candidate, ctx.current_html).data
        except Exception:
            would = None
        shown = proposal(ctx.source_name, res["version"], would, ctx.last_good_records, list(candidate.fields))
        shown["values"] = [mask_text(v) for v in shown["values"]]
        return {"outcome": res["outcome"], "strategy": "builtin", "version": res["version"], "proposal": shown,
                "reason": f"refused ({refusal}); its best guess awaits `{shown['approve']}`",
                "validation": res.get("validation"), "patch": candidate.to_json()}

    # -- the external healer ----------------------------------------------------------------------
    def external(self, ctx: DiagnosisContext, att: Attempt) -> dict | None:
        client = self.ports.healer.client() if self.settings.healer_configured else None
        if client is None:
            att.tried.append("external: not configured")
            return None
        with client:
            return self.external_cycles(client, ctx, att)

    def external_cycles(self, client: HealerClient, ctx: DiagnosisContext, att: Attempt) -> dict | None:
        tried, s = att.tried, self.settings
        # This attempt's cycles only: earlier attempts (other strategies, other episodes) travel
        # as previous_attempts with their strategy, not relabelled as cycles they never were.
        history: list[dict] = []
        seen: set[str] = set()   # the candidates deployed in this attempt
        last = None
        for cycle in range(1, min(s.healer_cycles, len(s.healer_timeouts)) + 1):
            budget = self.budget_exhausted(att.name)
            if budget:
                blocked, last_call, frees_at = budget
                if self.pause_not_yet_alerted(att.name, last_call):
                    self.ports.outcomes.alert("BUDGET_PAUSED", att.name, blocked, "warning",
                                              {"cycle": cycle, "resumes_at": iso(frees_at)})
                tried.append(f"external: paused: {blocked}")
                if cycle == 1 and not att.deployed:
                    return {"outcome": "paused", "strategy": "external", "reason": blocked, "version": None,
                            "retry_in": max(MIN_PAUSE, frees_at - self.ports.clock())}
                break
            started = self.ports.clock()
            res = client.heal_cycle(ctx, cycle, history)
            self.ports.healer.record_call(name=att.name, cycle=cycle, backend=s.healer_kind, started_at=started,
                                          duration_ms=res.duration_ms, http_status=res.http_status,
                                          outcome=res.outcome, reason=res.reason)
            if res.outcome == "untrusted":
                # Nothing was sent: whoever answers there is not trusted with the token and the page.
                # The next cycle would meet the same listener: one line, one alert, no more cycles.
                # Someone else's listener is no failure of the fix: before anything was deployed,
                # the attempt is paused like one the budget stopped (no attempt spent, so another
                # user squatting the port cannot quarantine sources) and tried again later.
                tried.append(f"external cycle {cycle}: {res.outcome}: {res.reason}")
                log.warning("%s: external healer not called: %s", att.name, res.reason)
                if cycle == 1 and not att.deployed:
                    resumes = self.ports.clock() + UNTRUSTED_PAUSE
                    self.ports.outcomes.alert(
                        "BUDGET_PAUSED", att.name, f"healing paused, no fix attempt spent: external healer not "
                        f"called: {res.reason}; tried again at {iso(resumes)}", "error",
                        {"cause": "untrusted_healer", "cycle": cycle, "resumes_at": iso(resumes)})
                    return {"outcome": "paused", "strategy": "external", "version": None, "retry_in": UNTRUSTED_PAUSE,
                            "reason": f"external healer not called: {res.reason}"}
                self.ports.outcomes.alert("HEAL_FAILED", att.name, f"external healer not called: {res.reason}",
                                          "error", {"cause": "untrusted_healer", "cycle": cycle})
                break
            if not res.ok or res.blueprint is None:
                tried.append(f"external cycle {cycle}: {res.outcome}: {res.reason}")
                history.append({"cycle": cycle, "outcome": res.outcome, "reason": res.reason,
                                "changes_summary": res.changes_summary})
                continue
            candidate = res.blueprint
            if not candidate.url:
                candidate = candidate.with_url(ctx.url)
            body = candidate.to_json()
            if body in seen or self.already_rejected(att, candidate):
                # The healer answers what it answered before: staging it again would only make another
                # rejected version, and calling again would spend the daily budget on the same answer.
                tried.append(f"external cycle {cycle}: the same candidate as a rejected one (not deployed again); "
                             f"no further calls")
                break
            seen.add(body)
            dep = self.deploy(att, candidate, "external", res.changes_summary or f"cycle {cycle}")
            tried.append(f"external cycle {cycle}: {dep['outcome']}: {dep['reason']}")
            last = {"outcome": dep["outcome"], "strategy": "external", "reason": dep["reason"],
                    "version": dep["version"], "validation": dep.get("validation"), "patch": candidate.to_json()}
            if dep["outcome"] in ("promoted", "staged", "declined"):
                return last
            history.append({"cycle": cycle, "outcome": "rejected", "reason": dep["reason"],
                            "changes_summary": res.changes_summary})
        return last

    def budget_exhausted(self, name: str) -> tuple[str, float, float] | None:
        """(why, the newest counted call, when a call leaves the 24 h window) when a daily budget is spent."""
        since = self.ports.clock() - DAY
        mine = self.ports.reads.healer_calls(name, since)
        if mine.n >= self.settings.daily_budget_per_source:
            return (f"the daily budget of external healer calls for {name} is spent ({mine.n})",
                    mine.last or 0.0, (mine.first or since) + DAY)
        total = self.ports.reads.healer_calls(None, since)
        if total.n >= self.settings.daily_budget_total:
            return (f"the daily budget of external healer calls is spent ({total.n} in 24h)",
                    total.last or 0.0, (total.first or since) + DAY)
        return None

    def pause_not_yet_alerted(self, name: str, last_call: float) -> bool:
        """One BUDGET_PAUSED per pause: none was raised for `name` since the newest counted call."""
        sent = self.ports.reads.budget_alert_at(name)
        return sent is None or sent < last_call

    # -- HTTP_ERROR: the page moved ---------------------------------------------------------------
    def relocate(self, ctx: DiagnosisContext, att: Attempt) -> dict | None:
        pages, tried = self.ports.pages, att.tried
        parts = urlsplit(ctx.url)
        root = f"{parts.scheme}://{parts.netloc}/"
        redirect = None
        if isinstance(ctx.actual_output, dict):
            redirect = ctx.actual_output.get("permanent_redirect")
        candidates: list[str] = []
        if redirect and urlsplit(redirect).hostname == parts.hostname:
            candidates.append(redirect)
        sitemap = None
        seen_pages: list[tuple[str, str]] = []
        try:
            status, text = pages.get_text(root + "sitemap.xml")
            sitemap = text if status == 200 else None
        except FetchFailed:
            pass
        try:
            home = pages.fetch(root)
            seen_pages.append((home.url, home.text))
        except FetchFailed:
            pass
        if ctx.original_html:
            seen_pages.append((ctx.url, ctx.original_html))
        for u in relocation_candidates(ctx.url, sitemap, seen_pages):
            if u not in candidates:
                candidates.append(u)
        if not candidates:
            tried.append("relocate: no candidate URL on the same site (sitemap.xml, links)")
            return None
        att.page_html = None   # a candidate for another address: no layout to merge with
        for url in candidates[:RELOCATION_TRIALS]:
            try:
                page = pages.fetch(url)
                ex = self.ports.trials.run_parser(ctx.blueprint, page.text, self.settings.limits)
            except Exception:
                continue
            result = validate(ex, ctx.blueprint, last_good=ctx.last_good_records, html=page.text,
                              status=page.status)
            if not result.passed:
                continue
            alike, why = resembles_last_good(ex.data, ctx.last_good_records)
            if not alike:
                tried.append(f"relocate: {url}: not like the last good records ({why})")
                continue
            candidate = ctx.blueprint.with_url(url)
            res = self.deploy(att, candidate, "builtin", f"{RELOCATED_NOTE}{url}")
            tried.append(f"relocate: {url}: {res['outcome']}: {res['reason']}")
            if res["outcome"] in ("promoted", "staged", "declined"):
                return {"outcome": res["outcome"], "strategy": "relocate", "reason": f"page moved to {url}",
                        "version": res["version"], "validation": res.get("validation"), "patch": candidate.to_json()}
        tried.append(f"relocate: none of {len(candidates)} same-site URLs yields the expected data")
        return None

