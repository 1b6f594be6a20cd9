"""The single-record healer's candidates: the places on the current page that may carry a field.

The old value found exactly or nearly (one candidate per visible text, its likeliest node),
nodes named by the old label, each scored by likeness to the old node; look-alikes of nodes
the old selector passed over dropped, and copies of one block folded.
"""

from __future__ import annotations

from dataclasses import dataclass

from healerd.core.heal.evidence import (
    MAX_VALUE_HITS,
    TWIN_MARGIN,
    copies,
)
from healerd.core.heal.fields.own_text import own_text_bonus
from healerd.core.heal.page.fingerprint import (
    Fingerprint,
    Page,
    fingerprint,
    norm_label,
    similarity,
    text_shape,
)
from healerd.core.heal.page.in_body import in_body_unless_head


@dataclass
class Candidate:
    node: int
    score: float          # combined: value evidence + label + structure
    sim: float            # structural likeness 0..1
    label_match: bool
    kind: str             # exact | near | label | current | shared
    closeness: float = 1.0


def _distractors(before: Page, old_node: int | None, value: str | None, attr: str | None) -> list[Fingerprint]:
    """Fingerprints of the other nodes of the last good page that carried the field's value (and were not chosen)."""
    if old_node is None or not value:
        return []
    chain = set(before.chain_members(old_node)) if not attr else {old_node}
    out = []
    for i in before.exact(value, attr)[:MAX_VALUE_HITS * 3]:
        if i in chain or (not attr and (before.contains(i, old_node) or before.contains(old_node, i))):
            continue
        out.append(fingerprint(before, i, value))
    return out


def _without_distractor_twins(fp: Fingerprint, distractors: list[Fingerprint], after: Page, attr: str | None,
                              cands: list[Candidate]) -> list[Candidate]:
    """Drop candidates that look more like a node the old selector did *not* pick than like the one it did.

    The last good page already had those look-alikes (a navigation link with the same href, the
    <link rel=prev> in the head) and the blueprint passed them over; their counterparts on the
    current page are passed over too. When every candidate is such a twin, none is dropped.
    """
    if not distractors or len(cands) < 2:
        return cands
    kept = []
    for c in cands:
        v = after.value(c.node, None) if attr else None
        twin = max(similarity(d, after, c.node, v) for d in distractors)
        if twin <= c.sim + TWIN_MARGIN:
            kept.append(c)
    return kept or cands


def _without_copies(after: Page, cands: list[Candidate], value: str) -> list[Candidate]:
    """Fold candidates that sit in copies of one block (a layout rendered twice: mobile and desktop).

    Two candidates are copies when the same path of tags and classes leads up to two disjoint
    ancestors (the highest such pair, or the nodes themselves) whose whole texts are equal and
    say more than the value: the same content twice,
    not two fields that happen to hold the same value now. The first in document order stands
    for the copies (it is the one a selector's first match gives).
    """
    if len(cands) < 2:
        return cands
    out: list[Candidate] = []
    for c in sorted(cands, key=lambda c: c.node):
        if not any(copies(after, k.node, c.node, value) for k in out):
            out.append(c)
        else:
            k = next(k for k in out if copies(after, k.node, c.node, value))
            k.score = max(k.score, c.score)
    out.sort(key=lambda c: (-c.score, c.node))
    return out


def _score(fp: Fingerprint, after: Page, i: int, value_weight: float, attr: str | None, partner_values: dict) -> Candidate:
    sim = similarity(fp, after, i, after.value(i, None) if attr else None)
    label_match = bool(fp.label) and after.label(i) == fp.label
    bonus = 0.0
    for pattr, pval in partner_values.items():
        if pval is not None and after.value(i, pattr) == pval:
            bonus += 0.3
    bonus += own_text_bonus(fp, after, i, attr)
    score = value_weight + sim + (0.5 if label_match else 0.0) + bonus
    return Candidate(i, score, sim, label_match, "exact")


def _best_of_chain(fp: Fingerprint, after: Page, members: list[int], attr, partner_values, weight) -> Candidate:
    cands = [_score(fp, after, m, weight, attr, partner_values) for m in members]
    cands.sort(key=lambda c: (-c.score, -after.depth[c.node]))
    return cands[0]


def _exact_candidates(fp, value, attr, after: Page, partner_values, within) -> list[Candidate]:
    hits = after.exact(value, attr, within)
    out: list[Candidate] = []
    if attr:
        out = [_score(fp, after, i, 2.0, attr, partner_values) for i in hits[:50]]
    else:
        seen: set[int] = set()
        for i in hits:
            if i in seen:
                continue
            members = after.chain_members(i)
            seen.update(members)
            out.append(_best_of_chain(fp, after, members, attr, partner_values, 2.0))
            if len(out) >= 50:
                break
    out = in_body_unless_head(after, fp, out, lambda c: c.node)
    out.sort(key=lambda c: (-c.score, c.node))
    return out


def _near_candidates(fp, value, attr, after: Page, partner_values, within) -> list[Candidate]:
    out: list[Candidate] = []
    seen: set[int] = set()
    for i, closeness in after.near(value, attr, within):
        if i in seen:
            continue
        members = [i] if attr else after.chain_members(i)
        seen.update(members)
        c = _best_of_chain(fp, after, members, attr, partner_values, 1.0 + closeness)
        c.kind, c.closeness = "near", closeness
        out.append(c)
    out = in_body_unless_head(after, fp, out, lambda c: c.node)
    out.sort(key=lambda c: (-c.score, c.node))
    return out


def _label_candidates(fp: Fingerprint, attr: str | None, after: Page) -> list[Candidate]:
    """Nodes named by the old label (value changed): near the label text, same label, scored by likeness."""
    if not fp.label or fp.label_kind not in ("column", "for", "dt", "label"):
        return []
    label_nodes = [i for t, idxs in after.text_index.items() if len(t) <= 60 and norm_label(t) == fp.label for i in idxs]
    region: list[int] = []
    for ln in label_nodes[:20]:
        for start in (ln, after.parent[ln]):
            if start < 0 or after.parent[start] < 0:
                continue
            sibs = after.children[after.parent[start]]
            k = sibs.index(start)
            for s in sibs[k + 1:k + 3]:
                region.extend(range(s, min(after.end[s], s + 30)))
        if after.tags[ln] == "th":
            table = ln
            while table >= 0 and after.tags[table] != "table":
                table = after.parent[table]
            if table >= 0:
                region.extend(j for j in range(table, min(after.end[table], table + 400)) if after.tags[j] in ("td", "th"))
    out: list[Candidate] = []
    for i in sorted(set(region)):
        if after.label(i) != fp.label:
            continue
        value = after.value(i, attr)
        if not value or text_shape(value) != fp.shape or value == fp.label:
            continue
        sim = similarity(fp, after, i)
        out.append(Candidate(i, 0.5 + sim, sim, True, "label"))
    # one candidate per visible text occurrence: keep the likeliest node of each chain
    best: dict[int, Candidate] = {}
    for c in out:
        top = after.chain_members(c.node)[0] if not attr else c.node
        if top not in best or c.score > best[top].score:
            best[top] = c
    return sorted(best.values(), key=lambda c: (-c.score, c.node))
