"""A single record's field read from a copy of a block ("Related", "Recommended", "Recently viewed").

Such a block repeats a few of the record's nodes as the last good page showed them; when the
record's own values change, the copies keep the old ones, and the old value — the healer's
strongest evidence — leads to the copy. What gives the copy away is its twin: a node built like
the one read (same tag, same attribute names, the same child tags in order), not its neighbour in
a list of alike nodes (the two hang differently from the node holding both), saying a value of the
same kind close to the old one (another day's SKU, a name with an edition added) that the last good
page showed nowhere, and whose path from the root (`fields.single_by_path.path_similarity`) is more like the
old node's than the copy's path is: the record's node, its value changed in place. The copy's old
value is stale; the twin is the field by its build and its place, not by its value: the field is
read from the twin when a selector picks it out, at a confidence under the promotion threshold
(`to_twins`: staged for a person, unless `verdict.corroboration` corroborates the place), else the heal is
refused naming the field (a stale copy stored as the record is wrong data; a refusal is a person
paged).
The module also covers listings: records moved onto a copy of the list the old items selector
still reads (`copied_records`), and records apart from the list repeating old records whole
(`copied_group`).

The block also gives away a field whose data is gone from the record but not from the copy (a
heading removed, the block still repeating it): when a field's node and one node built alike say
the same value, the one whose path is the less like the old node's is a copy, and its ancestor just
under the nearest node holding both is the block copying the record. Another field read inside that
block, in a slot alike to the copy's (two items of the block's list), whose value nothing outside
the block says, is read from the copy alone: refused.
"""

from __future__ import annotations

from dataclasses import replace
from difflib import SequenceMatcher
from typing import Any

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import coerce
from healerd.core.heal.evidence import HealResult, split_confidence
from healerd.core.heal.fields.single_by_path import path_of, path_similarity
from healerd.core.heal.page.extraction import extract_on
from healerd.core.heal.page.fingerprint import Page, collapse, near_closeness, text_shape
from healerd.core.heal.page.selectors import relaxed_first, single_selector

MIN_KIN_RATIO = 0.5    # a changed value of the same kind: at least this alike, character by character
MAX_TWINS = 400        # nodes of one tag looked at for a twin (a page's links, say)
PATH_EPS = 0.02        # the twin's path must be more like the old node's than the copy's by this much
TWIN_CONFIDENCE = 0.6  # a field moved to its twin: under the Deployer's promotion threshold (staged)


def to_twins(old_bp: Blueprint, new_bp: Blueprint, before: Page, after: Page,
             old_raw: dict) -> tuple[Blueprint, list[str]] | None:
    """The repair with each field read from a stale copy moved to its twin (the record's node, its
    value changed in place), when a selector picks each twin out and nothing else is read from a copy.
    The twin is the field by its build and its place, not by its value: a person approves it."""
    moved: list[str] = []
    bp = new_bp
    for _round in range(len(new_bp.fields)):
        found = _stale_field(old_bp, bp, before, after, old_raw)
        if found is None:
            return (bp, moved) if moved and copied_field(old_bp, bp, before, after, old_raw) is None else None
        name, twin = found
        spec = bp.fields[name]
        old_css = old_bp.fields[name].css or ""
        css = relaxed_first(after, old_css, twin) or single_selector(after, twin, avoid_attr=spec.attr)
        if css is None or name in moved or _first(after, css) != twin:
            return None
        bp = bp.with_fields({**bp.fields, name: FieldSpec(name, css, spec.type, spec.attr, spec.required)})
        moved.append(name)
    return None


def _stale_field(old_bp: Blueprint, new_bp: Blueprint, before: Page, after: Page,
                 old_raw: dict) -> tuple[str, int] | None:
    """(field, its twin) for the first field read from a copy whose own node changed in place, else None."""
    for name, spec in new_bp.fields.items():
        node, value, old_spec = _first(after, spec.css), old_raw.get(name), old_bp.fields.get(name)
        if node is None or old_spec is None or not isinstance(value, str) or not value.strip():
            continue
        if collapse(after.value(node, spec.attr)) != collapse(value):
            continue
        old_node = _first(before, old_spec.css)
        twin = None if old_node is None else _changed_twin(before, old_node, after, node, value, spec)
        if twin is not None:
            return name, twin
    return None


