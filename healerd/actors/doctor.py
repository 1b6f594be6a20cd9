"""Doctor: one fix attempt per FIX_SOURCE task.

    breakers (halt, budget, quarantine) -> diagnosis context (pages, diff, output)
    -> route by error class -> the healing ladder (memory -> builtin -> external)
    -> each candidate deployed by the Deployer (staging, live validation, promotion)
    -> one fix_history row, one WARNING log line, alerts, the fix memory updated

The Doctor asks the StoreWriter and the Deployer, neither of which ever asks it
back. It tells the Scheduler when it is idle again.
"""

from __future__ import annotations

import json
import logging
import time
import traceback

from healerd.actors.base import ServiceActor, page_limits
from healerd.actors.deployer import UNFETCHED, Deploy
from healerd.actors.messages import Alert, HealTask, Ping
from healerd.actors.registry import ActorRegistry
from healerd.actors.scheduler import DoctorIdle
from healerd.adapters.fetch import FetchError
from healerd.adapters.trials import TooSlow
from healerd.config import Config
from healerd.core import breakers, errors
from healerd.core.blueprint import Blueprint
from healerd.core.diagnosis import DiagnosisContext
from healerd.core.extract import PageTooLarge
from healerd.core.htmldiff import diff_signature, structural_diff, template_signature
from healerd.core.routing import (
    DECLINE,
    RELOCATE,
    RELOCATED_NOTE,
    SELECTORS,
    broken_selectors,
    deferred_report,
    proposal,
    recovery_context,
    relocation_candidates,
    resembles_last_good,
    route,
)
from healerd.core.sanitize import mask_text
from healerd.core.timeutil import iso
from healerd.core.validate import validate
from healerd.store import fixes, snapshots, sources, versions
from healerd.store.db import row, scalar
from healerd.store.ledger import HALT_KEY, Ledger
from healerd.store.memory import FixMemory
from healerd.waiters import Waiters

log = logging.getLogger("healerd.doctor")

DIFF_KEPT_LINES = 200   # of the structural diff, kept with each fix attempt for `healerctl diff`


def rung_of(tried_entry: str) -> str:
    """The rung a `tried` line is about: "external cycle 2: timeout: ..." -> "external"."""
    return (tried_entry.split(":", 1)[0].split() or ["none"])[0]


def last_rung(tried: list[str]) -> str:
    """The last rung that ran: a rung that is not configured tried nothing and names no attempt."""
    ran = [t for t in tried if not t.rstrip().endswith(": not configured")]
    return rung_of(ran[-1]) if ran else "none"


