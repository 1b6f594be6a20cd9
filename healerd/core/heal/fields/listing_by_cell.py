"""A listing field's short values placed by their cell, when the fields found by value show the cells kept their order.

A table's rows rewritten as a grid of divs or as cards (`<tr>` → `<div>`, each `<td>` a `<div>` or a
labelled pair) keep one child per old cell, in the old order; the tag and the classes of every node
changed, so a short value ("12", "Team") found again in every record is "in an unlike place" and, with
nothing naming it (no header, no label), refused. The record's other fields, found by long values
no chance repeats, show how the old cells map onto the new children: when each of them sits, in
every sampled record, under the child at its old cell's index, and the record has as many children
as the old row had cells, the short field's node under its own old cell's index is the field's too.

Only a check of what `listing_by_value` proposed (the selector giving most records' values), and only
when the containers hold every last good record, each once (a "related" block copying some of them
is no grid of the records): a record whose value is not there, a field found by value in another cell, a record of another width, a node
labelled as another field was, a cell saying more than the value ("3 reviews"; a card's labelled pair
says its key too), and the field stays refused. Text fields only. The evidence is the place and the value, not a name: the heal is staged
(confidence `ALIGNED_CONFIDENCE`, under the Deployer's promotion bar) for a person to approve.
"""

from __future__ import annotations

from healerd.core.blueprint import Blueprint
from healerd.core.heal.evidence import SAMPLE, is_weak
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.page.selectors import lexbor_first_in
from healerd.core.heal.records.old_kinds import _spread

ALIGNED_CONFIDENCE = 0.7
MIN_SAMPLED = 2       # records checked at least (fewer: no alignment can be seen)


def _cell(page: Page, container: int, node: int | None) -> int | None:
    """The index of the container's child holding `node` (None when it is not strictly inside)."""
    if node is None or node == container or not page.contains(container, node):
        return None
    a = node
    while page.parent[a] != container:
        a = page.parent[a]
    return page.children[container].index(a)


def aligned_cell(before: Page, old_containers: list[int], after: Page, containers: list[int], records: list[int],
                 old_raw: list, bp: Blueprint, name: str, css: str, found: dict[str, str]) -> str | None:
    """Why `css` reads field `name` in its old cell (one line), or None when the cells do not show it.

    `found`: the other fields' new selectors, healed or kept; those with long old values (not all
    short ones, found by chance) are the anchors.
    """
    if len(old_containers) != len(old_raw) or len(containers) != len(records) or sorted(records) != list(range(len(old_raw))):
        return None     # every last good record found again, once: a block copying some of them is no grid of them
    anchors = [f for f, f_css in found.items() if f != name and _long_values(old_raw, f)]
    if not anchors:
        return None
    sample = _spread(list(range(len(containers))), SAMPLE)
    if len(sample) < MIN_SAMPLED:
        return None
    spec = bp.fields[name]
    if spec.css is None or spec.attr is not None or any(bp.fields[f].css is None for f in anchors):
        return None
    old_css = {f: bp.fields[f].css or "" for f in [name, *anchors]}
    width = len(before.children[old_containers[records[sample[0]]]])
    cell: int | None = None
    moved_anchor = False
    others = _old_labels(before, old_containers[records[sample[0]]], bp, name)
    for k in sample:
        r = records[k]
        old_c, new_c = old_containers[r], containers[k]
        if not before.children[old_c] or len(before.children[old_c]) != len(after.children[new_c]):
            return None
        want = old_raw[r].get(name)
        node = lexbor_first_in(after, new_c, css)
        old_cell = _cell(before, old_c, before.first_in(old_c, old_css[name]))
        if not want or node is None or after.value(node, spec.attr) != want or old_cell is None:
            return None
        if _cell(after, new_c, node) != old_cell or cell not in (None, old_cell) or after.label(node) in others:
            return None     # another cell, or a label that named another field
        if not (_whole_cell(before, before.children[old_c][old_cell], want)
                and _whole_cell(after, after.children[new_c][old_cell], want, node)):
            return None     # the value is part of the cell's text ("3 reviews"): another thing
        cell = old_cell
        for f in anchors:
            old_f = _cell(before, old_c, before.first_in(old_c, old_css[f]))
            new_f = _cell(after, new_c, lexbor_first_in(after, new_c, found[f]))
            if old_f is None or new_f != old_f:
                return None
            moved_anchor = moved_anchor or old_f != old_cell
    if not moved_anchor or cell is None:
        return None     # every anchor shares the field's own cell: nothing shows the order of the cells
    return (f"in its old cell ({cell + 1} of {width}), where the fields found by value "
            f"({', '.join(sorted(anchors))}) sit in theirs")


def _whole_cell(page: Page, cell: int, value: str, node: int | None = None) -> bool:
    """The cell says the value and nothing else, or is a labelled pair whose value `node` is (key, value)."""
    if page.value(cell, None) == value:
        return True
    return node is not None and page.parent[node] == cell and page.label_info(node)[1] == "pair"


def _old_labels(before: Page, old_c: int, bp: Blueprint, name: str) -> set[str]:
    """The labels that named the other fields' old nodes (a column header, a pair's key), in one old record."""
    out = set()
    for f, spec in bp.fields.items():
        node = before.first_in(old_c, spec.css) if f != name and spec.css else None
        if node is not None and (label := before.label(node)):
            out.add(label)
    return out


def _long_values(old_raw: list, name: str) -> bool:
    """Some of the field's old values are long enough not to be found by chance (as `listing_by_value` asks)."""
    return any(not is_weak(v) for r in old_raw if (v := r.get(name)))