def copied_field(old_bp: Blueprint, new_bp: Blueprint, before: Page, after: Page, old_raw: dict) -> str | None:
    """'field (why)' for the first field the repair reads from a copy of a block, else None."""
    read = {name: _first(after, spec.css) for name, spec in new_bp.fields.items()}
    for name, spec in new_bp.fields.items():
        node, value = read[name], old_raw.get(name)
        old_spec = old_bp.fields.get(name)
        if node is None or old_spec is None or not isinstance(value, str) or not value.strip():
            continue
        if collapse(after.value(node, spec.attr)) != collapse(value):
            continue
        old_node = _first(before, old_spec.css)
        if old_node is None:
            continue
        twin = _changed_twin(before, old_node, after, node, value, spec)
        if twin is not None:
            return (f"{name} (its old value is read from a copy of the record's node: the node built like it "
                    f"where the old one was says {_short(after.value(twin, spec.attr))!r} now)")
        copy = _copy_of(before, old_node, after, node, spec.attr)
        block = None if copy is None else _block_of(after, *copy)
        inside = [n for n, i in read.items() if n != name and i is not None and copy is not None and block is not None
                  and after.contains(block, i) and not after.contains(i, node) and not after.contains(node, i)
                  and _alike_slots(after, i, copy[0]) and _only_in(after, block, i, new_bp.fields[n].attr)]
        if inside:
            return (f"{inside[0]} (it is read from a block copying the record, which alone says its value: "
                    f"the block repeats {name}'s node, less like the old one than the record's own)")
    return None


def _only_in(page: Page, block: int, i: int, attr: str | None) -> bool:
    """Node i's value is said only inside `block` (the record itself no longer says it)."""
    return all(page.contains(block, k) for k in page.exact(page.value(i, attr) or "", attr))


def _copy_of(before: Page, old_node: int, after: Page, node: int, attr: str | None) -> tuple[int, int] | None:
    """(copy, original) when the field's node and one other node built alike say the same value (not
    neighbours in a list): the one whose path is the less like the old node's is the copy. Else None."""
    value, shape = after.value(node, attr), _shape(after, node)
    same = [t for t in after.exact(value or "", attr) if t != node and not after.contains(t, node)
            and not after.contains(node, t) and _shape(after, t) == shape and not _neighbours(after, node, t)]
    if len(same) != 1:
        return None
    old_path = path_of(before, old_node)
    mine, theirs = path_similarity(old_path, path_of(after, node)), path_similarity(old_path, path_of(after, same[0]))
    if abs(mine - theirs) <= PATH_EPS:
        return None
    return (node, same[0]) if theirs > mine else (same[0], node)


def _block_of(page: Page, copy: int, original: int) -> int:
    """The copy's ancestor just under the nearest node holding both: the block copying the record."""
    holders = set(page.ancestors(original))
    block = copy
    while page.parent[block] >= 0 and page.parent[block] not in holders:
        block = page.parent[block]
    return block


def _alike_slots(page: Page, a: int, b: int) -> bool:
    """a and b sit in alike slots of one block: the children of the nearest node holding both that lead
    to them have one tag and the same classes (two items of a 'Related' list), not a heading beside a list."""
    x, y = _block_of(page, a, b), _block_of(page, b, a)
    return x != y and page.parent[x] == page.parent[y] and page.tags[x] == page.tags[y] \
        and page.classes(x) == page.classes(y)


def _first(page: Page, css: str | None) -> int | None:
    if not css:
        return None
    try:
        return page.index_of(page.tree.css_first(css))
    except Exception:   # a selector lexbor cannot read finds nothing
        return None


def _shape(page: Page, i: int) -> tuple:
    return page.tags[i], frozenset(page.attrs[i]), tuple(page.tags[c] for c in page.children[i])


