"""The ladder's diagnosis: the live page fetched, the production parser run on it, validated and
checked for drift; the diagnosis context a healer is told (pages, diff, output, errors)."""

from __future__ import annotations

import json
import logging
import traceback
from typing import Any

from healerd.core import errors
from healerd.core.blueprint import Blueprint
from healerd.core.diagnosis import DiagnosisContext
from healerd.core.extract import PageTooLarge
from healerd.core.htmldiff import structural_diff
from healerd.core.ladder.ports import Attempt, FetchFailed, LadderPorts, LadderSettings, TrialTooSlow
from healerd.core.routing import DECLINE, route
from healerd.core.validate import validate
from healerd.core.visible import visible_html

log = logging.getLogger("healerd.doctor")


def diagnose(ports: LadderPorts, settings: LadderSettings, att: Attempt,
             src: dict) -> tuple[DiagnosisContext | None, str | None]:
    """The diagnosis context of the live page, or None and why healing cannot help."""
    name = att.name
    version, bp = ports.reads.production(name)
    good = ports.reads.last_good(name)
    try:
        page = ports.pages.fetch(src["url"], bp)
    except FetchFailed as exc:
        kind, why = route(exc.error_type, exc.status, None)
        if kind == DECLINE:
            return None, f"the page cannot be fetched ({exc.error_type}: {exc.message}); {why}"
        ctx = context(att, src, bp, version, good, "", exc.error_type, exc.message, [], "")
        ctx.actual_output = {"status": exc.status}
        return ctx, None
    html, status = page.text, page.status
    try:
        ex = ports.trials.run_parser(bp, html, settings.limits)
    except PageTooLarge as exc:
        return None, f"the page passes a work bound ({exc}); {route(errors.TOO_LARGE)[1]}"
    except TrialTooSlow as exc:   # production's own selectors: a scrape of this page is a TIMEOUT, not a repair
        return None, f"the production parser is {exc}: healing cannot help (a scrape of it fails as TIMEOUT)"
    except Exception as exc:
        ctx = context(att, src, bp, version, good, html, errors.PARSE_ERROR,
                      f"the parser failed: {getattr(exc, 'reason', None) or exc}", [], "")
        return ctx, None
    ctx = _judged(ports, att, src, bp, version, good, html, status or 200, ex)
    if page.permanent_redirect:
        ctx.actual_output = {"permanent_redirect": page.permanent_redirect, "data": ex.data}
    return ctx, None


def failing_layout(ports: LadderPorts, att: Attempt, src: dict, live: DiagnosisContext) -> DiagnosisContext:
    """The live page passes, yet the scrape that failed in this episode kept its page: when the
    production parser still fails on that page, the site serves two layouts at once. Heal for
    the failing one (the Deployer merges the candidate with production when the live page
    shows the other)."""
    if not src["failing_since"] or src["state"] != "DEGRADED":
        return live
    failing = ports.reads.failing_page(att.name)
    if failing is None or failing["fetched_at"] < src["failing_since"]:
        return live
    version, bp = ports.reads.production(att.name)
    good = ports.reads.last_good(att.name)
    html = failing["html"]
    try:
        ex = ports.trials.run_parser(bp, html)
    except Exception as exc:
        ctx = context(att, src, bp, version, good, html, errors.PARSE_ERROR,
                      f"the parser failed: {getattr(exc, 'reason', None) or exc}", [], "")
    else:
        ctx = _judged(ports, att, src, bp, version, good, html, failing["status_code"] or 200, ex)
    if ctx.error_type is None:
        return live
    log.info("%s: the live page passes but the failing page of this episode still fails: "
             "healing for that layout", att.name)
    return ctx


def _judged(ports: LadderPorts, att: Attempt, src: dict, bp: Blueprint, version: int, good: dict | None,
            html: str, status: int, ex: Any) -> DiagnosisContext:
    """The context of a page the production parser read: validated, and checked for drift when it passes."""
    counts = json.loads(src["item_counts"] or "[]")
    result = validate(ex, bp, recent_counts=counts, last_good=good["records"] if good else None, html=html,
                      status=status)
    reason = (drift(ports, bp, good, html, ex.data) or left_profile(ports, att.name, bp, ex)) if result.passed \
        else None
    if reason:
        ctx = context(att, src, bp, version, good, html, errors.SCHEMA_MISMATCH, reason, [reason], result.report())
    elif result.passed:
        ctx = context(att, src, bp, version, good, html, None, "", [], result.report())
    else:
        ctx = context(att, src, bp, version, good, html, result.error_type, "; ".join(result.errors[:5]),
                      list(result.errors), result.report())
    ctx.actual_output = ex.data
    ctx.error_traceback = ""
    att.failed_fields = list(result.failed_fields)
    return ctx


def context(att: Attempt, src: dict, bp: Blueprint, version: int | None, good: dict | None, html: str,
            error_type: str | None, message: str, verrors: list[str], report: str) -> DiagnosisContext:
    att.failed_fields = []
    return DiagnosisContext(
        source_name=att.name, url=src["url"], blueprint=bp, version=version,
        error_type=error_type,   # type: ignore[arg-type]   # None: the page passes (nothing to heal)
        error_message=message, error_traceback="".join(traceback.format_stack(limit=0)),
        failure_count=src["failure_count"], last_success_at=src["last_success_at"],
        original_html=good["html"] if good else None, current_html=html,
        # what a browser renders of the page changed: hidden nodes' text is nobody's to read (visible.py)
        html_diff=structural_diff(good["html"] if good else None, visible_html(html)) if html else "",
        expected_schema={k: f.type for k, f in bp.fields.items()},
        last_good_records=good["records"] if good else None,
        validation_errors=verrors, validation_report=report,
        fix_attempts_today=src["fix_attempts_today"], is_quarantined=src["state"] == "QUARANTINED",
    )


def drift(ports: LadderPorts, bp: Blueprint, good: dict | None, html: str, data: Any) -> str | None:
    """The Validator's drift check on the page the Doctor diagnoses: a page that passes validation
    but whose records left the last good ones' place is not "nothing to heal" (in the trial worker,
    with its deadline)."""
    if not good:
        return None
    try:
        # records left out while the page shows them (completeness.py), then the drift checks
        reason = ports.trials.bounded("missing_records", bp, good.get("html"), html) if good.get("records") \
            else None
        reason = reason or ports.trials.bounded("page_drift", bp, good.get("html"), good.get("records"), html, data)
    except Exception:
        log.exception("drift check failed")
        return None
    return f"drift: {reason}" if reason else None


def left_profile(ports: LadderPorts, name: str, bp: Blueprint, ex: Any) -> str | None:
    """The Validator's value-profile check on the page the Doctor diagnoses: values that left their
    profile are no page that "passes" (else the scrape it refused would be retried at once, again
    and again)."""
    from healerd.core.value_profile import check, field_texts

    try:
        profiles = ports.reads.value_profiles(name)
        gone = [d.reason for n, spec in bp.fields.items() if spec.profile
                and (d := check(n, profiles.get(n), field_texts(ex.data, ex.raw, n))) is not None]
    except Exception:
        log.exception("value profile check failed")
        return None
    return "; ".join(gone) or None


def status_of(ctx: DiagnosisContext) -> int | None:
    """The HTTP status the diagnosis saw (301 for a permanent redirect)."""
    if isinstance(ctx.actual_output, dict):
        s = ctx.actual_output.get("status")
        if isinstance(s, int):
            return s
        if ctx.actual_output.get("permanent_redirect"):
            return 301
    return None
