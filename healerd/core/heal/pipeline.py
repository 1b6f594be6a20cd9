"""The built-in selector healer: repair broken CSS selectors without an LLM.

Given a blueprint, the last good page, the records the blueprint extracted
from it and the current page, `heal` either returns a repaired blueprint that
was checked on the current page, or refuses with the names of the fields whose
data it cannot find. Evidence, strongest first: the old value found again
(exactly, then nearly), the label that named the old node (column header,
<label>, <dt>, preceding text), and structural likeness (tag, classes,
attributes, ancestors, position). Ambiguous matches (a runner-up within the
margin) are refused: a refusal is a right answer, a wrong value is the worst.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from healerd.core.blueprint import Blueprint
from healerd.core.confidence import LOW_CONFIDENCE
from healerd.core.extract import extract
from healerd.core.heal.checks.block_copies import TWIN_CONFIDENCE, copied_field, copied_group, copied_records, to_twins
from healerd.core.heal.checks.placeholders import placeholder_field
from healerd.core.heal.checks.stale_values import kept_in_place, stale_copies
from healerd.core.heal.evidence import (
    HealResult,
)
from healerd.core.heal.gc_pause import collector_paused
from healerd.core.heal.listing import (
    _heal_items,
)
from healerd.core.heal.page.extraction import extract_on
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.single_record import (
    _heal_single,
)
from healerd.core.heal.verdict.corroboration import corroborated

__all__ = ["HealResult", "heal"]


@collector_paused
def heal(blueprint: Blueprint, before_html: str, old_records: dict | list[dict], after_html: str) -> HealResult:
    """Repair `blueprint` for `after_html`, or refuse naming the fields whose data is gone."""
    if blueprint.parser or any(f.css is None for f in blueprint.fields.values()):
        return HealResult(False, None, "code blueprint: the built-in healer repairs CSS selectors only", {})
    before = Page(before_html)
    after = Page(after_html)
    old = extract_on(before, blueprint)
    if not _records_match_shape(old_records, blueprint):
        return HealResult(False, None, "old records do not have the blueprint's shape", {})
    if not _holds_values(old_records, blueprint):
        return HealResult(False, None, "cannot heal: the last good records hold no value to find again", {})
    now = extract(after.tree, blueprint)
    if _consistent(now.data, old_records, blueprint):
        torn = None if blueprint.items else _newly_torn(blueprint, before, after)
        if torn:
            return HealResult(False, None, f"cannot heal: {torn}", {})
        return HealResult(True, blueprint, "the blueprint still works: nothing to heal", {}, unchanged=True, confidence=1.0)
    if blueprint.items:
        res = _heal_items(blueprint, before, after, old.raw, old_records)
    else:
        res = _heal_single(blueprint, before, after, old.raw, old_records)
    got, res.extracted = res.extracted, None
    if res.ok and res.blueprint is not None:
        if got is None:
            got = now.raw if res.blueprint is blueprint else extract_on(after, res.blueprint).raw
        kept = kept_in_place(blueprint, res.blueprint, before, after, old.raw, got)
        if kept:
            res, got = _keep_in_place(blueprint, res, kept, after, now.raw)
        elif stale := stale_copies(blueprint, res.blueprint, before, after, old.raw, got):
            why = "its old values are left only in copies the last good page had besides it: changed in place"
            return HealResult(False, None, f"cannot heal: {stale[0]} ({why})", {})
        if blueprint.items and (group := copied_group(blueprint, res.blueprint, before, after, old.raw, got)):
            return HealResult(False, None, f"cannot heal: {group}", {})
        if res.blueprint is not blueprint:
            copied = _copied(blueprint, res.blueprint, before, after, old.raw)
            if copied and copied[1]:
                why = f"the blueprint still works: {copied[0]}"
                return HealResult(True, blueprint, why, {}, unchanged=True, confidence=1.0)
            twins = None if not copied or blueprint.items else to_twins(blueprint, res.blueprint, before, after, old.raw)
            if twins is not None and twins[0].fields == blueprint.fields:
                why = f"the blueprint still works: values changed in place ({', '.join(twins[1])} read from a copy)"
                return HealResult(True, blueprint, why, {}, unchanged=True, confidence=1.0)
            if twins is not None:
                res, got = _moved_to_twins(res, *twins, after)
            elif copied:
                return HealResult(False, None, f"cannot heal: {copied[0]}", {})
        hidden = placeholder_field(got, old.raw, list(blueprint.fields))
        if hidden is not None:
            name, why = hidden
            details = {**res.details, name: {**res.details.get(name, {}), "status": "gone", "why": why}}
            return HealResult(False, None, f"cannot heal: {name} ({why})", {}, details=details)
        if not res.unchanged and res.confidence < LOW_CONFIDENCE:
            res = _corroborate(blueprint, res, before, after, old.raw, got)
    return res


def _split_confidence(reason: str) -> tuple[str, str]:
    """A heal's reason as (what it did, its " (confidence ...)" ending, "" when it has none)."""
    head, sep, tail = reason.rpartition(" (confidence")
    return (head, sep + tail) if sep else (reason, "")


