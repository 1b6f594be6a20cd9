"""The Ledger's writes of parser versions: staging, promotion (the Doctor's and a person's),
rejection, a person's rollback (forced or checked) and approval."""

from __future__ import annotations

import json

from healerd.core.blueprint import Blueprint
from healerd.store import answers, probation, sources, versions
from healerd.store.health_writes import HealthWrites
from healerd.store.lifecycle import DEAD, QUARANTINED
from healerd.store.outcomes import Effects
from healerd.store.sql import row, scalar

FORCED_MARK = "it fails the current page"   # in the audit reason of a forced manual rollback


class VersionWrites(HealthWrites):
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
            # Audited: history shows the version with `"event": "approve", "by": "person"`, and the
            # lifecycle an `approve` event; the origin stays what built it.
            sources.audit(self.conn, name, "approve",
                          f"a person approved version {version} (made by {v['origin']})", self.clock())
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

    def reject_interrupted_versions(self) -> list[tuple[str, int]]:
        """Start-up: staging versions a crash left unjudged are rejected (never approvable by mistake)."""
        return versions.reject_orphans(self.conn)
