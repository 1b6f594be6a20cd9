"""Labels merged into the value's node: "Readings: 12" where the record's node said "12".

A redesign that writes a field's label inside the value's own node leaves the value whole,
with the same text before (or after) it in every record. Near matching cannot see it when
the value is short (a "12" is inside too many texts to mean anything), and the node's tag
and classes may all have changed. What tells the field's node from chance here is the
record as a whole: in every record the text around the old value is one and the same, it
holds a word (a label, not data), and one selector reads exactly those nodes. A second
text around the old values that is as consistent (two fields with equal values) is
ambiguous: nothing is healed.
"""

from __future__ import annotations

from healerd.core.blueprint import FieldSpec
from healerd.core.heal.evidence import MAX_FIELD_SELECTORS, SAMPLE
from healerd.core.heal.page.fingerprint import Fingerprint, Page, norm_label, similarity, words
from healerd.core.heal.page.selectors import lexbor_first_in, relative_selectors
from healerd.core.heal.records.old_kinds import _spread

MAX_AFFIX = 40          # a merged label is short
CONFIDENT = 0.8         # the merged label names the field (its old label's or its name's words)
UNNAMED = 0.6           # ... else a person looks first (below the Deployer's promotion threshold)

Affix = tuple[str, str]


def _affixes(text: str, value: str) -> Affix | None:
    """The text before and after `value` in `text`, when it occurs there once, whole (not inside a word or number)."""
    k = text.find(value)
    if k < 0 or text.find(value, k + 1) >= 0 or len(text) == len(value):
        return None
    before, after = text[:k], text[k + len(value):]
    if (before and before[-1].isalnum()) or (after and after[0].isalnum()):
        return None
    if len(before) + len(after) > MAX_AFFIX or not any(ch.isalpha() for ch in before + after):
        return None
    return before, after


def _by_affix(after: Page, container: int, value: str, attr: str | None) -> dict[Affix, int]:
    """Each affix the old value carries in the container, with the deepest node carrying it."""
    out: dict[Affix, int] = {}
    for i in range(container + 1, after.end[container]):
        text = after.value(i, attr)
        if not text or value not in text:
            continue
        aff = _affixes(text, value)
        if aff is not None:
            out[aff] = i   # document order: a later node with the same text is a descendant
    return out


def merged_label_field(after: Page, containers: list[int], wants: list, spec: FieldSpec, name: str,
                       fp: Fingerprint | None) -> tuple[str, str | None, str, dict] | None:
    """A selector reading each record's old value with the same label merged in, or None."""
    if spec.attr is not None:
        return None
    every = [k for k in range(len(containers)) if wants[k]]
    sample = _spread(every, SAMPLE)
    if len(sample) < 2:
        return None
    per: list[dict[Affix, int]] = [_by_affix(after, containers[k], wants[k], None) for k in sample]
    common = set(per[0])
    for d in per[1:]:
        common &= set(d)
    # a wrapper holding the labelled node (a card's pair: its key, then the value) carries the old
    # value too, with more around it: the innermost node is the field's
    common = {a for a in common
              if not any(b != a and all(after.contains(d[a], d[b]) for d in per) for b in common)}
    if len(common) != 1:
        return None   # none, or two texts around the values alike in every record: ambiguous
    aff = next(iter(common))
    found = [(containers[k], d[aff]) for k, d in zip(sample, per)]
    c0, t0 = found[0]
    for sel in relative_selectors(after, c0, t0)[:MAX_FIELD_SELECTORS]:
        css = sel.css()
        if not all(lexbor_first_in(after, c, css) == t for c, t in found):
            continue
        # every record: the selector's node says that record's old value with the same label
        hits = 0
        for k in every:
            node = lexbor_first_in(after, containers[k], css)
            if node is not None and after.value(node, None) == aff[0] + wants[k] + aff[1]:
                hits += 1
        if hits < max(2, round(0.8 * len(every))):
            return None
        label = norm_label(aff[0] + " " + aff[1])
        named = words(label) & (words(name) | (words(fp.label) if fp is not None else set()))
        conf = CONFIDENT if named else UNNAMED
        sim = (sum(similarity(fp, after, t) for _, t in found) / len(found)) if fp is not None else 0.0
        return "healed", css, (f"old values found with the same label merged in every record "
                               f"({aff[0]!r} … {aff[1]!r})"), {"selector": css, "likeness": round(sim, 3),
                                                              "confidence": conf}
    return None


RIVAL_MARGIN = 0.15     # a merged-label place this much more like the old node than the exact one makes it doubtful


def merged_rival(after: Page, fp: Fingerprint, value: str, attr: str | None, best: int, best_sim: float) -> int | None:
    """On a single record: a node saying the old value with a label merged in ("Next: Foo"), clearly more
    like the old node than the place found saying it exactly (a link in a table of contents), or None.

    The value found exactly elsewhere is then as likely chance as the field: the caller refuses.
    """
    if attr is not None:
        return None
    mine = set(after.chain_members(best))
    for i, _closeness in after.near(value, None, None, limit=20):
        if i in mine or after.contains(i, best) or _affixes(after.texts[i], value) is None:
            continue
        if similarity(fp, after, i) >= best_sim + RIVAL_MARGIN:
            return i
    return None
