"""The healing ladder: one fix attempt of one source, decided here, its I/O done by its ports.

    breakers (removed, quarantined, disabled, halt, never scraped, attempt budget)
    -> diagnosis context (the live page, or the failing page of this episode)
    -> route by error class -> the rungs `[doctor] ladder` (memory -> builtin -> external), or
       relocation for a page that moved -> the best guess of a refusal when nothing healed
    -> one fix_history row, one log line, the task completed, released or failed

`HealingLadder.treat` returns the attempt's result ({"name", "outcome", "strategy", "reason",
"version", "state"}): what `healerctl heal` prints.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from healerd.core import breakers
from healerd.core.diagnosis import DiagnosisContext
from healerd.core.htmldiff import diff_signature, template_signature
from healerd.core.ladder.diagnose import diagnose, failing_layout, status_of
from healerd.core.ladder.ports import Attempt, LadderPorts, LadderSettings
from healerd.core.ladder.rungs import Rungs
from healerd.core.routing import (
    DECLINE,
    RELOCATE,
    SELECTORS,
    broken_selectors,
    deferred_report,
    recovery_context,
    route,
)
from healerd.core.sanitize import mask_text
from healerd.core.timeutil import iso

log = logging.getLogger("healerd.doctor")

DIFF_KEPT_LINES = 200   # of the structural diff, kept with each fix attempt for `healerctl diff`
HALT_RETRY_S = 30.0     # a task declined by the systemic halt is offered again after this long


def rung_of(tried_entry: str) -> str:
    """The rung a `tried` line is about: "external cycle 2: timeout: ..." -> "external"."""
    return (tried_entry.split(":", 1)[0].split() or ["none"])[0]


def last_rung(tried: list[str]) -> str:
    """The last rung that ran: a rung that is not configured tried nothing and names no attempt."""
    ran = [t for t in tried if not t.rstrip().endswith(": not configured")]
    return rung_of(ran[-1]) if ran else "none"


def one_line(exc: BaseException) -> str:
    """An exception as one masked line: its type and message."""
    text = " ".join(str(exc).split()) or "no message"
    return mask_text(f"{type(exc).__name__}: {text}")[:500]


def host_of(url: str) -> str:
    from urllib.parse import urlsplit

    return (urlsplit(url).hostname or "").lower()


class HealingLadder:
    def __init__(self, ports: LadderPorts, settings: LadderSettings):
        self.ports = ports
        self.settings = settings
        self.rungs = Rungs(ports, settings)

    # -- results --------------------------------------------------------------------------------
    def _result(self, name: str, outcome: str, reason: str, strategy: str | None = None,
                version: int | None = None) -> dict:
        return {"name": name, "outcome": outcome, "strategy": strategy, "reason": reason, "version": version,
                "state": self.ports.reads.state(name)}

    def _decline(self, name: str, task_id: int, reason: str, *, release_for: float | None = None,
                 record_as: str | None = None, strategy: str = "none") -> dict:
        out = self.ports.outcomes
        if release_for is not None:
            out.release_task(task_id, self.ports.clock() + release_for)
        else:
            out.complete_task(task_id, {"outcome": "declined", "reason": reason})
        if record_as:
            out.record_fix(name=name, error_type=record_as, strategy=strategy, outcome="declined", reason=reason)
        log.info("fix of %s declined: %s", name, reason)
        return self._result(name, "declined", reason)

    def crashed(self, name: str, task_id: int, context: Mapping[str, Any], exc: BaseException) -> dict:
        """The attempt raised: the task failed, and an `error` row counted against the budget, so a
        Doctor that fails the same way every time ends in QUARANTINED rather than looping."""
        reason = f"internal error: {one_line(exc)}"
        try:
            self.ports.outcomes.fail_task(task_id, reason)
        except Exception:
            log.exception("could not record the failed task %s", task_id)
        try:
            error_type = context.get("error_type") or self.ports.reads.last_error_type(name)
            self.ports.outcomes.record_fix(name=name, error_type=error_type or "UNKNOWN", strategy="none",
                                           outcome="error", reason=reason, deployed_to="FAILED",
                                           fingerprint=context.get("fingerprint"))
            log.warning("fix attempt %s: strategy=none outcome=error reason=%s", name, reason)
        except Exception:
            log.exception("could not record the failed fix attempt of %s", name)
        return {"name": name, "outcome": "error", "strategy": None, "reason": reason, "version": None, "state": None}

    # -- one attempt ----------------------------------------------------------------------------
    def treat(self, name: str, task_id: int, context: Mapping[str, Any]) -> dict:
        reads, out, s = self.ports.reads, self.ports.outcomes, self.settings
        started = self.ports.clock()
        src = reads.source(name)
        if src is None:
            out.complete_task(task_id, {"outcome": "declined", "reason": "source removed"})
            return {"name": name, "outcome": "declined", "strategy": None, "reason": "no such source",
                    "version": None, "state": None}
        if src["state"] in ("QUARANTINED", "DEAD"):
            return self._decline(name, task_id, f"{name} is {src['state']}: `healerctl unquarantine {name}` first")
        if not s.enabled:
            return self._decline(name, task_id, "healing is disabled ([doctor] enabled = false)")
        halt = reads.halt()
        if halt is not None:
            reason = halt.get("reason", "systemic halt")
            return self._decline(name, task_id, f"healing is halted everywhere (SYSTEMIC_HALT: {reason}); "
                                                f"`healerctl resume-healing` to resume", release_for=HALT_RETRY_S)
        if not breakers.has_good_past(src["success_count"]):
            # No scrape ever passed: nothing to heal or relocate towards, and no attempt is spent.
            return self._decline(name, task_id, f"{name} was {breakers.NEVER_SCRAPED}")
        budget = breakers.attempt_budget(s.max_fix_attempts, src["retry_only"])
        failed = reads.failed_attempts(name, s.attempt_window, src["attempts_since"])
        if breakers.budget_spent(failed, budget):
            return self._decline(name, task_id, f"the attempt budget is spent: {failed} of {budget} failed "
                                                f"attempts allowed in the window")

        att = Attempt(name)
        ctx, page_error = diagnose(self.ports, s, att, src)
        if ctx is None:
            return self._decline(name, task_id, page_error or "could not diagnose")
        if ctx.error_type is None:
            ctx = failing_layout(self.ports, att, src, ctx)
        att.page_html = ctx.current_html or None
        strategy_kind, why = route(ctx.error_type, status_of(ctx), None)
        if ctx.error_type is None:
            out.complete_task(task_id, {"outcome": "unchanged"})
            out.schedule_now(name)
            return self._result(name, "unchanged", "the production parser passes on the current page: nothing to heal")
        if strategy_kind == DECLINE:
            return self._decline(name, task_id, why)

        att.episode_start = src["failing_since"]
        previous = reads.recent_attempts(name, src["failing_since"] - 1 if src["failing_since"] else None)
        ctx.previous_attempts = recovery_context(previous)["previous_attempts"]
        outcome = None
        if strategy_kind == SELECTORS:
            outcome = self.selector_ladder(ctx, att)
        elif strategy_kind == RELOCATE:
            outcome = self.rungs.relocate(ctx, att)
        return self._conclude(name, task_id, context, src, ctx, att, outcome, previous, started)

    def _conclude(self, name: str, task_id: int, context: Mapping[str, Any], src: dict, ctx: DiagnosisContext,
                  att: Attempt, outcome: dict | None, previous: list[dict], started: float) -> dict:
        """The attempt's outcome recorded: fix_history, the task, the deferred report, one log line."""
        out, tried = self.ports.outcomes, att.tried
        now = self.ports.clock()
        duration_ms = (now - started) * 1000
        fingerprint = context.get("fingerprint") or src["last_fingerprint"]
        diag = {"error_type": ctx.error_type, "error_message": mask_text(ctx.error_message),
                "failure_count": ctx.failure_count, "fix_attempts_today": ctx.fix_attempts_today,
                "validation_errors": ctx.validation_errors[:10], "diff_lines": ctx.html_diff.count("\n"),
                "html_diff": mask_text("\n".join(ctx.html_diff.splitlines()[:DIFF_KEPT_LINES])),
                "previous_attempts": len(ctx.previous_attempts), "version": ctx.version}
        if outcome and outcome["outcome"] == "promoted":
            reason = f"{outcome['strategy']}: {outcome['reason']}"
            out.record_fix(name=name, error_type=ctx.error_type, strategy=outcome["strategy"], outcome="promoted",
                           reason=reason, context=diag, patch=outcome.get("patch"),
                           validation=outcome.get("validation"), deployed_to="PRODUCTION",
                           version=outcome["version"], fingerprint=fingerprint, duration_ms=duration_ms)
            out.complete_task(task_id, {"outcome": "promoted", "version": outcome["version"]})
            # Good news is INFO: WARNING is for what may need a person.
            log.info("fix attempt %s: strategy=%s duration=%.0fms outcome=promoted version=%s reason=%s",
                     name, outcome["strategy"], duration_ms, outcome["version"], outcome["reason"])
            return self._result(name, "promoted", reason, outcome["strategy"], outcome["version"])
        if outcome and outcome["outcome"] == "declined":
            # The candidate already waits for a person as a staged version: nothing new was tried.
            return self._decline(name, task_id, "; ".join(tried) or outcome["reason"], record_as=ctx.error_type,
                                 strategy=outcome["strategy"])
        if outcome and outcome["outcome"] == "paused":
            # Only the external-call budget stood in the way and nothing was deployed: no attempt is
            # spent (a budget pauses healing, it does not fail it); the task waits until the budget frees up.
            return self._decline(name, task_id, "; ".join(tried) or outcome["reason"], release_for=outcome["retry_in"],
                                 record_as=ctx.error_type, strategy="external")

        final = outcome["outcome"] if outcome else "rejected"
        strategy = outcome["strategy"] if outcome else last_rung(tried)
        reason = "; ".join(tried) or "no strategy produced a candidate"
        missing = (outcome or {}).get("missing_fields") or []
        report = deferred_report(name=name, error_type=ctx.error_type, last_error=ctx.error_message,
                                 attempts=[{"at": p["at"], "strategy": p["strategy"], "outcome": p["outcome"],
                                            "reason": p["reason"]} for p in reversed(previous)] +
                                          [{"at": iso(now), "strategy": strategy, "outcome": final, "reason": reason}],
                                 tried=tried, missing_fields=missing,
                                 staged_versions=self.ports.reads.staged_versions(name),
                                 external_configured=self.settings.healer_configured,
                                 blueprint=att.suggested or ctx.blueprint,
                                 proposal=(outcome or {}).get("proposal"))
        out.record_fix(name=name, error_type=ctx.error_type, strategy=strategy, outcome=final, reason=reason,
                       context=diag, patch=(outcome or {}).get("patch"), validation=(outcome or {}).get("validation"),
                       deployed_to="STAGING" if final == "staged" else "FAILED",
                       version=(outcome or {}).get("version"), fingerprint=fingerprint, duration_ms=duration_ms,
                       deferred_report=report, data_gone=missing if final in breakers.FAILED_OUTCOMES else None)
        if final == "staged":
            # A person is needed now (to approve). A rejected attempt gets its report only when it
            # spends the budget (record_fix stores it with the quarantine): until then healing goes on.
            out.set_deferred_report(name, report)
        out.complete_task(task_id, {"outcome": final})
        log.warning("fix attempt %s: strategy=%s duration=%.0fms outcome=%s reason=%s",
                    name, strategy, duration_ms, final, reason)
        return self._result(name, final, reason, strategy, (outcome or {}).get("version"))

    # -- the selector rungs ---------------------------------------------------------------------
    def selector_ladder(self, ctx: DiagnosisContext, att: Attempt) -> dict:
        host = host_of(ctx.url)
        diff_sig = diff_signature(ctx.html_diff) if ctx.html_diff else ""
        tmpl = template_signature(ctx.current_html) if ctx.current_html else ""
        broken = broken_selectors(ctx.blueprint, att.failed_fields)
        last = None
        att.best_guess = None
        for rung in self.settings.ladder:
            if rung == "memory":
                got = self.rungs.memory(ctx, att, host=host, diff_sig=diff_sig, tmpl=tmpl, broken=broken)
            elif rung == "builtin":
                got = self.rungs.builtin(ctx, att)
            elif rung == "external":
                got = self.rungs.external(ctx, att)
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
        guess = self.rungs.best_guess(ctx, att)
        if guess is not None:
            return guess
        if last is not None:
            last = dict(last)
            last["outcome"] = "rejected" if last["outcome"] not in ("error",) else "error"
        else:
            last = {"outcome": "rejected", "strategy": last_rung(att.tried), "reason": "; ".join(att.tried),
                    "version": None}
        last["missing_fields"] = att.missing
        return last

    def _remember(self, ctx: DiagnosisContext, got: dict, *, host: str, diff_sig: str, tmpl: str,
                  broken: list[str]) -> None:
        """A promoted fix goes to the fix memory; a failure to store it fails nothing."""
        from healerd.core.blueprint import from_json

        try:
            self.ports.memory.remember(ctx, from_json(got["patch"]), host=host, diff_sig=diff_sig, tmpl=tmpl,
                                       broken=broken)
        except Exception:
            log.exception("could not store the fix for %s in the fix memory", ctx.source_name)
