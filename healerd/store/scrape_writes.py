"""The Ledger's writes of scrape outcomes: records and snapshots, health counters and schedule,
the lifecycle moves a scrape causes, a production version's probation, and the Validator's plan
(rollback or merge) carried out instead of healing. Many outcomes commit as one transaction
(`record_scrapes`, the StoreWriter's group commit)."""

from __future__ import annotations

import json

from healerd.core import breakers, errors
from healerd.core.timeutil import iso
from healerd.store import fixes, probation, records, snapshots, sources, tasks, value_profiles, versions
from healerd.store.lifecycle import ACTIVE, DEAD, DEGRADED
from healerd.store.outcomes import ITEM_COUNT_MEMORY, Effects, ScrapeOutcome
from healerd.store.sql import row, scalar
from healerd.store.version_writes import VersionWrites

HEALABLE_HTTP = (404, 410)


class ScrapeWrites(VersionWrites):
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
        if plan is None or o.version is None or src["current_version"] != o.version \
                or plan.get("action") not in (ROLLBACK, MERGE):
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
            if o.profiles:
                value_profiles.save(self.conn, name, o.profiles, now)
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
            fx.alert("RECOVERED", name, "scrape passes validation again", level="info", state=ACTIVE,
                     details={"recovery_s": round(now - src["failing_since"], 3)} if src["failing_since"] else None)
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
        elif self._healable(o) and state == DEGRADED and fixes.guess_waiting(self.conn, name, o.fingerprint):
            pass   # the best guess for this same failure waits for `healerctl approve`: no new attempt
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
