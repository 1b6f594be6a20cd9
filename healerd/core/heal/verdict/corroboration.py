"""Values changed with the layout: a second, independent corroboration of where the healer put them.

When a redesign changes a field's values along with its layout, the healer cannot find the old
values again; it locates the field by labels, structure or the change of node its sibling fields
show, at a confidence below the Deployer's promotion threshold, and the repair waits for a person.
That is right when nothing else speaks for the new place: a field REMOVED leaves a neighbouring
column or a label's neighbour that looks just as plausible.

Two facts that the healer's scoring does not use together corroborate such a field:

1. Structural alignment. The fields whose values were found again (every record, exactly) are
   anchors. On the last good page each anchor reached the changed field's old node by a path of
   element positions (down from their common ancestor by child index, wrappers that are only
   children left out); on the current page the same path from the same anchor must lead to the
   candidate's node, in every record and from every anchor. A field read from the column next door, from the record's container or from a
   label sits elsewhere relative to the anchors.
2. New text of the old kind. In every record the candidate's value is not empty, is text the last
   good page did not show anywhere (a neighbouring column, a decoy or a label kept from the old
   page is old text), has the same coarse kind as the old value (number, text, date, link), and
   neither holds nor is held by another field's value in that record where the old values were
   apart (a container or a label's neighbour reads the siblings' text).

And the label that named the old node (a column header, a <label>, a <dt>), when the new node has
one too, is the same: a new column in a dropped one's place is named otherwise.

Only when every field whose values changed passes both, and every other field reads its old value
back in every record, is the heal's confidence raised, to the promotion threshold
(`core.confidence.LOW_CONFIDENCE`), never above it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.confidence import LOW_CONFIDENCE
from healerd.core.heal.evidence import MIN_VALUE, HealResult, OldText, relabelled, split_confidence, value_kind
from healerd.core.heal.page.fingerprint import Page, collapse
from healerd.core.heal.page.positions import relative_path

# Every record's values are looked for in the whole last good page's text: on a listing longer than
# this the check would cost seconds on a big page, and such a heal keeps its own confidence.
MAX_RECORDS = 200

def _roots(page: Page, bp: Blueprint) -> list[int]:
    if not bp.items:
        return [0]
    for css in bp.items_selectors:
        try:
            found = [i for i in (page.index_of(n) for n in page.tree.css(css)) if i is not None]
        except Exception:   # a selector lexbor refuses: no corroboration
            return []
        if found:
            return found
    return []


def _nodes(page: Page, roots: list[int], spec: FieldSpec) -> list[int | None]:
    """Per record, the node the field reads (extraction's first match of its first matching selector)."""
    out: list[int | None] = [None] * len(roots)
    for css in spec.selectors:
        missing = [k for k, node in enumerate(out) if node is None]
        if not missing:
            break
        try:
            got = page.first_in_each([roots[k] for k in missing], css)
        except Exception:
            return [None] * len(roots)
        for k, node in zip(missing, got):
            out[k] = node
    return out


def _nested(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and (a in b or b in a)


def _newly_nested(value: str, was: str, other: str | None, other_was: str | None) -> bool:
    """The field's value holds a sibling's value or is held by it, where the old ones were apart (a
    signature that always carried the name is no news; a container or a label's neighbour is)."""
    return _nested(value, other) and not _nested(was, other_was)


def _norm(v: Any) -> str | None:
    s = collapse(v) if isinstance(v, str) else None
    return s or None


def corroborated(old_bp: Blueprint, new_bp: Blueprint, before: Page, after: Page,
                 old_raw: Any, new_raw: Any) -> dict[str, str] | None:
    """{changed field: why} when every field whose values changed is corroborated by both the
    structural alignment and new text of the old kind; None otherwise (nothing to raise)."""
    old_rows = old_raw if isinstance(old_raw, list) else [old_raw]
    new_rows = new_raw if isinstance(new_raw, list) else [new_raw]
    if not old_rows or len(old_rows) != len(new_rows) or len(old_rows) > MAX_RECORDS \
            or set(old_bp.fields) != set(new_bp.fields):
        return None
    if not all(isinstance(r, dict) for r in (*old_rows, *new_rows)):
        return None
    names = list(new_bp.fields)
    changed = [n for n in names if any(_norm(o.get(n)) != _norm(w.get(n)) for o, w in zip(old_rows, new_rows))]
    anchors = [n for n in names if n not in changed]
    if not changed or not anchors:
        return None
    old_roots, new_roots = _roots(before, old_bp), _roots(after, new_bp)
    if len(old_roots) != len(old_rows) or len(new_roots) != len(new_rows):
        return None
    old_nodes = {n: _nodes(before, old_roots, old_bp.fields[n]) for n in names}
    new_nodes = {n: _nodes(after, new_roots, new_bp.fields[n]) for n in names}
    old_text = OldText(before)
    for k, (old, new) in enumerate(zip(old_rows, new_rows)):
        held = [a for a in anchors if _norm(old.get(a)) is not None]
        if not held:
            return None          # nothing found again in this record: nothing to align on
        for name in changed:
            value, was = _norm(new.get(name)), _norm(old.get(name))
            if value is None or was is None or len(value) < MIN_VALUE:
                return None
            if old_text.holds(value) or value_kind(value) != value_kind(was):
                return None      # old text (a neighbour's, a decoy's, a label's) or another kind of value
            if any(_newly_nested(value, was, _norm(new.get(n)), _norm(old.get(n))) for n in names if n != name):
                return None      # it reads a sibling field's text, or a sibling reads it, as it did not before
            before_node, after_node = old_nodes[name][k], new_nodes[name][k]
            if before_node is None or after_node is None:
                return None
            if relabelled(before, before_node, after, after_node):
                return None      # named by another label or column header than on the last good page
            for a in held:
                a_old, a_new = old_nodes[a][k], new_nodes[a][k]
                if a_old is None or a_new is None:
                    return None
                if relative_path(before, a_old, before_node) != relative_path(after, a_new, after_node):
                    return None
    return {n: f"corroborated: new values of the old kind, placed as before relative to {', '.join(anchors)}"
            for n in changed}


def corroborate(bp: Blueprint, res: HealResult, before: Page, after: Page, old: Any, got: Any) -> HealResult:
    """The heal, raised to the promotion threshold (LOW_CONFIDENCE) when `corroborated` backs its changed values."""
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
    head, _confidence = split_confidence(res.reason)
    reason = head + (f" (confidence {LOW_CONFIDENCE:.2f}: {', '.join(backed)} corroborated "
                     f"by the alignment with the fields found again and new values)")
    return replace(res, confidence=LOW_CONFIDENCE, details=details, reason=reason)
