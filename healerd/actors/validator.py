"""Validator: judge each scraped page and hand the outcome to the StoreWriter.

It keeps, per source, the item counts of recent good scrapes and what validation
needs of the last good records (`validate.last_good_sample`: a value of each
field's usual shape, not the whole record set), loaded once from SQLite, then kept
current from the outcomes it sees, so validation costs no database read per scrape
and the cache stays small however many sources there are.
"""

from __future__ import annotations

import json
import logging
import time

from healerd.actors.base import ServiceActor
from healerd.actors.messages import ExtractedPage, ForgetHistory, ScrapeDone
from healerd.actors.registry import ActorRegistry
from healerd.actors.scraper import cached_blueprint
from healerd.config import Config
from healerd.core import errors
from healerd.core.classify import failure_fingerprint
from healerd.core.drift import placeholder_suspect, shift_suspect
from healerd.core.validate import last_good_sample, validate
from healerd.core.value_profile import Departure
from healerd.store import snapshots, sources, value_profiles
from healerd.store.ledger import Ledger
from healerd.store.outcomes import ITEM_COUNT_MEMORY, ScrapeOutcome

log = logging.getLogger("healerd.validator")


def judge(page: ExtractedPage, recent_counts: list[int], last_good) -> ScrapeOutcome:
    """The pure part: an ExtractedPage and the source's history -> a ScrapeOutcome."""
    job = page.job
    base = dict(name=job.name, url=job.url, started_at=page.started_at, finished_at=page.finished_at,
                version=job.version, status=page.status, page_sha=page.page_sha, snapshot_z=page.snapshot_z,
                # The page text rides on to the StoreWriter only when it still has to be compressed there.
                html=page.html if page.snapshot_z is None else None,
                etag=page.etag, last_modified=page.last_modified, permanent_redirect=page.permanent_redirect,
                request_id=job.request_id)
    if page.error_type:
        detail = page.error or ""
        return ScrapeOutcome(ok=False, error_type=page.error_type, error=page.error, retry_after=page.retry_after,
                             dns_failure=page.dns_failure,
                             fingerprint=failure_fingerprint(page.error_type, job.host, f"{page.status} {detail}"),
                             **base)
    if page.not_modified:
        return ScrapeOutcome(ok=True, not_modified=True, **base)
    bp = cached_blueprint(job.blueprint_json)
    result = validate(page.extraction, bp, recent_counts=recent_counts, last_good=last_good, html=page.page_text,
                      status=page.status or 200)
    data = page.extraction.data
    if result.passed:
        return ScrapeOutcome(ok=True, data=data, item_count=result.item_count, **base)
    detail = ",".join(sorted(result.failed_fields)) or "; ".join(result.errors[:2])
    return ScrapeOutcome(ok=False, error_type=result.error_type, error="; ".join(result.errors[:5]), data=data,
                         item_count=result.item_count,
                         fingerprint=failure_fingerprint(result.error_type, job.host, detail), **base)


def drifted(outcome: ScrapeOutcome, reason: str, host: str) -> ScrapeOutcome:
    """A scrape that passed validation but whose records are not where the last good ones were:
    a breakage (SCHEMA_MISMATCH with the reason), so no record is stored and the Doctor is called."""
    outcome.ok = False
    outcome.error_type = errors.SCHEMA_MISMATCH
    outcome.error = f"drift: {reason}"
    outcome.fingerprint = failure_fingerprint(errors.SCHEMA_MISMATCH, host, "drift " + reason.split(":")[0])
    return outcome


