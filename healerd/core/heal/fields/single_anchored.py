"""A single record's field whose own value changed, placed through the fields found by value.

A redesign may change a field's value along with the layout (a stock count bumped, an author's
name edited): the old value is nowhere on the page, and the healer refuses the field. But the
record's other fields were found again by their values, and on the last good page each of them
reached the field's old node by a path of child positions (`page.positions.relative_path`: down from
their common ancestor, wrappers that are only children left out). When the same path from every
such anchor leads, on the current page, to one node — the same one from every anchor — and that
node says new text of the old kind (text the last good page did not show anywhere, not another
field's node nor nested in one, not named by another label than the old node), it is the field.

A field whose data is gone leaves a neighbour in its place (another field's node, a label kept
from the old page, an empty cell, the sentence the value sat in): its text is old text, holds the
old node's surrounding words, or is none, and the refusal stays. The
evidence is structure, not the value: the placement's confidence stays under the Deployer's
promotion threshold (`verdict.corroboration` may corroborate the heal, as for any changed value).
"""

from __future__ import annotations

from healerd.core.blueprint import Blueprint
from healerd.core.heal.evidence import MIN_VALUE, OldText, relabelled, value_kind
from healerd.core.heal.fields.single_candidates import Candidate
from healerd.core.heal.page.fingerprint import Fingerprint, Page, collapse, similarity
from healerd.core.heal.page.positions import relative_path

GONE = "the old value is nowhere on the page"   # the refusal this settles (single_record's words)
KIND = "anchored"      # evidence kind: single_record's _confidence gives it 0.4 + 0.3 * likeness (< 0.75)
EXTRA_LEVELS = 2       # wrappers a redesign may add above the common ancestor of the anchor and the field
MIN_AROUND = 4         # characters of the old parent's own text that, found in the new value, show the parent read
MAX_SCOPE = 5000       # nodes searched at most around an anchor (a page's whole body is no record)


def _anchors(bp: Blueprint, after: Page, old_nodes: dict, old_raw: dict, decisions: dict) -> dict[str, tuple[int, int]]:
    """Fields found again by their old values: name -> (old node, new node)."""
    out: dict[str, tuple[int, int]] = {}
    for name, (status, cand, _why) in decisions.items():
        old, value = old_nodes.get(name), old_raw.get(name)
        if old is None or not value:
            continue
        node = None
        if status == "healed" and cand is not None and cand.kind in ("exact", "record"):
            node = cand.node
        elif status == "kept" and (css := bp.fields[name].css) is not None:
            node = after.first_in(0, css)
        if node is not None and after.value(node, bp.fields[name].attr) == value:
            out[name] = (old, node)
    return out


def _levels(page: Page, anchor: int, node: int) -> int:
    """Steps up from `anchor` to the lowest ancestor holding `node`."""
    top, k = anchor, 0
    while top >= 0 and not page.contains(top, node):
        top, k = page.parent[top], k + 1
    return k


def _innermost(page: Page, nodes: list[int]) -> list[int]:
    """The nodes that hold none of the others (a wrapper that is an only child's parent is the same place)."""
    return [i for i in nodes if not any(j != i and page.contains(i, j) for j in nodes)]


def _said_around(page: Page, old: int, was: str) -> list[str]:
    """The text the old node's parent said around the old value (the sentence a name sat in), in pieces."""
    parent = page.parent[old]
    if parent < 0:
        return []
    around = collapse(page.texts[parent]).split(was) if was else []
    return [piece for p in around if len(piece := p.strip()) >= MIN_AROUND]


def _follow(before: Page, a_old: int, old: int, after: Page, a_new: int) -> list[int]:
    """The nodes on the current page that sit relative to `a_new` as `old` sat relative to `a_old`."""
    want = relative_path(before, a_old, old)
    top = a_new
    for _ in range(_levels(before, a_old, old) + EXTRA_LEVELS):
        if after.parent[top] < 0:
            break
        top = after.parent[top]
    if after.end[top] - top > MAX_SCOPE:
        return []
    return [i for i in range(top, after.end[top])
            if i != a_new and not after.contains(i, a_new) and relative_path(after, a_new, i) == want]


def agreed_node(before: Page, old: int, after: Page, anchors: list[tuple[int, int]], attr: str | None) -> int | None:
    """The one node giving a value that every anchor (old node, new node) reaches by its old path to `old`."""
    if not anchors:
        return None
    found: set[int] | None = None
    for a_old, a_new in anchors:
        nodes = _follow(before, a_old, old, after, a_new)
        hits = set(_innermost(after, [i for i in nodes if after.value(i, attr)]))
        found = hits if found is None else found & hits
        if not found:
            return None
    return next(iter(found)) if found and len(found) == 1 else None


def acceptable(before: Page, old: int, was: str, after: Page, node: int, value: str, others: list[int],
               old_text: OldText) -> bool:
    """New text of the old kind at `node`, no other field's node, not its old parent's sentence, not relabelled."""
    if len(value) < MIN_VALUE or value_kind(value) != value_kind(collapse(was)):
        return False
    if old_text.holds(value):
        return False      # old text: a neighbour, a label or a copy in the removed field's place
    if any(piece in value for piece in _said_around(before, old, collapse(was))):
        return False      # the old node's parent read (the value taken out of its sentence): a container
    if any(n == node or after.contains(n, node) or after.contains(node, n) for n in others):
        return False      # another field's node, or one holding it
    return not relabelled(before, old, after, node)   # named by another column header or label: another field


def place_by_anchors(bp: Blueprint, before: Page, after: Page, old_nodes: dict, old_raw: dict,
                     fps: dict[str, Fingerprint], decisions: dict) -> dict[str, tuple[Candidate, str]]:
    """Fields refused because their old value is gone, placed through the fields found again: name -> (candidate, why)."""
    anchors = _anchors(bp, after, old_nodes, old_raw, decisions)
    if not anchors:
        return {}
    old_text = OldText(before)
    placed: dict[str, tuple[Candidate, str]] = {}
    for name, (status, _cand, why) in decisions.items():
        spec = bp.fields[name]
        old, was = old_nodes.get(name), old_raw.get(name)
        if status != "gone" or why != GONE or old is None or not isinstance(was, str) or name not in fps:
            continue
        mine = {a: n for a, n in anchors.items() if a != name and n[0] != old and not before.contains(old, n[0])
                and not before.contains(n[0], old)}
        node = agreed_node(before, old, after, list(mine.values()), spec.attr)
        if node is None:
            continue
        value = collapse(after.value(node, spec.attr))
        if not acceptable(before, old, was, after, node, value, [n for _o, n in anchors.values()], old_text):
            continue
        sim = similarity(fps[name], after, node, value)
        cand = Candidate(node, sim, sim, False, KIND)
        placed[name] = (cand, f"{why}; placed as before relative to {', '.join(sorted(mine))} "
                              f"(new value of the old kind, likeness {sim:.2f})")
    return placed
