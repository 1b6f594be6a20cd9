"""A candidate blueprint judged by the headings of the places it reads (the Deployer's judge asks).

A fix healed on one page can be offered for another (the fix memory does so across sources): on
a price list that lost its Brand column, a fix made where the Category column went reads the
categories as brands, and every shape check passes. The heading that names each field's place
(`headings.heading_of`: the column header, or the dt/th/label before the value) tells it: the field
now reads a new value from under another heading than production read on the last good page.
"""

from __future__ import annotations

from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from healerd.core.blueprint import Blueprint

# the drift checks' own helpers: records as rows, values compared as text, a selector's first
# match, two labels that name different things
from healerd.core.drift import _first, _norm, _renamed, _rows
from healerd.core.extract import item_nodes, parse_html
from healerd.core.headings import heading_of


def candidate_relabelled(production: Blueprint, before_html: str, old_records: Any, candidate: Blueprint,
                         after_html: str, new_data: Any) -> str | None:
    """A candidate (a healed or remembered blueprint) whose field gives another value than the last
    good one from under another heading than production's node had on the last good page: it reads
    the neighbouring column (another source's fix for another dropped column), not this field."""
    if production.parser or candidate.parser or not before_html or not old_records:
        return None
    new_rows, old_rows = _rows(new_data), _rows(old_records)
    if not new_rows or not old_rows:
        return None
    scopes: list[LexborNode | LexborHTMLParser | None] = []
    for bp, html in ((production, before_html), (candidate, after_html)):
        tree = parse_html(html or "")
        items = item_nodes(tree, bp.items_selectors) if bp.items else [tree.root if tree.root is not None else tree]
        scopes.append(items[0] if items else None)
    if scopes[0] is None or scopes[1] is None:
        return None
    known: set[str] | None = None
    for name, spec in candidate.fields.items():
        old_spec = production.fields.get(name)
        value = _norm(new_rows[0].get(name))
        if spec.css is None or old_spec is None or old_spec.css is None or value is None \
                or value == _norm(old_rows[0].get(name)):
            continue
        was, now = heading_of(_first(scopes[0], old_spec.css)[1]), heading_of(_first(scopes[1], spec.css)[1])
        # Another column only when the new heading named a place of its own on the last good page
        # too: a header merely reworded ("Module" -> "File") is the same column renamed.
        if was and now and _renamed(was, now):
            if known is None:
                known = old_headings(scopes[0])
            if now not in known:
                continue
            return f"{name} would read the value under {now!r} where it read {was!r} (e.g. {value[:40]!r})"
    return None


MAX_HEADING_NODES = 5000   # a single-record page is read whole: bounded on a huge one


def old_headings(scope: LexborNode | LexborHTMLParser) -> set[str]:
    """The headings naming places inside the last good page's first record (its first
    MAX_HEADING_NODES elements)."""
    root = scope.root if isinstance(scope, LexborHTMLParser) else scope
    if root is None:
        return set()
    found: set[str] = set()
    for i, node in enumerate(root.traverse(include_text=False)):
        if i >= MAX_HEADING_NODES:
            break
        h = heading_of(node)
        if h:
            found.add(h)
    return found