def _corroborate(bp: Blueprint, res: HealResult, before: Page, after: Page, old: Any, got: Any) -> HealResult:
    """A low-confidence heal whose changed values `verdict.corroboration.corroborated` backs: raised to LOW_CONFIDENCE, the promotion threshold."""
    assert res.blueprint is not None
    backed = corroborated(bp, res.blueprint, before, after, old, got)
    if not backed:
        return res
    details = dict(res.details)
    for n, why in backed.items():
        detail = dict(details.get(n, {}), corroborated=why)
        if "confidence" in detail:
            detail["confidence"] = max(detail["confidence"], LOW_CONFIDENCE)
        details[n] = detail
    head, _confidence = _split_confidence(res.reason)
    reason = head + (f" (confidence {LOW_CONFIDENCE:.2f}: {', '.join(backed)} corroborated "
                     f"by the alignment with the fields found again and new values)")
    return replace(res, confidence=LOW_CONFIDENCE, details=details, reason=reason)


def _moved_to_twins(res: HealResult, bp: Blueprint, moved: list[str], after: Page) -> tuple[HealResult, Any]:
    """The heal with the fields read from stale copies moved to their twins, staged for a person."""
    why = (f"{', '.join(moved)}: the old value is left only in a copy of a block; read where the record's "
           "own node, built alike, now says a changed value")
    conf = min(res.confidence, TWIN_CONFIDENCE)
    changed = {**res.changed, **{n: bp.fields[n].css or "" for n in moved}}
    head, _confidence = _split_confidence(res.reason)
    res = replace(res, blueprint=bp, changed=changed, confidence=conf,
                  reason=f"{head}; {why} (confidence {conf:.2f})")
    return res, extract_on(after, bp).raw


def _copied(bp: Blueprint, new_bp: Blueprint, before: Page, after: Page, old_raw: Any) -> tuple[str, bool] | None:
    """(why, the old blueprint still works) when the repair reads a copy of a block (`block_copies`)."""
    if bp.items:
        return copied_records(bp, new_bp, before, after, old_raw)
    field = copied_field(bp, new_bp, before, after, old_raw)
    return None if field is None else (field, False)


def _keep_in_place(bp: Blueprint, res: HealResult, kept: list[str], after: Page, now: Any) -> tuple[HealResult, Any]:
    """The heal with the fields whose values changed in place read by their old selectors again."""
    assert res.blueprint is not None
    why = f"values changed in place: {', '.join(kept)} still read by the old selector"
    fields = {**res.blueprint.fields, **{n: bp.fields[n] for n in kept}}
    if fields == bp.fields and res.blueprint.items == bp.items:
        return HealResult(True, bp, f"the blueprint still works: {why}", {}, unchanged=True, confidence=1.0), now
    new_bp = replace(res.blueprint, fields=fields)
    changed = {k: v for k, v in res.changed.items() if k not in kept}
    head, confidence = _split_confidence(res.reason)
    parts = [p for p in head.split("; ") if p.split(" ", 1)[0].rstrip(":") not in kept]
    reason = "; ".join([*parts, why]) + confidence
    res = replace(res, blueprint=new_bp, changed=changed, reason=reason)
    return res, extract_on(after, new_bp).raw


def _newly_torn(bp: Blueprint, before: Page, after: Page) -> str | None:
    """A field whose selector matched one node and now matches several with different values, or None.

    The first of them still gives the old value, but it may be a copy placed before the record (a
    "related" block repeating the old value while the record's own changed): which one is the
    field cannot be told, so the page is not taken as unchanged.
    """
    for name, spec in bp.fields.items():
        if len(before.tree.css(spec.css)) != 1:
            continue
        nodes = after.tree.css(spec.css)
        values = {after.value(after.index_of(n), spec.attr) for n in nodes}
        if len(nodes) > 1 and len(values - {None, ""}) > 1:
            return (f"{name} (its selector matched one node and now matches {len(nodes)} with different values: "
                    f"a copy such as a 'related' block may hold the old value)")
    return None


def _records_match_shape(records: Any, bp: Blueprint) -> bool:
    if bp.items:
        return isinstance(records, list) and all(isinstance(r, dict) for r in records)
    return isinstance(records, dict)


def _holds_values(records: Any, bp: Blueprint) -> bool:
    """At least one field value in the old records: without one there is nothing to heal towards."""
    rows = records if bp.items else [records]
    return any(r.get(name) is not None for r in rows for name in bp.fields)


def _same_value(a: Any, b: Any, ftype: str) -> bool:
    if ftype == "str":
        return a == b
    return a is not None and b is not None and float(a) == float(b)


def _consistent(now: Any, old: Any, bp: Blueprint) -> bool:
    """True when the old blueprint gives the old records again on the current page."""
    if bp.items:
        if not isinstance(now, list) or len(now) != len(old) or not now:
            return False
        pairs = list(zip(now, old))
    else:
        pairs = [(now, old)]
    for got, want in pairs:
        for name, spec in bp.fields.items():
            if want.get(name) is None:
                if got.get(name) is None and spec.required and not bp.items:
                    return False
                continue
            if not _same_value(got.get(name), want.get(name), spec.type):
                return False
    return True