def _kin(old: str, new: str, spec: FieldSpec) -> bool:
    """`new` is another value of `old`'s kind, close to it (a changed value, not any value)."""
    old, new, attr = collapse(old), collapse(new), spec.attr
    if not new or new == old or (spec.type != "str" and coerce(new, spec.type) == coerce(old, spec.type)):
        return False
    if near_closeness(old, new, attr):
        return True
    return text_shape(old) == text_shape(new) and SequenceMatcher(None, old, new).ratio() >= MIN_KIN_RATIO


def _changed_twin(before: Page, old_node: int, after: Page, node: int, value: str, spec: FieldSpec) -> int | None:
    """The node built like `node`, saying a changed value, where the old node was (its path more alike).

    A changed value is one the last good page did not show anywhere: a value it showed belongs to
    another node (another row's price), not to this one changed in place. A number field's value
    is its first number: a label merged into the text ("Mean level: 72.76") changes no number."""
    attr = spec.attr
    shape = _shape(after, node)
    same_tag = after.by_tag.get(after.tags[node], [])
    if len(same_tag) > MAX_TWINS:
        return None
    twins = [t for t in same_tag
             if t != node and not after.contains(t, node) and not after.contains(node, t)
             and _shape(after, t) == shape and _kin(value, after.value(t, attr) or "", spec)
             and not _neighbours(after, node, t) and not before.exact(after.value(t, attr) or "", attr)]
    if not twins:
        return None
    old_path = path_of(before, old_node)
    own = path_similarity(old_path, path_of(after, node))
    best = max(twins, key=lambda t: path_similarity(old_path, path_of(after, t)))
    return best if path_similarity(old_path, path_of(after, best)) > own + PATH_EPS else None


def _neighbours(page: Page, a: int, b: int) -> bool:
    """a and b hang alike from the nearest node holding both (two rows of one list), not as a copy elsewhere."""
    up_a, up_b = [a, *page.ancestors(a)], set(page.ancestors(b))
    top = next((x for x in up_a if x in up_b), -1)

    def steps(i: int) -> list[str]:
        out = []
        while i != top and i >= 0:
            out.append(page.tags[i])
            i = page.parent[i]
        return out
    return steps(a) == steps(b)


def _short(value: str | None, n: int = 40) -> str:
    v = collapse(value)
    return v if len(v) <= n else v[: n - 1] + "…"


def copied_records(old_bp: Blueprint, new_bp: Blueprint, before: Page, after: Page,
                   old_raw: list) -> tuple[str, bool] | None:
    """(why, in place) when the repair's records are a copy of the list the old items selector still reads.

    The repair moved the records to containers holding the old values, while the old items selector
    still reads as many records as the last good page had, apart from them and built like them,
    each holding its old values changed or with words added (another day's names, a label merged
    in): the records changed in place and the repair read a block carrying copies of them. In place
    when every field's old selector reads its value so in every record: the old blueprint still works.
    """
    if not old_bp.items or not new_bp.items or new_bp.items == old_bp.items or not old_raw:
        return None
    kept, moved = after.all_matching(old_bp.items), after.all_matching(new_bp.items)
    olds = before.all_matching(old_bp.items)
    if len(kept) != len(old_raw) or not moved or len(moved) > len(kept) or not olds:
        return None
    if any(after.contains(k, m) or after.contains(m, k) for k in kept for m in moved):
        return None
    shapes = {_shape(after, k) for k in kept}
    if any(_shape(after, m) not in shapes for m in moved):
        return None
    changed, in_place = 0, True
    for rec, old in zip(kept, old_raw, strict=True):
        for name, spec in old_bp.fields.items():
            value = old.get(name)
            if not isinstance(value, str) or not value.strip():
                continue
            said = _record_says(after, rec, spec, value)
            if said is None:
                return None
            changed += said[0]
            in_place = in_place and said[1]
    if not changed:
        return None
    old_path = path_of(before, olds[0])
    if path_similarity(old_path, path_of(after, kept[0])) <= path_similarity(old_path, path_of(after, moved[0])):
        return None
    return (f"items (the records the repair reads are a copy of the list '{old_bp.items}' still reads, "
            "where the records' values changed in place)"), in_place


