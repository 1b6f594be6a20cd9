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
from healerd.core.heal.evidence import CONTEXT_MARGIN, is_weak
from healerd.core.heal.page.fingerprint import Page, jaccard
from healerd.core.heal.page.selectors import _lexbor_ok, items_selector
from healerd.core.heal.records.containers import _context_words, _distinctive

MAX_PLACES = 3       # comma-separated places an items selector may read


def _sig(page: Page, i: int) -> tuple:
    p = page.parent[i]
    return (page.tags[i], page.tags[p] if p >= 0 else "", tuple(sorted(page.classes(p))) if p >= 0 else (),
            page.attrs[p].get("id") if p >= 0 else None)


def old_list_in_places(before: Page, old_containers: list[int]) -> bool:
    """The old items selector read records in more than one kind of place (different parents)."""
    return len({_sig(before, c)[1:] for c in old_containers}) > 1


def _left_out_node(after: Page, tag: str, k: int, old_raw: list, bp: Blueprint, containers: list[int],
                   old_context: set[str]) -> int | str | None:
    """Record k's node of `tag` outside the containers found, or a reason to refuse, or None.

    Only values no other record shares count (an author of many posts is in every block). Each
    value found outside the containers lies in a block: the widest node around it holding no other
    record's value and no container. A block holding half of the record's values (two when it had
    two, or one long value not found by chance) is the record's. None when no block is; a reason
    when the record's block holds no node of `tag`, or when two blocks are and their surroundings
    do not tell which one is like the old record's (a "related" block copying it).
    """
    wanted = 0
    blocks: dict[int, set[str]] = {}
    for name, spec in bp.fields.items():
        v = old_raw[k].get(name)
        if not v or not _distinctive(old_raw, name)[k]:
            continue
        wanted += 1
        for h in after.exact(v, spec.attr):
            if any(after.contains(c, h) or after.contains(h, c) for c in containers):
                continue
            b = h
            while True:
                p = after.parent[b]
                if p < 0 or any(after.contains(p, c) for c in containers) or _holds_others(after, p, k, old_raw, bp):
                    break
                b = p
            if not _holds_others(after, b, k, old_raw, bp):
                blocks.setdefault(b, set()).add(v)

    def enough(vs: set[str]) -> bool:
        return len(vs) * 2 >= wanted and (len(vs) >= min(2, wanted) or any(len(v) >= 8 and not is_weak(v) for v in vs))
    good = [b for b, vs in blocks.items() if enough(vs)]
    if not good:
        return None
    nodes = []
    for b in good:
        inner = [i for i in range(b, after.end[b]) if after.tags[i] == tag]
        if not inner:
            return f"record {k + 1}'s old values are still on the page outside the containers found"
        nodes.append(inner[0])
    if len(nodes) == 1:
        return nodes[0]
    likeness = sorted(((jaccard(old_context, _context_words(after, n)), n) for n in nodes), reverse=True)
    if likeness[0][0] - likeness[1][0] >= CONTEXT_MARGIN:
        return likeness[0][1]
    return f"record {k + 1}'s values are in {len(nodes)} places outside the containers found"


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


def take_back_left_out(before: Page, old_containers: list[int], after: Page, containers: list[int],
                       records: list[int], old_raw: list, bp: Blueprint) -> tuple[list[int], list[int], str] | str | None:
    """(item nodes, records, selector) taking back the records left out; a reason to refuse; None when none is left out."""
    tag = before.tags[old_containers[0]]
    left = [k for k in range(len(old_raw)) if k not in set(records)]
    back: dict[int, int] = {}
    for k in left:
        node = _left_out_node(after, tag, k, old_raw, bp, containers,
                              _context_words(before, old_containers[k]) if k < len(old_containers) else set())
        if isinstance(node, str):
            return node
        if node is not None:
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
    # the records the containers found are one place (whatever their classes); those taken back,
    # one place per kind of node and parent
    groups: dict[tuple, list[int]] = {("found",): sorted(pairs[k] for k in records)}
    for n in sorted(back.values()):
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
