"""A blueprint's extraction read from a healer's page index: `extract`'s very answer, cheaper.

The healer extracts twice on the pages it has indexed (the last good records' raw values, and
the verification of a repaired blueprint). `core.extract` would ask lexbor once per record and
field and collapse each value again; here each field's node is `Page.first_in` (lexbor's
`css_first`, a selector asked of every record read once over the page, shared with the
healer's own checks of the same selector) and each value the index's text or attribute.
"""

from __future__ import annotations

from typing import Any

from healerd.core.blueprint import Blueprint
from healerd.core.extract import Extraction, coerce, extract
from healerd.core.heal.page.fingerprint import Page


def extract_on(page: Page, blueprint: Blueprint) -> Extraction:
    """`extract(page.tree, blueprint)`, read from the page's index."""
    if blueprint.items:
        items: list[int | None] = []
        for css in blueprint.items_selectors:
            items = [page.index_of(n) for n in page.tree.css(css)]
            if items:
                break
        roots = items
    else:
        root = page.tree.root
        roots = [page.index_of(root) if root is not None else None]
    if any(r is None for r in roots):
        return extract(page.tree, blueprint)        # a root the index does not hold (none on a parsed document)
    held = [r for r in roots if r is not None]
    fields = list(blueprint.fields.values())
    lookups: list[tuple[str, ...]] = []
    for spec in fields:
        if spec.selectors and spec.selectors not in lookups:
            lookups.append(spec.selectors)
    columns = [(spec.name, lookups.index(spec.selectors) if spec.selectors else -1, spec.attr, spec.type)
               for spec in fields]
    texts, attrs = page.texts, page.attrs
    found = [_first_each(page, held, sels) for sels in lookups]   # per lookup, per record
    data_list: list[dict[str, Any]] = []
    raw_list: list[dict[str, str | None]] = []
    for j in range(len(held)):
        nodes = [column[j] for column in found]
        data: dict[str, Any] = {}
        raw: dict[str, str | None] = {}
        for name, at, attr, ftype in columns:
            node = nodes[at] if at >= 0 else None
            if node is None:
                value = None
            elif attr:
                value = attrs[node].get(attr)
            else:
                value = texts[node]
            raw[name] = value
            data[name] = value if ftype == "str" else coerce(value, ftype)
        data_list.append(data)
        raw_list.append(raw)
    if blueprint.items:
        return Extraction(data_list, raw_list, len(data_list))
    return Extraction(data_list[0], raw_list[0], None)


def _first_each(page: Page, roots: list[int], selectors: tuple[str, ...]) -> list[int | None]:
    """Per root, the first match of the first selector that matches anything under it (extract's `first_node`)."""
    out = page.first_in_each(roots, selectors[0])
    for css in selectors[1:]:
        missing = [k for k, node in enumerate(out) if node is None]
        if not missing:
            break
        for k, node in zip(missing, page.first_in_each([roots[k] for k in missing], css)):
            out[k] = node
    return out