class Doctor(ServiceActor):
    fetches = True

    def __init__(self, db_path: str, config: Config, registry: ActorRegistry, waiters: Waiters):
        super().__init__(db_path, config, registry)
        self.waiters = waiters
        self._episode_start: float | None = None
        self._failed_fields: list[str] = []
        self._deployed = 0   # candidates staged by the Deployer in the current attempt
        self._best_guess: tuple[Blueprint, str] | None = None   # a refusal's best guess (_stage_best_guess)
        self._page_html: str | None = None   # the page candidates are made for (sent with each Deploy)
        self._suggested: Blueprint | None = None   # a refusal's blueprint without the gone fields, for the report

    def handle(self, message):
        if isinstance(message, Ping):
            return True
        if isinstance(message, HealTask):
            result = None
            try:
                result = self.treat(message)
            except Exception as exc:
                log.exception("the Doctor failed on %s", message.name)
                reason = f"internal error: {one_line(exc)}"
                result = {"name": message.name, "outcome": "error", "strategy": None,
                          "reason": reason, "version": None, "state": None}
                try:
                    self.registry.write(Ledger.fail_task, message.task_id, reason)
                except Exception:
                    log.exception("could not record the failed task %s", message.task_id)
                self._record_internal_error(message, reason)
            finally:
                self.waiters.resolve(message.request_id, result)
                self.registry.tell("scheduler", DoctorIdle())
        return None

    def _record_internal_error(self, task: HealTask, reason: str) -> None:
        """An attempt that crashed is still an attempt: an `error` row, counted against the budget,
        so a Doctor that fails the same way every time ends in QUARANTINED rather than looping."""
        try:
            error_type = task.context.get("error_type") or scalar(
                self.conn, "SELECT last_error_type FROM source_health WHERE source_name = ?", (task.name,))
            self.registry.write(Ledger.record_fix, name=task.name, error_type=error_type or "UNKNOWN", strategy="none",
                                outcome="error", reason=reason, deployed_to="FAILED",
                                fingerprint=task.context.get("fingerprint"))
            log.warning("fix attempt %s: strategy=none outcome=error reason=%s", task.name, reason)
        except Exception:
            log.exception("could not record the failed fix attempt of %s", task.name)

    # -- one attempt -------------------------------------------------------------------
    def _result(self, name: str, outcome: str, reason: str, strategy: str | None = None,
                version: int | None = None) -> dict:
        state = scalar(self.conn, "SELECT state FROM source_health WHERE source_name = ?", (name,))
        return {"name": name, "outcome": outcome, "strategy": strategy, "reason": reason, "version": version,
                "state": state}

    def _decline(self, task: HealTask, reason: str, *, release_for: float | None = None,
                 record_as: str | None = None, strategy: str = "none") -> dict:
        if release_for is not None:
            self.registry.write(Ledger.release_task, task.task_id, time.time() + release_for)
        else:
            self.registry.write(Ledger.complete_task, task.task_id, {"outcome": "declined", "reason": reason})
        if record_as:
            self.registry.write(Ledger.record_fix, name=task.name, error_type=record_as, strategy=strategy,
                                outcome="declined", reason=reason)
        log.info("fix of %s declined: %s", task.name, reason)
        return self._result(task.name, "declined", reason)

    def treat(self, task: HealTask) -> dict:
        name = task.name
        started = time.time()
        try:
            src = sources.get(self.conn, name)
        except sources.SourceNotFound:
            self.registry.write(Ledger.complete_task, task.task_id, {"outcome": "declined", "reason": "source removed"})
            return {"name": name, "outcome": "declined", "strategy": None, "reason": "no such source",
                    "version": None, "state": None}
        if src["state"] in ("QUARANTINED", "DEAD"):
            return self._decline(task, f"{name} is {src['state']}: `healerctl unquarantine {name}` first")
        if not self.config.doctor.enabled:
            return self._decline(task, "healing is disabled ([doctor] enabled = false)")
        halt = scalar(self.conn, "SELECT value FROM daemon_state WHERE key = ?", (HALT_KEY,))
        if halt:
            reason = json.loads(halt).get("reason", "systemic halt")
            return self._decline(task, f"healing is halted everywhere (SYSTEMIC_HALT: {reason}); "
                                       f"`healerctl resume-healing` to resume", release_for=30.0)
        if not breakers.has_good_past(src["success_count"]):
            # No scrape ever passed: nothing to heal or relocate towards, and no attempt is spent.
            return self._decline(task, f"{name} was {breakers.NEVER_SCRAPED}")
        budget = breakers.attempt_budget(self.config.doctor.max_fix_attempts, src["retry_only"])
        failed = fixes.attempts_in_window(self.conn, name, self.config.doctor.attempt_window,
                                          after=src["attempts_since"], outcomes=breakers.FAILED_OUTCOMES)
        if breakers.budget_spent(failed, budget):
            return self._decline(task, f"the attempt budget is spent: {failed} of {budget} failed attempts "
                                       f"allowed in the window")

        ctx, page_error = self.diagnose(name, src)
        if ctx is None:
            return self._decline(task, page_error or "could not diagnose")
        if ctx.error_type is None:
            ctx = self._failing_layout(name, src, ctx)
        self._page_html = ctx.current_html or None
        strategy_kind, why = route(ctx.error_type, ctx_status(ctx), None)
        if ctx.error_type is None:
            self.registry.write(Ledger.complete_task, task.task_id, {"outcome": "unchanged"})
            self.registry.write(Ledger.schedule_now, name)
            return self._result(name, "unchanged", "the production parser passes on the current page: nothing to heal")
        if strategy_kind == DECLINE:
            return self._decline(task, why)

        self._episode_start = src["failing_since"]
        previous = fixes.recent(self.conn, name, since=src["failing_since"] - 1 if src["failing_since"] else None)
        ctx.previous_attempts = recovery_context(previous)["previous_attempts"]
        tried: list[str] = []
        outcome = None
        self._deployed = 0
        self._suggested = None
        if strategy_kind == SELECTORS:
            outcome = self.selector_ladder(ctx, tried)
        elif strategy_kind == RELOCATE:
            outcome = self.relocate(ctx, tried)

        duration_ms = (time.time() - started) * 1000
        fingerprint = task.context.get("fingerprint") or src["last_fingerprint"]
        diag = {"error_type": ctx.error_type, "error_message": mask_text(ctx.error_message),
                "failure_count": ctx.failure_count, "fix_attempts_today": ctx.fix_attempts_today,
                "validation_errors": ctx.validation_errors[:10], "diff_lines": ctx.html_diff.count("\n"),
                "html_diff": mask_text("\n".join(ctx.html_diff.splitlines()[:DIFF_KEPT_LINES])),
                "previous_attempts": len(ctx.previous_attempts), "version": ctx.version}
        if outcome and outcome["outcome"] == "promoted":
            reason = f"{outcome['strategy']}: {outcome['reason']}"
            self.registry.write(Ledger.record_fix, name=name, error_type=ctx.error_type, strategy=outcome["strategy"],
                                outcome="promoted", reason=reason, context=diag, patch=outcome.get("patch"),
                                validation=outcome.get("validation"), deployed_to="PRODUCTION",
                                version=outcome["version"], fingerprint=fingerprint, duration_ms=duration_ms)
            self.registry.write(Ledger.complete_task, task.task_id, {"outcome": "promoted", "version": outcome["version"]})
            # Good news is INFO: WARNING is for what may need a person.
            log.info("fix attempt %s: strategy=%s duration=%.0fms outcome=promoted version=%s reason=%s",
                     name, outcome["strategy"], duration_ms, outcome["version"], outcome["reason"])
            return self._result(name, "promoted", reason, outcome["strategy"], outcome["version"])

        if outcome and outcome["outcome"] == "declined":
            # The candidate already waits for a person as a staged version: nothing new was tried.
            return self._decline(task, "; ".join(tried) or outcome["reason"], record_as=ctx.error_type,
                                 strategy=outcome["strategy"])
        if outcome and outcome["outcome"] == "paused":
            # Only the external-call budget stood in the way and nothing was deployed: no attempt is
            # spent (a budget pauses healing, it does not fail it); the task waits until the budget frees up.
            return self._decline(task, "; ".join(tried) or outcome["reason"], release_for=outcome["retry_in"],
                                 record_as=ctx.error_type, strategy="external")

        final = outcome["outcome"] if outcome else "rejected"
        strategy = outcome["strategy"] if outcome else last_rung(tried)
        reason = "; ".join(tried) or "no strategy produced a candidate"
        missing = (outcome or {}).get("missing_fields") or []
        staged = [v["version"] for v in versions.staged(self.conn, name)]
        report = deferred_report(name=name, error_type=ctx.error_type, last_error=ctx.error_message,
                                 attempts=[{"at": p["at"], "strategy": p["strategy"], "outcome": p["outcome"],
                                            "reason": p["reason"]} for p in reversed(previous)] +
                                          [{"at": iso(time.time()), "strategy": strategy, "outcome": final, "reason": reason}],
                                 tried=tried, missing_fields=missing, staged_versions=staged,
                                 external_configured=bool(self.config.healer.url),
                                 blueprint=self._suggested or ctx.blueprint,
                                 proposal=(outcome or {}).get("proposal"))
        self.registry.write(Ledger.record_fix, name=name, error_type=ctx.error_type, strategy=strategy, outcome=final,
                            reason=reason, context=diag, patch=(outcome or {}).get("patch"),
                            validation=(outcome or {}).get("validation"),
                            deployed_to="STAGING" if final == "staged" else "FAILED",
                            version=(outcome or {}).get("version"), fingerprint=fingerprint, duration_ms=duration_ms,
                            deferred_report=report, data_gone=missing if final in breakers.FAILED_OUTCOMES else None)
        if final == "staged":
            # A person is needed now (to approve). A rejected attempt gets its report only when it
            # spends the budget (record_fix stores it with the quarantine): until then healing goes on.
            self.registry.write(Ledger.set_deferred_report, name, report)
        self.registry.write(Ledger.complete_task, task.task_id, {"outcome": final})
        log.warning("fix attempt %s: strategy=%s duration=%.0fms outcome=%s reason=%s",
                    name, strategy, duration_ms, final, reason)
        return self._result(name, final, reason, strategy, (outcome or {}).get("version"))

    # -- diagnosis -------------------------------------------------------------------
    def diagnose(self, name: str, src: dict) -> tuple[DiagnosisContext | None, str | None]:
        """The diagnosis context: pages, diff, output, errors, counters."""
        version, bp = versions.production(self.conn, name)
        good = snapshots.get(self.conn, name, snapshots.LAST_GOOD)
        status = None
        permanent_redirect = None
        try:
            page = self.fetcher.fetch(src["url"], headers=bp.headers or None, cookies=bp.cookies or None,
                                      via=bp.fetch, wait_for=bp.wait_for)
            html, status, permanent_redirect = page.text, page.status, page.permanent_redirect
        except FetchError as exc:
            kind, why = route(exc.error_type, exc.status, None)
            if kind == DECLINE:
                return None, f"the page cannot be fetched ({exc.error_type}: {exc.message}); {why}"
            ctx = self._context(name, src, bp, version, good, "", exc.error_type, exc.message, [], "")
            ctx.actual_output = {"status": exc.status}
            return ctx, None
        try:
            ex = self.run_parser(bp, html, page_limits(self.config))
        except PageTooLarge as exc:
            return None, f"the page passes a work bound ({exc}); {route(errors.TOO_LARGE)[1]}"
        except TooSlow as exc:   # production's own selectors: a scrape of this page is a TIMEOUT, not a repair
            return None, f"the production parser is {exc}: healing cannot help (a scrape of it fails as TIMEOUT)"
        except Exception as exc:
            ctx = self._context(name, src, bp, version, good, html, errors.PARSE_ERROR,
                                f"the parser failed: {getattr(exc, 'reason', None) or exc}", [], "")
            return ctx, None
        counts = json.loads(src["item_counts"] or "[]")
        result = validate(ex, bp, recent_counts=counts, last_good=good["records"] if good else None, html=html,
                          status=status or 200)
        drift = _drift(bp, good, html, ex.data, self.bounded) if result.passed else None
        if drift:
            ctx = self._context(name, src, bp, version, good, html, errors.SCHEMA_MISMATCH, drift, [drift],
                                result.report())
            ctx.validation_errors = [drift]
        elif result.passed:
            ctx = self._context(name, src, bp, version, good, html, None, "", [], result.report())
        else:
            ctx = self._context(name, src, bp, version, good, html, result.error_type, "; ".join(result.errors[:5]),
                                list(result.errors), result.report())
            ctx.validation_errors = list(result.errors)
        ctx.actual_output = ex.data
        ctx.error_traceback = ""
        if permanent_redirect:
            ctx.actual_output = {"permanent_redirect": permanent_redirect, "data": ex.data}
        self._failed_fields = list(result.failed_fields)
        return ctx, None

    def _failing_layout(self, name: str, src: dict, live: DiagnosisContext) -> DiagnosisContext:
        """The live page passes, yet the scrape that failed in this episode kept its page: when the
        production parser still fails on that page, the site serves two layouts at once. Heal for
        the failing one (the Deployer merges the candidate with production when the live page
        shows the other)."""
        if not src["failing_since"] or src["state"] != "DEGRADED":
            return live
        failing = snapshots.get(self.conn, name, snapshots.CURRENT)
        if failing is None or failing["fetched_at"] < src["failing_since"]:
            return live
        version, bp = versions.production(self.conn, name)
        good = snapshots.get(self.conn, name, snapshots.LAST_GOOD)
        ctx = self._judge_page(name, src, bp, version, good, failing["html"], failing["status_code"] or 200)
        if ctx.error_type is None:
            return live
        log.info("%s: the live page passes but the failing page of this episode still fails: "
                 "healing for that layout", name)
        return ctx

    def _judge_page(self, name, src, bp: Blueprint, version, good, html: str, status: int) -> DiagnosisContext:
        try:
            ex = self.run_parser(bp, html)
        except Exception as exc:
            return self._context(name, src, bp, version, good, html, errors.PARSE_ERROR,
                                 f"the parser failed: {getattr(exc, 'reason', None) or exc}", [], "")
        counts = json.loads(src["item_counts"] or "[]")
        result = validate(ex, bp, recent_counts=counts, last_good=good["records"] if good else None, html=html,
                          status=status)
        drift = _drift(bp, good, html, ex.data, self.bounded) if result.passed else None
        if drift:
            ctx = self._context(name, src, bp, version, good, html, errors.SCHEMA_MISMATCH, drift, [drift],
                                result.report())
        elif result.passed:
            ctx = self._context(name, src, bp, version, good, html, None, "", [], result.report())
        else:
            ctx = self._context(name, src, bp, version, good, html, result.error_type, "; ".join(result.errors[:5]),
                                list(result.errors), result.report())
        ctx.actual_output = ex.data
        ctx.error_traceback = ""
        self._failed_fields = list(result.failed_fields)
        return ctx

    def _context(self, name, src, bp: Blueprint, version, good, html, error_type, message, verrors, report):
        self._failed_fields = []
        return DiagnosisContext(
            source_name=name, url=src["url"], blueprint=bp, version=version, error_type=error_type,
            error_message=message, error_traceback="".join(traceback.format_stack(limit=0)),
            failure_count=src["failure_count"], last_success_at=src["last_success_at"],
            original_html=good["html"] if good else None, current_html=html,
            html_diff=structural_diff(good["html"] if good else None, html) if html else "",
            expected_schema={k: f.type for k, f in bp.fields.items()},
            last_good_records=good["records"] if good else None,
            validation_errors=verrors, validation_report=report,
            fix_attempts_today=src["fix_attempts_today"], is_quarantined=src["state"] == "QUARANTINED",
        )

    # -- the selector ladder -----------------------------------------------------------
    def _deploy(self, name: str, candidate: Blueprint, origin: str, note: str,
                confidence: float | None = None) -> dict:
        res = self.registry.get("deployer").ask(Deploy(name, candidate.to_json(), origin, note,
                                                       page_html=self._page_html, confidence=confidence),
                                                timeout=300)
        if res.get("version") is not None and res["outcome"] != "declined":
            self._deployed += 1   # a version was staged for it: this attempt did deploy something
        return res

    def _already_rejected(self, name: str, candidate: Blueprint, since: float | None) -> bool:
        """The same candidate already failed in this failure episode (a page seen earlier is another story).

        A version rejected because a restart cut its deploy short, or because the live page could
        not be fetched to validate it, was never judged: it does not count."""
        return row(self.conn, "SELECT 1 AS x FROM parser_versions WHERE source_name = ? AND status = 'rejected' "
                              "AND body = ? AND created_at >= ? AND note != ? AND substr(note, 1, ?) != ?",
                   (name, candidate.to_json(), since or 0.0, versions.INTERRUPTED, len(UNFETCHED),
                    UNFETCHED)) is not None

    def _stage_best_guess(self, ctx: DiagnosisContext, tried: list[str]) -> dict | None:
        """Nothing healed: the built-in healer's best guess of an ambiguous refusal, if it made one, is
        staged (confidence 0: the judge never promotes it) for a person to approve in one command."""
        if self._best_guess is None:
            return None
        candidate, refusal = self._best_guess
        self._best_guess = None
        if self._already_rejected(ctx.source_name, candidate, self._episode_start):
            return None
        res = self._deploy(ctx.source_name, candidate, "builtin", f"best guess of a refusal: {refusal}"[:500], 0.0)
        tried.append(f"builtin: best guess {res['outcome']}: {res['reason']}")
        if res["outcome"] not in ("staged", "declined") or res.get("version") is None:
            return None
        try:
            would = self.run_parser(candidate, ctx.current_html).data
        except Exception:
            would = None
        shown = proposal(ctx.source_name, res["version"], would, ctx.last_good_records, list(candidate.fields))
        shown["values"] = [mask_text(v) for v in shown["values"]]
        return {"outcome": res["outcome"], "strategy": "builtin", "version": res["version"], "proposal": shown,
                "reason": f"refused ({refusal}); its best guess awaits `{shown['approve']}`",
                "validation": res.get("validation"), "patch": candidate.to_json()}

    def selector_ladder(self, ctx: DiagnosisContext, tried: list[str]) -> dict | None:
        failed_fields = self._failed_fields
        host = sources.host_of(ctx.url)
        diff_sig = diff_signature(ctx.html_diff) if ctx.html_diff else ""
        tmpl = template_signature(ctx.current_html) if ctx.current_html else ""
        broken = broken_selectors(ctx.blueprint, failed_fields)
        missing: list[str] = []
        last = None
        self._best_guess = None
        for rung in self.config.doctor.ladder:
            if rung == "memory":
                got = self._memory_rung(ctx, tried, host=host, diff_sig=diff_sig, tmpl=tmpl, broken=broken)
            elif rung == "builtin":
                got = self._builtin_rung(ctx, tried, missing)
            elif rung == "external":
                got = self._external_rung(ctx, tried)
            else:
                continue
            if got is None:
                continue
            last = got
            if got["outcome"] == "promoted":
                if rung != "memory":
                    self._remember(ctx, got, host=host, diff_sig=diff_sig, tmpl=tmpl, broken=broken)
                return got
            if got["outcome"] in ("staged", "declined", "paused"):
                return got   # held for a person, already held, or waiting for the external budget
        guess = self._stage_best_guess(ctx, tried)
        if guess is not None:
            return guess
        if last is not None:
            last = dict(last)
            last["outcome"] = "rejected" if last["outcome"] not in ("error",) else "error"
        else:
            last = {"outcome": "rejected", "strategy": last_rung(tried),
                    "reason": "; ".join(tried), "version": None}
        last["missing_fields"] = missing
        return last

    def _memory_rung(self, ctx, tried, *, host, diff_sig, tmpl, broken) -> dict | None:
        from healerd.store.memory import apply_bundle

        name = ctx.source_name
        try:
            matches = self.registry.write(Ledger.memory, FixMemory.search, error_type=ctx.error_type, host=host,
                                          broken_selectors=broken, diff_sig=diff_sig, template_sig=tmpl,
                                          source_name=name)
        except Exception as exc:
            tried.append(f"memory: search failed ({exc})")
            return None
        if not matches:
            tried.append("memory: no known fix for this change")
            return None
        for m in matches:
            try:
                # Retrieving the bundle is its own usage event (the `retrieved` statistic).
                bundle = self.registry.write(Ledger.memory, FixMemory.get_fix_bundle, issue_id=m.issue_id,
                                             source_name=name)["fix_bundle"]
            except Exception as exc:   # forgotten since the search
                tried.append(f"memory: issue {m.issue_id} could not be retrieved ({exc})")
                continue
            # A selector mapping on this source's selectors, or a parser bundle's code on this
            # source's blueprint (only once the sandbox's static check accepts it).
            candidate = apply_bundle(ctx.blueprint, bundle)
            if candidate is None:
                continue
            self.registry.write(Ledger.memory, FixMemory.record_usage, event_type="fix_applied", issue_id=m.issue_id,
                                source_name=name)
            res = self._deploy(name, candidate, "memory", f"fix memory issue {m.issue_id}")
            success = res["outcome"] == "promoted"
            # Only a verdict on the page says something about the bundle: a staged (or already
            # staged) candidate is still pending, and a page that could not be fetched judged nothing.
            # A failure would lower its confidence and keep it from this source for good.
            if success or (res["outcome"] == "rejected" and res.get("conclusive", True)):
                self.registry.write(Ledger.memory, FixMemory.confirm, issue_id=m.issue_id, source_name=name, success=success,
                                    notes=res["reason"][:500])
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

    def _builtin_rung(self, ctx: DiagnosisContext, tried: list[str], missing: list[str]) -> dict | None:
        if ctx.blueprint.parser:
            tried.append("builtin: the source has a code parser; the built-in healer repairs selectors only")
            return None
        if not ctx.original_html or ctx.last_good_records is None:
            tried.append("builtin: no last good page to learn from")
            return None
        try:
            # The search evaluates selectors on both pages: in the trial worker, with its deadline.
            result = self._heal(ctx)
        except TooSlow as exc:
            tried.append(f"builtin: {exc}")
            return {"outcome": "rejected", "strategy": "builtin", "reason": str(exc), "version": None}
        if not result.ok:
            tried.append(f"builtin: refused: {result.reason}")
            self._best_guess = (result.candidate, result.reason) if result.candidate is not None else None
            gone = self._data_gone(ctx, result.details)
            missing.extend(f for f in gone if f not in missing)
            if gone:
                self._suggested = self._without_gone(ctx, gone)
            return {"outcome": "rejected", "strategy": "builtin", "reason": f"refused: {result.reason}",
                    "version": None}
        if result.unchanged or result.blueprint is None:
            tried.append("builtin: the old selectors still work on the current page")
            return None
        candidate = result.blueprint
        if self._already_rejected(ctx.source_name, candidate, self._episode_start):
            tried.append("builtin: the same candidate was rejected before (not retried)")
            return {"outcome": "rejected", "strategy": "builtin", "reason": "candidate already rejected once",
                    "version": None}
        res = self._deploy(ctx.source_name, candidate, "builtin", result.reason, result.confidence)
        tried.append(f"builtin: {res['outcome']}: {res['reason']}")
        return {"outcome": res["outcome"], "strategy": "builtin", "reason": f"{result.reason} ({res['reason']})",
                "version": res["version"], "validation": res.get("validation"), "patch": candidate.to_json()}

    def _heal(self, ctx: DiagnosisContext):
        """The built-in healer's HealResult: in the trial worker (in this thread only without one)."""
        if self.registry.trials is None:
            from healerd.core.heal.builtin import heal

            return heal(ctx.blueprint, ctx.original_html, ctx.last_good_records, ctx.current_html)
        return self.registry.trials.heal(ctx.blueprint, ctx.original_html or "", ctx.last_good_records,
                                         ctx.current_html or "")

    def _without_gone(self, ctx: DiagnosisContext, gone: list[str]) -> Blueprint | None:
        """The blueprint a person could use now: the gone fields made optional and the others repaired
        for the current page (the built-in healer run again on that blueprint), or None when even that
        does not read the page. Only suggested in the report: making a field optional is a person's call."""
        from healerd.core.blueprint_toml import with_optional

        optional = with_optional(ctx.blueprint, gone)
        try:   # the built-in healer on pages nobody checked: in the trial worker, with its deadline
            again = self.bounded("heal", optional, ctx.original_html or "", ctx.last_good_records or {},
                                 ctx.current_html)
        except Exception:
            log.exception("could not repair the blueprint of %s without its gone fields", ctx.source_name)
            return None
        if not again.ok:
            return None
        return optional if again.unchanged or again.blueprint is None else again.blueprint

    def _data_gone(self, ctx: DiagnosisContext, details: dict | None) -> list[str]:
        """The fields of a refusal whose data is gone from the page (all the fields it names, or none:
        a refusal that also names a field still on the page is a healer's limit)."""
        from healerd.core.heal.data_gone import refused_fields

        refused = refused_fields(details)
        items = (details or {}).get("items")
        if not refused and isinstance(items, dict) and items.get("status") in ("gone", "ambiguous"):
            refused = list(ctx.blueprint.fields)
        if not refused or not ctx.original_html or not ctx.current_html:
            return []
        try:
            gone = self.bounded("gone_fields", ctx.blueprint, ctx.original_html, ctx.current_html, refused)
        except Exception:
            log.exception("could not tell whether the data of %s is gone", ctx.source_name)
            return []
        return gone if set(gone) == set(refused) else []

    def _external_rung(self, ctx: DiagnosisContext, tried: list[str]) -> dict | None:

        from healerd.adapters.external import HealerConfig
        from healerd.adapters.openai_backend import make_client

        hc = self.config.healer
        if not hc.url:
            tried.append("external: not configured")
            return None
        client = make_client(HealerConfig(url=hc.url, token=hc.token, timeouts=tuple(hc.timeouts), kind=hc.kind,
                                          model=hc.model, allowed_user=str(hc.allowed_user)))
        if client is None:
            tried.append("external: not configured")
            return None
        with client:
            return self._external_cycles(client, ctx, tried)

    def _external_cycles(self, client, ctx: DiagnosisContext, tried: list[str]) -> dict | None:
        hc = self.config.healer
        # This attempt's cycles only: earlier attempts (other strategies, other episodes) travel
        # as previous_attempts with their strategy, not relabelled as cycles they never were.
        history: list[dict] = []
        seen: set[str] = set()   # the candidates deployed in this attempt
        last = None
        cycles = min(hc.cycles, len(hc.timeouts))
        for cycle in range(1, cycles + 1):
            budget = self._budget_exhausted(ctx.source_name)
            if budget:
                blocked, last_call, frees_at = budget
                if self._pause_not_yet_alerted(ctx.source_name, last_call):
                    self.registry.tell("alerter", Alert("BUDGET_PAUSED", ctx.source_name, blocked, "warning",
                                                        {"cycle": cycle, "resumes_at": iso(frees_at)}, None))
                tried.append(f"external: paused: {blocked}")
                if cycle == 1 and not self._deployed:
                    return {"outcome": "paused", "strategy": "external", "reason": blocked, "version": None,
                            "retry_in": max(60.0, frees_at - time.time())}
                break
            started = time.time()
            res = client.heal_cycle(ctx, cycle, history)
            self.registry.write(Ledger.record_healer_call, name=ctx.source_name, cycle=cycle, backend=hc.kind,
                                started_at=started, duration_ms=res.duration_ms, http_status=res.http_status,
                                outcome=res.outcome, reason=res.reason)
            if res.outcome == "untrusted":
                # Nothing was sent: whoever answers there is not trusted with the token and the page.
                # The next cycle would meet the same listener: one line, one alert, no more cycles.
                tried.append(f"external cycle {cycle}: {res.outcome}: {res.reason}")
                log.warning("%s: external healer not called: %s", ctx.source_name, res.reason)
                self.registry.tell("alerter", Alert("HEAL_FAILED", ctx.source_name,
                                                    f"external healer not called: {res.reason}", "error",
                                                    {"cause": "untrusted_healer", "cycle": cycle}, None))
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
            if body in seen or self._already_rejected(ctx.source_name, candidate, self._episode_start):
                # The healer answers what it answered before: staging it again would only make another
                # rejected version, and calling again would spend the daily budget on the same answer.
                tried.append(f"external cycle {cycle}: the same candidate as a rejected one (not deployed again); "
                             f"no further calls")
                break
            seen.add(body)
            dep = self._deploy(ctx.source_name, candidate, "external", res.changes_summary or f"cycle {cycle}")
            tried.append(f"external cycle {cycle}: {dep['outcome']}: {dep['reason']}")
            last = {"outcome": dep["outcome"], "strategy": "external", "reason": dep["reason"],
                    "version": dep["version"], "validation": dep.get("validation"), "patch": candidate.to_json()}
            if dep["outcome"] in ("promoted", "staged", "declined"):
                return last
            history.append({"cycle": cycle, "outcome": "rejected", "reason": dep["reason"],
                            "changes_summary": res.changes_summary})
        return last

    def _budget_exhausted(self, name: str) -> tuple[str, float, float] | None:
        """(why, the newest counted call, when a call leaves the 24 h window) when a daily budget is spent."""
        since = time.time() - 86400
        per_source = row(self.conn, "SELECT count(*) AS n, min(started_at) AS first, max(started_at) AS last "
                                    "FROM healer_calls WHERE source_name = ? AND started_at > ?", (name, since))
        if per_source["n"] >= self.config.healer.daily_budget_per_source:
            return (f"the daily budget of external healer calls for {name} is spent ({per_source['n']})",
                    per_source["last"] or 0.0, (per_source["first"] or since) + 86400)
        total = row(self.conn, "SELECT count(*) AS n, min(started_at) AS first, max(started_at) AS last "
                               "FROM healer_calls WHERE started_at > ?", (since,))
        if total["n"] >= self.config.healer.daily_budget_total:
            return (f"the daily budget of external healer calls is spent ({total['n']} in 24h)",
                    total["last"] or 0.0, (total["first"] or since) + 86400)
        return None

    def _pause_not_yet_alerted(self, name: str, last_call: float) -> bool:
        """One BUDGET_PAUSED per pause: none was raised for `name` since the newest counted call."""
        sent = scalar(self.conn, "SELECT max(ts) FROM alerts WHERE source = ? AND event = 'BUDGET_PAUSED'", (name,))
        return sent is None or sent < last_call

    def _remember(self, ctx: DiagnosisContext, got: dict, *, host, diff_sig, tmpl, broken) -> None:
        """Store a promoted fix in the fix memory: the new code parser when the fix brought one
        (a healer's parser.py), else the selector mapping from the old blueprint to the new."""
        from healerd.adapters.external import secret_literals
        from healerd.core.blueprint import from_json
        from healerd.store.memory import make_parser_bundle, make_selector_bundle

        try:
            new = from_json(got["patch"])
            bundle = make_parser_bundle(ctx.blueprint, new)
            if bundle is not None:
                title = f"{host}: parser for {', '.join(bundle['fields'])} replaced"
            else:
                bundle = make_selector_bundle(ctx.blueprint, new)
                if not bundle.get("fields") and not bundle.get("items"):
                    return
                changed = ", ".join(sorted(bundle.get("fields", {}))) or "items"
                title = f"{host}: selectors for {changed} changed"
            res = self.registry.write(Ledger.memory, FixMemory.submit, error_type=ctx.error_type, host=host, diff_sig=diff_sig,
                                      template_sig=tmpl, broken_selectors=broken, fix_bundle=bundle,
                                      source_name=ctx.source_name, title=title,
                                      extra_secrets=list(secret_literals(ctx.blueprint, ctx.url)),
                                      root_cause="the site's markup changed (structural diff signature "
                                                 f"{diff_sig or 'n/a'})")
            if isinstance(res, dict) and res.get("status") == "rejected":
                log.info("the fix for %s was not stored in the fix memory: %s", ctx.source_name,
                         res.get("details") or res.get("reason"))
        except Exception:
            log.exception("could not store the fix for %s in the fix memory", ctx.source_name)

    # -- HTTP_ERROR: the page moved -------------------------------------------------------
    def relocate(self, ctx: DiagnosisContext, tried: list[str]) -> dict | None:
        from urllib.parse import urlsplit

        name = ctx.source_name
        parts = urlsplit(ctx.url)
        root = f"{parts.scheme}://{parts.netloc}/"
        redirect = None
        if isinstance(ctx.actual_output, dict):
            redirect = ctx.actual_output.get("permanent_redirect")
        candidates: list[str] = []
        if redirect and urlsplit(redirect).hostname == parts.hostname:
            candidates.append(redirect)
        sitemap = None
        pages: list[tuple[str, str]] = []
        try:
            status, text = self.fetcher.get_text(root + "sitemap.xml")
            sitemap = text if status == 200 else None
        except FetchError:
            pass
        try:
            home = self.fetcher.fetch(root)
            pages.append((home.url, home.text))
        except FetchError:
            pass
        if ctx.original_html:
            pages.append((ctx.url, ctx.original_html))
        for u in relocation_candidates(ctx.url, sitemap, pages):
            if u not in candidates:
                candidates.append(u)
        if not candidates:
            tried.append("relocate: no candidate URL on the same site (sitemap.xml, links)")
            return None
        self._page_html = None   # a candidate for another address: no layout to merge with
        for url in candidates[:15]:
            try:
                page = self.fetcher.fetch(url)
                ex = self.run_parser(ctx.blueprint, page.text, page_limits(self.config))
            except Exception:
                continue
            result = validate(ex, ctx.blueprint, last_good=ctx.last_good_records, html=page.text, status=page.status)
            if not result.passed:
                continue
            alike, why = resembles_last_good(ex.data, ctx.last_good_records)
            if not alike:
                tried.append(f"relocate: {url}: not like the last good records ({why})")
                continue
            candidate = ctx.blueprint.with_url(url)
            res = self._deploy(name, candidate, "builtin", f"{RELOCATED_NOTE}{url}")
            tried.append(f"relocate: {url}: {res['outcome']}: {res['reason']}")
            if res["outcome"] in ("promoted", "staged", "declined"):
                return {"outcome": res["outcome"], "strategy": "relocate", "reason": f"page moved to {url}",
                        "version": res["version"], "validation": res.get("validation"), "patch": candidate.to_json()}
        tried.append(f"relocate: none of {len(candidates)} same-site URLs yields the expected data")
        return None


def one_line(exc: BaseException) -> str:
    """An exception as one masked line: its type and message."""
    text = " ".join(str(exc).split()) or "no message"
    return mask_text(f"{type(exc).__name__}: {text}")[:500]


def ctx_status(ctx: DiagnosisContext) -> int | None:
    if isinstance(ctx.actual_output, dict):
        s = ctx.actual_output.get("status")
        if isinstance(s, int):
            return s
        if ctx.actual_output.get("permanent_redirect"):
            return 301
    return None


def _drift(bp: Blueprint, good: dict | None, html: str, data, bounded) -> str | None:
    """The Validator's drift check on the page the Doctor diagnoses: a page that passes validation
    but whose records left the last good ones' place is not "nothing to heal". `bounded` runs it
    (ServiceActor.bounded: in the trial worker, with its deadline)."""
    if not good:
        return None
    try:
        reason = bounded("page_drift", bp, good.get("html"), good.get("records"), html, data)
    except Exception:
        log.exception("drift check failed")
        return None
    return f"drift: {reason}" if reason else None
