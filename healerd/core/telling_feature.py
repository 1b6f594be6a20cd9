"""A repair that excludes look-alikes by position, rewritten to exclude them by what tells them apart.

The built-in healer can answer a "Sponsored" row put on top of a table with `tr:nth-child(n+2)`.
That holds only while the decoy is there: when it goes, the first real record is left out. When
every node the positional selector leaves out (among the records' siblings) carries a class no
selected record has — `sponsored`, `promo` — the same records are selected by that feature:
`tr:not(.sponsored)`, which stays right whether the decoy comes or goes. The rewrite is kept only
when it selects exactly the nodes the positional selector selects on the page.
"""

from __future__ import annotations

import re

from healerd.core.blueprint import Blueprint
from healerd.core.extract import item_nodes, parse_html

_POSITIONAL = re.compile(r":(?:nth-child|nth-of-type|nth-last-child|nth-last-of-type)\([^)]*\)"
                         r"|:(?:first|last)-(?:child|of-type)|:not\(:(?:first|last)-(?:child|of-type)\)")
_CLASS = re.compile(r"^-?[A-Za-z_][\w-]*$")


def positional(selector: str | None) -> bool:
    """Whether the last compound of `selector` picks its nodes by position."""
    if not selector:
        return False
    last = selector.split(",")[-1].strip().split(" ")[-1].split(">")[-1]
    return bool(_POSITIONAL.search(last))


def by_telling_feature(candidate: Blueprint, html: str) -> Blueprint | None:
    """`candidate` with its positional `items` selector rewritten to exclude the left-out
    siblings by a class they all carry and no selected record has; None when there is no such
    rewrite (not positional, nothing left out, no telling class, or the rewrite selects other nodes)."""
    items = candidate.items
    if not items or candidate.parser or "," in items or not positional(items):
        return None
    tree = parse_html(html or "")
    chosen = item_nodes(tree, (items,))
    if len(chosen) < 2:
        return None
    ids = {n.mem_id for n in chosen}
    parents = {n.parent.mem_id: n.parent for n in chosen if n.parent is not None}
    base = _POSITIONAL.sub("", items).strip()
    if not base or base.endswith((">", "+", "~")):
        return None
    # What the position left out: the nodes the selector without its position reads beside the
    # records (a header row that selector does not read was never a record's look-alike); when it
    # reads no more than the records, every sibling of the records' tag.
    try:
        alike = [n for n in item_nodes(tree, (base,)) if n.mem_id not in ids
                 and n.parent is not None and n.parent.mem_id in parents]
    except Exception:
        alike = []
    tags = {n.tag for n in chosen}
    left = alike or [c for p in parents.values() for c in p.iter() if c.mem_id not in ids and c.tag in tags]
    if not left:
        return None
    own = set().union(*((n.attributes.get("class") or "").split() for n in chosen))
    telling = set.intersection(*(set((c.attributes.get("class") or "").split()) for c in left)) - own
    # the rewrite alone, or under the records' parent (a bare `tr` also finds the header's rows)
    scopes = [""] + ([f"{next(iter(parents.values())).tag} > "] if len(parents) == 1 else [])
    for cls in sorted(telling):
        if not _CLASS.match(cls):
            continue
        for scope in scopes:
            rewritten = f"{scope}{base}:not(.{cls})"
            try:
                again = item_nodes(tree, (rewritten,))
            except Exception:
                continue
            if [n.mem_id for n in again] == [n.mem_id for n in chosen]:
                return candidate.with_fields(dict(candidate.fields), items=rewritten)
    return None