def refused_values(outcome: ScrapeOutcome, gone: list[Departure], host: str, wall: bool) -> ScrapeOutcome:
    """A scrape that passed validation but whose values left their profile: not data. Behind a
    wall (the selectors still find the nodes, which show a placeholder) it is BLOCKED — no fix
    can help, the source backs off as for a login wall and recovers when the values return;
    otherwise SCHEMA_MISMATCH, healed like any breakage. Nothing is stored either way."""
    reasons = "; ".join(d.reason for d in gone)
    outcome.ok = False
    if wall:
        outcome.error_type = errors.BLOCKED
        outcome.error = f"Blocked: a field behind a wall (the selectors still find the node): {reasons}"
    else:
        outcome.error_type = errors.SCHEMA_MISMATCH
        outcome.error = reasons
    outcome.fingerprint = failure_fingerprint(outcome.error_type, host,
                                              "value profile " + ",".join(sorted(d.field for d in gone)))
    return outcome


FORGOTTEN = -1
PROFILE_VALUES = 500   # values of a field per scrape the profile judges and learns from   # a version no source has: the next page sets the baseline (see Validator._drift)


class Validator(ServiceActor):
    def __init__(self, db_path: str, config: Config, registry: ActorRegistry):
        super().__init__(db_path, config, registry)
        self.history: dict[str, tuple[list[int], object]] = {}
        # Per source: (production version, locus of its last good page) — see healerd.core.drift.
        self.loci: dict[str, tuple[int | None, str]] = {}
        # Per source: field -> value profile (healerd.core.value_profile), loaded once from SQLite.
        self.profiles: dict[str, dict[str, dict]] = {}

    def _drift(self, page: ExtractedPage, suspect: bool) -> str | None:
        """Why a passing scrape's records are not where the last good ones were, or None. Only a
        page whose bytes changed has a locus; only one whose locus changed, or that shows a
        placeholder where the last good value had a shape (`suspect`), is checked."""
        job = page.job
        known = self.loci.get(job.name)
        if known is not None and known[0] != job.version:
            # A new production version: the Deployer proved it on the live page, whose structure
            # becomes its baseline (the last good page was judged by the previous version).
            self.loci[job.name] = (job.version, page.locus or "")
            return None
        good = None
        if known is None:
            good = snapshots.get(self.conn, job.name, snapshots.LAST_GOOD)
            if good is None or not good["html"] or not good["records"]:
                self.loci[job.name] = (job.version, page.locus or "")
                return None
            bp = cached_blueprint(job.blueprint_json)
            # the production selectors on the last good page, in the trial worker with its deadline
            known = self.loci[job.name] = (job.version, self.bounded("page_locus", good["html"], bp))
        if known[1] == page.locus and not suspect:
            return None
        good = good or snapshots.get(self.conn, job.name, snapshots.LAST_GOOD)
        html = page.page_text()
        if good is None or not good["html"] or not good["records"] or html is None:
            return None
        reason = self.bounded("drift_reason", cached_blueprint(job.blueprint_json), good["html"], good["records"],
                              html, page.extraction.data)
        if reason is None:   # this page becomes the last good one
            self.loci[job.name] = (job.version, page.locus or "")
        return reason

    def _profile(self, page: ExtractedPage, outcome: ScrapeOutcome) -> tuple[ScrapeOutcome, dict | None]:
        """The scrape judged against its fields' value profiles: refused when values left them,
        else (the outcome, the profiles it widens). A failure of the check stores nothing new in
        the profiles and leaves the scrape as validation judged it."""
        from healerd.core.value_profile import check, field_texts, learn

        job = page.job
        try:
            known = self.profiles.get(job.name)
            if known is None:
                known = self.profiles[job.name] = value_profiles.load(self.conn, job.name)
            bp = cached_blueprint(job.blueprint_json)
            data, raw = page.extraction.data, page.extraction.raw
            texts = {name: field_texts(data, raw, name)[:PROFILE_VALUES] for name in bp.fields}
            # Behind a wall: one placeholder text in every record (or no digit where every value had
            # one); a single record's value is a wall when the structure around it did not move. Values
            # that differ from record to record in a listing are another node's data (or a new format):
            # healed or reported, never waited out.
            single = not isinstance(data, list)
            gone = [d for name, spec in bp.fields.items() if spec.profile
                    and (d := check(name, known.get(name), texts[name])) is not None]
            if not outcome.ok:
                # Validation refused the scrape already: a wall when the values left their profile
                # as placeholders while every field's selector still finds its node.
                found = all(any(t is not None for t in texts[name]) for name, spec in bp.fields.items()
                            if spec.required)
                if gone and found and (all(d.placeholder for d in gone) or (single and self._same_structure(page))):
                    log.warning("%s: a field wall: %s", job.name, "; ".join(d.reason for d in gone))
                    return refused_values(outcome, gone, job.host, True), None
                return outcome, None
            if gone:
                wall = all(d.placeholder for d in gone) or (single and self._same_structure(page))
                log.warning("%s: values left their profile%s: %s", job.name, " (a field wall)" if wall else "",
                            "; ".join(d.reason for d in gone))
                return refused_values(outcome, gone, job.host, wall), None
            return outcome, {name: learn(known.get(name), values) for name, values in texts.items()}
        except Exception:
            log.exception("value profile check of %s failed", job.name)
            return outcome, None

    def _missing(self, page: ExtractedPage) -> str | None:
        """Why the listing leaves out records the page still shows (`completeness.missing_records`,
        in the trial worker), or None; a check that fails says nothing."""
        html = page.page_text()
        if html is None:
            return None
        try:
            good = snapshots.get(self.conn, page.job.name, snapshots.LAST_GOOD)
            return self.bounded("missing_records", cached_blueprint(page.job.blueprint_json),
                                good["html"] if good else None, html)
        except Exception:
            log.exception("completeness check of %s failed", page.job.name)
            return None

    def _same_structure(self, page: ExtractedPage) -> bool:
        """Whether the selectors land on the same structure as on the last good page (the page's
        locus unchanged, or the page's bytes unchanged): the nodes are still there."""
        job = page.job
        if page.locus is None:
            return True
        known = self.loci.get(job.name)
        if known is not None and known[0] == job.version:
            return known[1] == page.locus
        good = snapshots.get(self.conn, job.name, snapshots.LAST_GOOD)
        if good is None or not good["html"]:
            return False
        return self.bounded("page_locus", good["html"], cached_blueprint(job.blueprint_json)) == page.locus

    def _history(self, name: str) -> tuple[list[int], object]:
        h = self.history.get(name)
        if h is None:
            r = sources.item_counts_and_last_good(self.conn, name) or {}
            counts = json.loads(r.get("item_counts") or "[]")
            last_good = json.loads(r["records"]) if r.get("records") else None
            if last_good:
                last_good = last_good_sample(last_good)
            h = (counts, last_good)
            self.history[name] = h
        return h

    def _plan_before_heal(self, page: ExtractedPage, outcome: ScrapeOutcome, counts, last_good) -> dict | None:
        """The production version failed on this page: try the previous one (and a merge of the
        two) before the source goes to the Doctor. The plan, or None for ordinary healing."""
        from healerd.core.production import HEAL, ProofPage, plan_before_heal, trial
        from healerd.store import probation, versions

        job = page.job
        if job.version is None:
            return None
        current = probation.version_row(self.conn, job.name, job.version)
        if current is None or current["status"] != "production" or current["promoted_by"] != versions.DAEMON:
            return None   # a person's choice (their blueprint, a rollback, an approval) is not undone
        prev_version = versions.latest_archived(self.conn, job.name)
        if prev_version is None:
            return None
        prev = probation.version_row(self.conn, job.name, prev_version)
        status = page.status or 200
        html = page.page_text()
        run = self.run_parser   # in the trial worker, with its deadline: the page is untrusted
        previous = trial(prev_version, cached_blueprint(prev["body"]), html, run=run,
                         recent_counts=counts,
                         last_good=last_good, status=status)
        if not previous.passed:
            return None
        production = trial(job.version, cached_blueprint(job.blueprint_json), html, run=run,
                           extraction=page.extraction,
                           recent_counts=counts, last_good=last_good, status=status)
        alternating = probation.took_turns(self.conn, job.name, job.version, prev_version)
        stored = probation.get_page(self.conn, job.name, job.version) if alternating else None
        own = ProofPage(f"the page version {job.version} passed on", stored["html"], stored["records"]) \
            if stored and stored["records"] is not None else None
        plan = plan_before_heal(error_type=outcome.error_type, production=production, previous=previous,
                                html=html, status=status, production_page=own, alternating=alternating,
                                recent_counts=counts, run=run)
        if plan.action == HEAL:
            return None
        log.info("%s: %s", job.name, plan.reason)
        return plan.to_dict()

    def handle(self, message):
        if isinstance(message, ExtractedPage):
            self._handle(message)
        elif isinstance(message, ForgetHistory):
            self.history.pop(message.name, None)
            self.profiles.pop(message.name, None)
            # A person's new blueprint: the last good page was another blueprint's, so the next
            # page is the new one's baseline (as after a promotion), never compared with it.
            self.loci[message.name] = (FORGOTTEN, "")
        return None

    def _handle(self, page: ExtractedPage) -> None:
        job = page.job
        try:
            counts, last_good = self._history(job.name)
            outcome = judge(page, counts, last_good)
            learned = None
            if page.extraction is not None and not outcome.not_modified \
                    and (outcome.ok or outcome.error_type in errors.HEALABLE_BY_SELECTORS):
                outcome, learned = self._profile(page, outcome)
            if not outcome.ok and outcome.error_type in errors.HEALABLE_BY_SELECTORS and page.page_text() is not None:
                try:
                    outcome.plan = self._plan_before_heal(page, outcome, counts, last_good)
                except Exception:   # no plan: the failure goes to the Doctor as it would have
                    log.exception("could not try the previous version of %s", job.name)
            # After the plan: a drifted scrape is healed, never answered by a rollback.
            if outcome.ok and page.locus is not None and page.extraction is not None:
                try:
                    data = page.extraction.data
                    why = self._drift(page, placeholder_suspect(data, last_good) or shift_suspect(data, last_good))
                except Exception:   # the check must not turn a good scrape into a crash
                    log.exception("drift check of %s failed", job.name)
                    why = None
                if why:
                    log.warning("%s: the scrape passed validation but drifted: %s", job.name, why)
                    outcome = drifted(outcome, why, job.host)
            if outcome.ok and not outcome.not_modified and counts and outcome.item_count is not None \
                    and outcome.item_count < counts[-1]:
                why = self._missing(page)   # fewer records: does the page still show the others?
                if why:
                    log.warning("%s: the scrape passed validation but leaves out records: %s", job.name, why)
                    outcome = drifted(outcome, why, job.host)
            if outcome.ok and learned:
                outcome.profiles = learned
                self.profiles[job.name] = {**self.profiles.get(job.name, {}), **learned}
            if outcome.plan is not None:   # the version that comes in passed on this page
                if outcome.plan["item_count"] is not None:
                    counts = (counts + [outcome.plan["item_count"]])[-ITEM_COUNT_MEMORY:]
                self.history[job.name] = (counts, last_good_sample(outcome.plan["data"]))
            elif outcome.ok and not outcome.not_modified:
                if outcome.item_count is not None:
                    counts = (counts + [outcome.item_count])[-ITEM_COUNT_MEMORY:]
                sample = page.shape_sample if page.shape_sample is not None else last_good_sample(outcome.data)
                self.history[job.name] = (counts, sample)
        except Exception as exc:
            log.exception("validation of %s failed unexpectedly", job.name)
            outcome = ScrapeOutcome(name=job.name, url=job.url, ok=False, started_at=page.started_at,
                                    finished_at=time.time(), error_type=errors.PARSE_ERROR,
                                    error=f"internal error while validating: {exc}", request_id=job.request_id)
        # The Scheduler hears ScrapeDone from the StoreWriter once the outcome (and the next
        # run time) is committed, so it never sees the source as due again before that.
        self.registry.write_then(("scheduler", ScrapeDone(job.name, job.host)), job.request_id,
                                 Ledger.record_scrape, outcome)
