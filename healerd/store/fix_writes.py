"""The Ledger's writes of healing work: the fix task queue, and each fix attempt (its masked
history row, the attempt budget, quarantine when it is spent)."""

from __future__ import annotations

import json

from healerd.core import breakers
from healerd.core.timeutil import iso
from healerd.store import fixes, probation, sources, tasks
from healerd.store.health_writes import HealthWrites, human_duration
from healerd.store.lifecycle import QUARANTINED
from healerd.store.outcomes import Effects
from healerd.store.sql import row, scalar


class FixWrites(HealthWrites):
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
                spent = breakers.spent_phrase(failed, human_duration(self.config.doctor.attempt_window))
                if data_gone:
                    spent = breakers.data_gone_phrase(failed, human_duration(self.config.doctor.attempt_window),
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
