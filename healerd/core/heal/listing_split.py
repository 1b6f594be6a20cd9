"""Records left out of the containers found: a listing in more than one place keeps them all.

A blog's index shows a featured post apart (`aside > article`) and the others in a list
(`ol > li > article`); the old items selector read both. When the containers found by the old
values are of one kind only (the list), the records sitting elsewhere (the featured post) would be
dropped from every scrape after the heal. Each record left out whose old values are still on the
page, together in a block holding no other record's values, is taken back: every record's node of
the old items' tag, read by one selector per place joined with commas (in document order, as lexbor
gives them). When that cannot be done the heal is refused: dropping records is a wrong heal.
"""

from __future__ import annotations

from healerd.core.blueprint import Blueprint
from healerd.core.heal.fingerprint import Page
from healerd.core.heal.listing_containers import _distinctive
from healerd.core.heal.selectors import _lexbor_ok, items_selector

MAX_PLACES = 3       # comma-separated places an items selector may read


def _sig(page: Page, i: int) -> tuple:
    p = page.parent[i]
    return (page.tags[i], page.tags[p] if p >= 0 else "", tuple(sorted(page.classes(p))) if p >= 0 else (),
            page.attrs[p].get("id") if p >= 0 else None)


def old_list_in_places(before: Page, old_containers: list[int]) -> bool:
    """The old items selector read records in more than one kind of place (different parents)."""
    return len({_sig(before, c)[1:] for c in old_containers}) > 1


def _values_block(after: Page, old_raw: list, k: int, bp: Blueprint, outside: list[int]) -> list[int] | None:
    """One node per field still carrying record k's old value outside the `outside` containers.

    Only values no other record shares (an author of many posts is found in every block); None
    unless most of them (two at least, when the record had two) are found (some may have changed).
    """
    hits, wanted = [], 0
    for name, spec in bp.fields.items():
        v = old_raw[k].get(name)
        if not v or not _distinctive(old_raw, name)[k]:
            continue
        wanted += 1
        found = [h for h in after.exact(v, spec.attr) if not any(after.contains(c, h) for c in outside)]
        if found:
            hits.append(found[0])
    if not hits or len(hits) < min(2, wanted) or len(hits) * 2 < wanted:
        return None
    return hits


def _holds_others(after: Page, node: int, k: int, old_raw: list, bp: Blueprint) -> bool:
    """Node holds a value only another record had (values several records share say nothing)."""
    mine = {v for v in old_raw[k].values() if v}
    telling = {name: _distinctive(old_raw, name) for name in bp.fields}
    return any(after.exact(v, spec.attr, within=node)
               for j, rec in enumerate(old_raw) if j != k
               for name, spec in bp.fields.items()
               for v in [rec.get(name)] if v and v not in mine and telling[name][j])


def _item_node(after: Page, hits: list[int], tag: str, k: int, old_raw: list, bp: Blueprint,
               top: int | None) -> int | None:
    """The outermost node of `tag` around the record's values (inside `top`) holding no other record's values."""
    a = hits[0]
    while a >= 0 and not all(after.contains(a, h) for h in hits):
        a = after.parent[a]
    best = None
    while a >= 0 and (top is None or after.contains(top, a)):
        if after.tags[a] == tag:
            if _holds_others(after, a, k, old_raw, bp):
                break
            best = a
        a = after.parent[a]
    return best


def take_back_left_out(after: Page, tag: str, containers: list[int], records: list[int], old_raw: list,
                       bp: Blueprint) -> tuple[list[int], list[int], str] | str | None:
    """(item nodes, records, selector) taking back the records left out; a reason to refuse; None when none is left out."""
    left = [k for k in range(len(old_raw)) if k not in set(records)]
    back: dict[int, int] = {}
    for k in left:
        hits = _values_block(after, old_raw, k, bp, containers)
        if hits is None:
            continue
        block = hits[0]
        while block >= 0 and not all(after.contains(block, h) for h in hits):
            block = after.parent[block]
        if block < 0 or _holds_others(after, block, k, old_raw, bp):
            continue
        node = _item_node(after, hits, tag, k, old_raw, bp, None)
        if node is None:
            return f"record {k + 1}'s old values are still on the page outside the containers found"
        back[k] = node
    if not back:
        return None
    pairs: dict[int, int] = dict(back)
    for c, k in zip(containers, records):
        hits = [h for name, spec in bp.fields.items() if old_raw[k].get(name)
                for h in after.exact(old_raw[k][name], spec.attr, within=c)[:1]]
        node = _item_node(after, hits, tag, k, old_raw, bp, c) if hits else None
        if node is None:
            return f"the records sit in more than one place and record {k + 1} has no <{tag}> of its own"
        pairs[k] = node
    ordered = sorted((n, k) for k, n in pairs.items())
    nodes = [n for n, _k in ordered]
    if len(set(nodes)) != len(nodes):
        return "the records sit in more than one place and two of them share a node"
    groups: dict[tuple, list[int]] = {}
    for n in nodes:
        groups.setdefault(_sig(after, n), []).append(n)
    if len(groups) > MAX_PLACES:
        return f"the records sit in {len(groups)} places"
    parts = []
    for group in groups.values():
        css = items_selector(after, group)
        if css is None:
            return "the records sit in more than one place and no selector picks out one of them"
        parts.append(css)
    css = ", ".join(parts)
    if not _lexbor_ok(css) or [after.index_of(n) for n in after.tree.css(css)] != nodes:
        return "the records sit in more than one place and no selector reads them all in order"
    return nodes, [k for _n, k in ordered], css
