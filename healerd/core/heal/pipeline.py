"""The built-in selector healer: repair broken CSS selectors without an LLM, its stages in order.

Given a blueprint, the last good page, the records the blueprint extracted
from it and the current page, `heal` either returns a repaired blueprint that
was checked on the current page, or refuses with the names of the fields whose
data it cannot find. Evidence, strongest first: the old value found again
(exactly, then nearly), the label that named the old node (column header,
<label>, <dt>, preceding text), and structural likeness (tag, classes,
attributes, ancestors, position). Ambiguous matches (a runner-up within the
margin) are refused: a refusal is a right answer, a wrong value is the worst.

The stages, in the order `heal` runs them: the page model (both pages indexed once); is there
anything to heal (`checks.still_works`); the records found and the fields placed, by one of two
routes (`listing`, `single_record`); the checks that refuse or take a field back (stale values,
copies of a block, placeholders); the verdict (`verdict.corroboration`).
"""

from __future__ import annotations

from healerd.core.blueprint import Blueprint
from healerd.core.confidence import LOW_CONFIDENCE
from healerd.core.extract import extract
from healerd.core.heal.checks.block_copies import copied, copied_group, moved_to_twins, to_twins
from healerd.core.heal.checks.placeholders import placeholder_field
from healerd.core.heal.checks.stale_values import keep_in_place, kept_in_place, stale_copies
from healerd.core.heal.checks.still_works import consistent, holds_values, newly_torn, records_match_shape
from healerd.core.heal.evidence import HealResult
from healerd.core.heal.gc_pause import collector_paused
from healerd.core.heal.listing import _heal_items
from healerd.core.heal.page.extraction import extract_on
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.single_record import _heal_single
from healerd.core.heal.verdict.corroboration import corroborate

__all__ = ["HealResult", "heal"]


@collector_paused
def heal(blueprint: Blueprint, before_html: str, old_records: dict | list[dict], after_html: str) -> HealResult:
    """Repair `blueprint` for `after_html`, or refuse naming the fields whose data is gone."""
    if blueprint.parser or any(f.css is None for f in blueprint.fields.values()):
        return HealResult(False, None, "code blueprint: the built-in healer repairs CSS selectors only", {})

    # the page model: each page parsed and indexed once
    before = Page(before_html)
    after = Page(after_html)
    old = extract_on(before, blueprint)

    # anything to heal?
    if not records_match_shape(old_records, blueprint):
        return HealResult(False, None, "old records do not have the blueprint's shape", {})
    if not holds_values(old_records, blueprint):
        return HealResult(False, None, "cannot heal: the last good records hold no value to find again", {})
    now = extract(after.tree, blueprint)
    if consistent(now.data, old_records, blueprint):
        torn = None if blueprint.items else newly_torn(blueprint, before, after)
        if torn:
            return HealResult(False, None, f"cannot heal: {torn}", {})
        return HealResult(True, blueprint, "the blueprint still works: nothing to heal", {}, unchanged=True, confidence=1.0)

    # the records found and the fields placed: a listing's route or a single record's
    if blueprint.items:
        res = _heal_items(blueprint, before, after, old.raw, old_records)
    else:
        res = _heal_single(blueprint, before, after, old.raw, old_records)
    got, res.extracted = res.extracted, None
    if not res.ok or res.blueprint is None:
        return res
    if got is None:
        got = now.raw if res.blueprint is blueprint else extract_on(after, res.blueprint).raw

    # the checks that refuse: values changed in place, copies of a block, placeholders
    kept = kept_in_place(blueprint, res.blueprint, before, after, old.raw, got)
    if kept:
        res, got = keep_in_place(blueprint, res, kept, after, now.raw)
    elif stale := stale_copies(blueprint, res.blueprint, before, after, old.raw, got):
        why = "its old values are left only in copies the last good page had besides it: changed in place"
        return HealResult(False, None, f"cannot heal: {stale[0]} ({why})", {})
    if blueprint.items and (group := copied_group(blueprint, res.blueprint, before, after, old.raw, got)):
        return HealResult(False, None, f"cannot heal: {group}", {})
    if res.blueprint is not blueprint:
        copy = copied(blueprint, res.blueprint, before, after, old.raw)
        if copy and copy[1]:
            return HealResult(True, blueprint, f"the blueprint still works: {copy[0]}", {}, unchanged=True, confidence=1.0)
        twins = None if not copy or blueprint.items else to_twins(blueprint, res.blueprint, before, after, old.raw)
        if twins is not None and twins[0].fields == blueprint.fields:
            why = f"the blueprint still works: values changed in place ({', '.join(twins[1])} read from a copy)"
            return HealResult(True, blueprint, why, {}, unchanged=True, confidence=1.0)
        if twins is not None:
            res, got = moved_to_twins(res, *twins, after)
        elif copy:
            return HealResult(False, None, f"cannot heal: {copy[0]}", {})
    hidden = placeholder_field(got, old.raw, list(blueprint.fields))
    if hidden is not None:
        name, why = hidden
        details = {**res.details, name: {**res.details.get(name, {}), "status": "gone", "why": why}}
        return HealResult(False, None, f"cannot heal: {name} ({why})", {}, details=details)

    # the verdict: a low-confidence heal that the alignment corroborates reaches the promotion threshold
    if not res.unchanged and res.confidence < LOW_CONFIDENCE:
        res = corroborate(blueprint, res, before, after, old.raw, got)
    return res