def _record_says(after: Page, rec: int, spec: FieldSpec, value: str) -> tuple[int, bool] | None:
    """(0 the record says the old value, 1 a changed one close to it; read by the field's selector), or None."""
    node = after.first_in(rec, spec.css) if spec.css else None
    by_selector = node is not None
    texts = [after.value(node, spec.attr) or ""] if node is not None else \
        [after.value(i, spec.attr) or "" for i, _c in after.near(value, spec.attr, within=rec, limit=3)]
    if any(collapse(t) == collapse(value) for t in texts):
        return 0, by_selector
    return (1, by_selector) if any(_kin(value, t, spec) for t in texts) else None


def copied_group(old_bp: Blueprint, new_bp: Blueprint, before: Page, after: Page, old_raw: list,
                 got: list) -> str | None:
    """Why the repaired listing reads, besides its records, a block of copies of old records, else None.

    The records now sit under one parent more than on the last good page; the records under the
    parent least like any old records' parent (by path from the root) each repeat an old record whole
    (every field's old value): a "Recommended" list copying records, not records. Read as records,
    the copies would be stored twice or stale (the records' own values changed since).
    """
    if not old_bp.items or not new_bp.items or not isinstance(got, list) or not old_raw:
        return None
    olds, news = before.all_matching(old_bp.items), after.all_matching(new_bp.items)
    if len(news) <= len(olds) or len(news) != len(got):
        return None
    old_parents = {before.parent[c] for c in olds}
    groups: dict[int, list[int]] = {}
    for k, c in enumerate(news):
        groups.setdefault(after.parent[c], []).append(k)
    if len(groups) <= len(old_parents):
        return None
    old_paths = [path_of(before, p) for p in old_parents if p >= 0]
    if not old_paths:
        return None

    def likeness(parent: int) -> float:
        mine = path_of(after, parent)
        return max(path_similarity(o, mine) for o in old_paths)

    ranked = sorted(groups, key=likeness)
    worst, runner = ranked[0], ranked[1]
    if likeness(runner) - likeness(worst) <= PATH_EPS:
        return None
    names = [n for n in old_bp.fields if any(isinstance(r.get(n), str) and r.get(n) for r in old_raw)]
    wholes = {tuple(collapse(r.get(n)) for n in names) for r in old_raw}
    if not names or any(tuple(collapse(got[k].get(n)) for n in names) not in wholes for k in groups[worst]):
        return None
    return (f"items ({len(groups[worst])} of the records read sit apart from the others, each repeating an old "
            "record whole: a block copying the records)")


def moved_to_twins(res: HealResult, bp: Blueprint, moved: list[str], after: Page) -> tuple[HealResult, Any]:
    """The heal with the fields read from stale copies moved to their twins, staged for a person."""
    why = (f"{', '.join(moved)}: the old value is left only in a copy of a block; read where the record's "
           "own node, built alike, now says a changed value")
    conf = min(res.confidence, TWIN_CONFIDENCE)
    changed = {**res.changed, **{n: bp.fields[n].css or "" for n in moved}}
    head, _confidence = split_confidence(res.reason)
    res = replace(res, blueprint=bp, changed=changed, confidence=conf,
                  reason=f"{head}; {why} (confidence {conf:.2f})")
    return res, extract_on(after, bp).raw


def copied(bp: Blueprint, new_bp: Blueprint, before: Page, after: Page, old_raw: Any) -> tuple[str, bool] | None:
    """(why, the old blueprint still works) when the repair reads a copy of a block (`block_copies`)."""
    if bp.items:
        return copied_records(bp, new_bp, before, after, old_raw)
    field = copied_field(bp, new_bp, before, after, old_raw)
    return None if field is None else (field, False)
