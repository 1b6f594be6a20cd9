"""Does a listing store all of the page's records? Records left out by the `items` selector.

A repair can exclude a decoy by position (`tr:nth-child(n+2)` under a "Sponsored" row): when the
decoy goes again, the first real record is left out of every scrape, and nothing else notices
(the count moves a little, the values are all real). The page still shows the record: a node
shaped like the selected records — the same parent, the same structure (`drift.item_shape`: tag
and classes two levels down, no text) — that the selector leaves out.

Left-out look-alikes that were already left out on the last good page were left out as unlike
the records then and still are (a header row, a "total" row someone's blueprint skips): only
more of them than there were is evidence. Plain functions over pages: no database, no actors.
"""

from __future__ import annotations

from collections import Counter

from selectolax.lexbor import LexborHTMLParser, LexborNode

from healerd.core.blueprint import Blueprint
from healerd.core.drift import item_shape
from healerd.core.extract import item_nodes, parse_html


def _elements(node: LexborNode) -> list[LexborNode]:
    out = []
    child = node.child
    while child is not None:
        if child.tag and not child.tag.startswith(("-", "_")):
            out.append(child)
        child = child.next
    return out


def left_out_alike(blueprint: Blueprint, tree: LexborHTMLParser) -> list[LexborNode]:
    """The nodes shaped like the selected records (same parent, same structure as most of the
    records under that parent) that the items selector leaves out."""
    if not blueprint.items or blueprint.parser:
        return []
    nodes = item_nodes(tree, blueprint.items_selectors)
    if len(nodes) < 2:
        return []
    chosen = {n.mem_id for n in nodes}
    by_parent: dict[int, tuple[LexborNode, list[LexborNode]]] = {}
    for n in nodes:
        parent = n.parent
        if parent is not None:
            by_parent.setdefault(parent.mem_id, (parent, []))[1].append(n)
    out: list[LexborNode] = []
    for parent, kids in by_parent.values():
        if len(kids) < 2:
            continue
        shape, count = Counter(item_shape(k) for k in kids).most_common(1)[0]
        if count * 2 <= len(kids):
            continue   # no shape the records share
        out.extend(c for c in _elements(parent) if c.mem_id not in chosen and item_shape(c) == shape)
    return out


def missing_records(blueprint: Blueprint, before_html: str | None, after_html: str) -> str | None:
    """Why the listing on `after_html` leaves out records the page shows, or None: more records
    shaped like the selected ones are left out than on the last good page (`before_html`)."""
    if not blueprint.items or blueprint.parser or not after_html:
        return None
    now = left_out_alike(blueprint, parse_html(after_html))
    if not now:
        return None
    before = len(left_out_alike(blueprint, parse_html(before_html))) if before_html else 0
    if len(now) <= before:
        return None
    text = " ".join(now[0].text(deep=True, separator=" ").split())[:40]
    return (f"the items selector leaves out {len(now)} record(s) shaped like the ones it selects (same parent, "
            f"same structure), e.g. {text!r}: the page still shows them")
