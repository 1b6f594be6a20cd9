"""Deployer: candidate -> staging version -> validated on the live page -> promoted or rejected.

The Doctor asks it to deploy a candidate; it never asks the Doctor back. Production
moves in one transaction (StoreWriter.promote), so it is always one whole version.

A candidate no person wrote passes the static selector check first (refused, never staged,
when over the bounds: healerd.core.selector_bounds); an external healer's answer is staged
once per source (by the digest of the normalized candidate), never twice. Every selector is
then tried in the trial worker with its deadline (healerd.adapters.trials): a candidate past
it is recorded as rejected ("too slow on this page") before the worker is killed.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

from healerd.actors.base import ServiceActor, page_limits
from healerd.adapters.fetch import FetchError
from healerd.adapters.trials import TooSlow
from healerd.core.blueprint import Blueprint, from_json
from healerd.core.judge import PROMOTE, REJECT, STAGE, judge
from healerd.core.selector_bounds import SelectorRefused, candidate_digest, check_blueprint
from healerd.core.visible import visible_html
from healerd.store import snapshots, sources, value_profiles, versions
from healerd.store.ledger import Ledger

log = logging.getLogger("healerd.deployer")


@dataclass(frozen=True)
class Deploy:
    """Doctor -> Deployer (ask): try this candidate for `name`."""
    name: str
    candidate_json: str
    origin: str          # builtin | memory | external | human
    note: str = ""
    page_html: str | None = None   # the page the candidate was made for (the Doctor's diagnosis page)
    confidence: float | None = None   # the healer's own confidence in the candidate, when it gives one


@dataclass(frozen=True)
class TryVersion:
    """Control plane -> Deployer (ask): does `version` of `name` pass on the live page now? Changes nothing."""
    name: str
    version: int


@dataclass(frozen=True)
class TryBlueprint:
    """Control plane -> Deployer (ask): what would this blueprint read on its page now, and would
    the scrape pass? Registers and stores nothing (`healerctl try`)."""
    blueprint_json: str


@dataclass(frozen=True)
class FetchPage:
    """Control plane -> Deployer (ask): the page at `url` as a source would fetch it (`healerctl
    suggest`); {"html", "status"} or {"error"}. Stores nothing."""
    url: str
    via: str = "http"


UNFETCHED = "could not fetch the live page to validate"   # a rejection that judged nothing


def deploy_result(outcome: str, version: int | None, reason: str, validation: dict | None = None, *,
                  conclusive: bool = True) -> dict:
    """The Deployer's answer. `conclusive` is False when the candidate was never judged on the
    page (the live page could not be fetched): a rejection that says nothing about the candidate."""
    return {"outcome": outcome, "version": version, "reason": reason, "validation": validation,
            "conclusive": conclusive}


class Deployer(ServiceActor):
    fetches = True

    def handle(self, message):
        if isinstance(message, Deploy):
            try:
                return self.deploy(message)
            except Exception as exc:
                log.exception("deploying a candidate for %s failed", message.name)
                return deploy_result("error", None, f"internal error while deploying: {exc}", conclusive=False)
        if isinstance(message, TryVersion):
            return self.try_version(message)
        if isinstance(message, FetchPage):
            try:
                page = self.fetcher.fetch(message.url, via=message.via)
            except FetchError as exc:
                return {"error": f"{exc.error_type}: {exc.message}"}
            except Exception as exc:   # an answer, never a stopped actor
                return {"error": f"internal error: {exc}"}
            return {"html": page.text, "status": page.status}
        if isinstance(message, TryBlueprint):
            try:
                return self.try_blueprint(message)
            except Exception as exc:   # an answer, never a stopped actor
                log.exception("trying a blueprint failed")
                return {"ok": False, "records": None, "error": f"internal error: {exc}", "error_type": "INTERNAL"}
        return None

    def try_version(self, msg: TryVersion) -> dict:
        """{"passes": bool | None, "reason"}: the version's parser on the live page, validated as a scrape
        would be (None: the page could not be fetched, so nothing was judged)."""
        from healerd.core.validate import validate

        v = versions.get(self.conn, msg.name, msg.version)
        bp = from_json(v["body"])
        src = sources.url_and_item_counts(self.conn, msg.name)
        if src is None:
            return {"passes": None, "reason": "the source was removed"}
        try:
            page = self.fetcher.fetch(bp.url or src["url"], headers=bp.headers or None, cookies=bp.cookies or None,
                                      via=bp.fetch, wait_for=bp.wait_for)
        except FetchError as exc:
            return {"passes": None, "reason": f"{exc.error_type}: {exc.message}"}
        try:
            ex = self.run_parser(bp, page.text, page_limits(self.config))
        except Exception as exc:
            return {"passes": False, "reason": f"PARSE_ERROR: its parser failed: {getattr(exc, 'reason', None) or exc}"}
        good = snapshots.get(self.conn, msg.name, snapshots.LAST_GOOD)
        result = validate(ex, bp, recent_counts=json.loads(src["item_counts"] or "[]"),
                          last_good=good["records"] if good else None, html=page.text, status=page.status)
        if result.passed:
            return {"passes": True, "reason": f"it reads the current page ({ex.item_count or 1} record(s))"}
        return {"passes": False, "reason": f"{result.error_type}: {'; '.join(result.errors[:3])}"}

    def try_blueprint(self, msg: TryBlueprint) -> dict:
        """{"ok", "records", "error", "error_type", "item_count", "warnings", "status"}: the blueprint's
        page fetched (or rendered) once, read and validated as a first scrape would be."""
        from healerd.core.validate import validate

        bp = from_json(msg.blueprint_json)
        try:
            page = self.fetcher.fetch(bp.url, headers=bp.headers or None, cookies=bp.cookies or None,
                                      via=bp.fetch, wait_for=bp.wait_for)
        except FetchError as exc:
            return {"ok": False, "records": None, "error": f"{exc.error_type}: {exc.message}",
                    "error_type": exc.error_type, "item_count": None, "warnings": [], "status": None}
        try:
            ex = self.run_parser(bp, page.text, page_limits(self.config))
        except Exception as exc:
            return {"ok": False, "records": None, "error": f"its parser failed: {getattr(exc, 'reason', None) or exc}",
                    "error_type": "PARSE_ERROR", "item_count": None, "warnings": [], "status": page.status}
        result = validate(ex, bp, html=page.text, status=page.status)
        return {"ok": result.passed, "records": ex.data,
                "error": None if result.passed else f"{result.error_type}: {'; '.join(result.errors[:3])}",
                "error_type": result.error_type, "item_count": result.item_count, "warnings": result.warnings,
                "status": page.status}

    def _flagged(self, name: str, now: float) -> bool:
        src = sources.review_flags(self.conn, name)
        if not src:
            return False
        if src["review_approved_until"] and src["review_approved_until"] > now:
            return False
        if src["flagged_for_review"]:
            return True
        changes = versions.changes_since(self.conn, name, now - self.config.doctor.review_window)
        if changes >= self.config.doctor.review_changes:
            self.registry.write(Ledger.flag_for_review, name,
                                f"the parser was changed automatically {changes} times in "
                                f"{self.config.doctor.review_window / 86400:g} days: further changes wait for a person "
                                f"(healerctl approve)")
            return True
        return False

    def deploy(self, msg: Deploy) -> dict:
        now = time.time()
        name = msg.name
        candidate: Blueprint = from_json(msg.candidate_json)
        prod_version, production = versions.production(self.conn, name)
        src = sources.url_and_item_counts(self.conn, name)
        if src is None:
            return deploy_result("error", None, "the source was removed", conclusive=False)
        if msg.origin != "human":
            try:
                check_blueprint(candidate, trusted=production)   # what production already has is not new
            except SelectorRefused as exc:
                log.warning("%s: a candidate (%s) is refused before any trial: %s", name, msg.origin, exc)
                return deploy_result("rejected", None, f"refused before any trial: {exc}")
        if candidate.to_json() == production.to_json():
            return deploy_result("rejected", None, "the candidate is the production parser itself")
        waiting = versions.staged_with_body(self.conn, name, candidate.to_json())
        if waiting is not None:
            # Staging it again would only pile up identical versions awaiting the same approval.
            return deploy_result("declined", waiting, f"the same candidate is already staged as version {waiting}: "
                                                      f"awaits `healerctl approve {name} {waiting}`")
        flagged = self._flagged(name, now)
        if msg.origin == "external":
            staged = self.registry.write(Ledger.stage_answer, name, candidate, candidate_digest(candidate),
                                         msg.origin, msg.note)
            if staged["version"] is None:
                seen = staged["seen"]
                why = f": {seen['note']}" if seen.get("note") else ""
                return deploy_result("rejected", None, f"the healer gave this same answer before (version "
                                                       f"{seen['version']}, {seen['status']}{why}): not staged again")
            version = staged["version"]
        else:
            version = self.registry.write(Ledger.stage_version, name, candidate, msg.origin, msg.note)
        url = candidate.url or src["url"]
        try:
            page = self.fetcher.fetch(url, headers=candidate.headers or None, cookies=candidate.cookies or None,
                                      via=candidate.fetch, wait_for=candidate.wait_for)
        except FetchError as exc:
            reason = f"{UNFETCHED}: {exc.message}"
            self.registry.write(Ledger.reject_version, name, version, reason)
            return deploy_result("rejected", version, reason, conclusive=False)

        def too_slow(line: str) -> None:   # before the worker is killed: a restart must not try it again
            self.registry.write(Ledger.reject_version, name, version, str(TooSlow(line)))

        try:
            cand_ex = self.run_parser(candidate, page.text, page_limits(self.config), on_overrun=too_slow)
        except TooSlow as exc:
            log.warning("%s: version %s %s", name, version, exc)
            return deploy_result("rejected", version, str(exc))
        except Exception as exc:
            reason = f"the candidate parser failed on the live page: {getattr(exc, 'reason', None) or exc}"
            self.registry.write(Ledger.reject_version, name, version, reason)
            return deploy_result("rejected", version, reason)
        try:
            prod_ex = self.run_parser(production, page.text, page_limits(self.config))
        except Exception:
            prod_ex = None
        good = snapshots.get(self.conn, name, snapshots.LAST_GOOD)
        counts = json.loads(src["item_counts"] or "[]")
        verdict = judge(candidate, production, cand_ex, page.text, production_ex=prod_ex, recent_counts=counts,
                        last_good=good["records"] if good else None, flagged_for_review=flagged,
                        status=page.status, confidence=msg.confidence,
                        relabelled=self._relabelled(production, good, candidate, page.text, cand_ex),
                        hidden=self._hidden(candidate, page.text, cand_ex), profiles=value_profiles.load(self.conn, name),
                        origin=msg.origin, by_position=self._by_position(candidate, page.text))
        if verdict.action == REJECT and msg.page_html and msg.page_html != page.text:
            merged = self._merge_layouts(msg, candidate, production, prod_ex, page, counts, good, flagged, version)
            if merged is not None:
                return merged
        validation = verdict.to_dict()
        if verdict.action == PROMOTE:
            self._promote(name, version, validation,
                          url=candidate.url if candidate.url and candidate.url != src["url"] else None,
                          page={"url": url, "html": page.text, "records": cand_ex.data})
            log.info("promoted %s version %s (%s), was %s", name, version, msg.origin, prod_version)
            return deploy_result("promoted", version, verdict.reason, validation)
        if verdict.action == STAGE:
            return deploy_result("staged", version, verdict.reason, validation)
        self.registry.write(Ledger.reject_version, name, version, verdict.reason, validation)
        return deploy_result("rejected", version, verdict.reason, validation)

    def _promote(self, name: str, version: int, validation: dict, **kwargs) -> None:
        """Promote a staged version; should that fail, reject it (left 'staging', it would block
        the same candidate as "already staged"). Scraped again once the Doctor has recorded the
        fix, not here, so HEALED always comes before RECOVERED."""
        try:
            self.registry.write(Ledger.promote, name, version, validation, rescrape=False, **kwargs)
        except Exception as exc:
            self.registry.write(Ledger.reject_version, name, version, f"the promotion failed: {exc}", validation)
            raise

    def _hidden(self, candidate, html: str, cand_ex) -> str | None:
        """Does the candidate read nodes a browser would not render? Evaluated in the trial worker;
        a check that cannot finish there refuses the candidate rather than let it through unchecked."""
        try:
            return self.bounded("reads_hidden", candidate, html, cand_ex.data)
        except Exception as exc:
            return f"whether it reads hidden nodes could not be checked ({getattr(exc, 'reason', None) or exc})"

    def _by_position(self, candidate, html: str) -> str | None:
        """Does the candidate leave look-alikes out by position where a class tells them apart?
        (in the trial worker; a check that cannot finish says nothing: the other checks stand)."""
        try:
            better = self.bounded("by_telling_feature", candidate, visible_html(html))
        except Exception:
            return None
        if better is None:
            return None
        return (f"the items selector {candidate.items!r} leaves look-alike records out by position where a class "
                f"tells them apart ({better.items!r} selects the same records and stays right when they go)")

    def _relabelled(self, production, good, candidate, html: str, cand_ex) -> str | None:
        """Does the candidate read a field from under another heading than the last good page's?
        Its selectors are evaluated in the trial worker (they are nobody's own); a check that cannot
        finish there holds the candidate for a person rather than let it through unchecked."""
        if not good or not good["html"] or good["records"] is None:
            return None
        try:
            return self.bounded("candidate_relabelled", production, good["html"], good["records"], candidate, html,
                                cand_ex.data)
        except Exception as exc:
            return f"the headings of its places could not be compared ({getattr(exc, 'reason', None) or exc})"

    def _merge_layouts(self, msg: Deploy, candidate: Blueprint, production: Blueprint, prod_ex, page, counts, good,
                       flagged: bool, version: int) -> dict | None:
        """The candidate reads the page it was made for but not the live page, which production
        reads: the site serves two layouts at once. One parser with both selectors per field,
        proved on both pages and judged on the live page, replaces the candidate. None: no merge."""
        from healerd.core.production import ProofPage, merge_and_prove, trial

        run = self.run_parser
        live = trial(0, production, page.text, run=run, extraction=prod_ex,
                     recent_counts=counts,
                     last_good=good["records"] if good else None, status=page.status)
        made_for = trial(0, candidate, msg.page_html, run=run, recent_counts=counts,
                         last_good=good["records"] if good else None)
        if not live.passed or not made_for.passed:
            return None
        merged, why = merge_and_prove(production, candidate, [
            ProofPage("the live page", page.text, live.extraction.data, page.status),
            ProofPage("the page the candidate was made for", msg.page_html, made_for.extraction.data)],
            recent_counts=counts, run=run)
        if merged is None:
            log.info("%s: the candidate reads one layout only and no merge holds: %s", msg.name, "; ".join(why[:2]))
            return None
        self.registry.write(Ledger.reject_version, msg.name, version,
                            "reads one of two layouts the site serves: merged with production instead")
        mv = self.registry.write(Ledger.stage_version, msg.name, merged, msg.origin,
                                 f"{msg.note}; merged with production: both layouts the site serves")
        try:
            merged_ex = run(merged, page.text)
        except Exception as exc:   # proved on this very page a moment ago; a worker lost meanwhile
            self.registry.write(Ledger.reject_version, msg.name, mv, f"the merged parser failed on the live page: {exc}")
            return deploy_result("rejected", mv, f"the merged parser failed on the live page: {exc}")
        verdict = judge(merged, production, merged_ex, page.text, production_ex=prod_ex, recent_counts=counts,
                        last_good=good["records"] if good else None, flagged_for_review=flagged, status=page.status,
                        confidence=msg.confidence, hidden=self._hidden(merged, page.text, merged_ex),
                        profiles=value_profiles.load(self.conn, msg.name), origin=msg.origin)
        validation = verdict.to_dict()
        validation["proved_on"] = ["the live page", "the page the candidate was made for"]
        reason = f"two layouts at once: merged with production, proved on both ({verdict.reason})"
        if verdict.action == PROMOTE:
            self._promote(msg.name, mv, validation,
                          page={"url": page.url, "html": page.text, "records": merged_ex.data})
            log.info("promoted %s version %s (%s, merged layouts)", msg.name, mv, msg.origin)
            return deploy_result("promoted", mv, reason, validation)
        if verdict.action == STAGE:
            return deploy_result("staged", mv, verdict.reason, validation)
        self.registry.write(Ledger.reject_version, msg.name, mv, verdict.reason, validation)
        return deploy_result("rejected", mv, verdict.reason, validation)
