"""Extraction exactly as docs/REFERENCE.md ("Extraction") defines it.

- Parse with selectolax's lexbor backend.
- Without `items`: each field's selector on the whole document, first match.
- A field (or `items`) with a list of selectors tries them in order: the first
  selector that matches a node wins (for `items`: the first that matches any).
- With `items`: each node `items` matches is one record, in document order; each
  field is `item.css_first(css)`.
- A value is `node.text(deep=True, separator="")` with whitespace collapsed, or the
  attribute's value as is; no match is None.
- `int`/`float` take the first number in the text (`-?\\d[\\d,]*(\\.\\d+)?`, commas
  dropped); text with no number gives None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from healerd.blueprint import Blueprint, FieldSpec

NUMBER = re.compile(r"-?\d[\d,]*(\.\d+)?")


def parse_html(html: str | bytes) -> LexborHTMLParser:
    if isinstance(html, bytes):
        html = html.decode("utf-8", errors="replace")
    return LexborHTMLParser(html)


def node_value(node, attr: str | None) -> str | None:
    if node is None:
        return None
    if attr:
        return node.attributes.get(attr)
    return " ".join(node.text(deep=True, separator="").split())


def first_number(text: str | None) -> float | None:
    if text is None:
        return None
    m = NUMBER.search(text)
    if not m:
        return None
    return float(m.group(0).replace(",", ""))


def coerce(raw: str | None, ftype: str) -> Any:
    """The typed value of a raw string: str as is; int/float from the first number."""
    if raw is None:
        return None
    if ftype == "str":
        return raw
    num = first_number(raw)
    if num is None:
        return None
    if ftype == "int":
        return int(num)
    return num


@dataclass
class Extraction:
    """What a blueprint gave on one page.

    `data` is one dict (no `items`) or a list of dicts, typed; `raw` has the same
    shape with the raw strings, so the validator can tell "no match" (raw None)
    from "matched but not a number" (raw str, value None).
    """

    data: dict[str, Any] | list[dict[str, Any]]
    raw: dict[str, str | None] | list[dict[str, str | None]]
    item_count: int | None  # None for single-record blueprints


def first_node(root, selectors: tuple[str, ...]):
    """The first match of the first selector that matches anything under `root`, or None."""
    for css in selectors:
        node = root.css_first(css)
        if node is not None:
            return node
    return None


def item_nodes(tree, selectors: tuple[str, ...]) -> list:
    """The item nodes of the first `items` selector that matches any node."""
    for css in selectors:
        nodes = tree.css(css)
        if nodes:
            return nodes
    return []


def _record(root, fields: dict[str, FieldSpec]) -> tuple[dict, dict]:
    data: dict[str, Any] = {}
    raw: dict[str, str | None] = {}
    for name, spec in fields.items():
        value = node_value(first_node(root, spec.selectors), spec.attr) if spec.css else None
        raw[name] = value
        data[name] = coerce(value, spec.type)
    return data, raw


def extract(page: str | bytes | LexborHTMLParser, blueprint: Blueprint) -> Extraction:
    """Run a selector blueprint on a page (HTML text or an already parsed tree)."""
    tree = page if isinstance(page, LexborHTMLParser) else parse_html(page)
    if blueprint.items:
        data_list, raw_list = [], []
        for item in item_nodes(tree, blueprint.items_selectors):
            d, r = _record(item, blueprint.fields)
            data_list.append(d)
            raw_list.append(r)
        return Extraction(data_list, raw_list, len(data_list))
    root = tree.root if tree.root is not None else tree
    d, r = _record(root, blueprint.fields)
    return Extraction(d, r, None)


def extract_field(tree: LexborHTMLParser, items: str | None, css: str, attr: str | None) -> list[str | None]:
    """The raw values one field selector gives: one per item, or a single-element list."""
    if items:
        return [node_value(item.css_first(css), attr) for item in tree.css(items)]
    root = tree.root if tree.root is not None else tree
    return [node_value(root.css_first(css), attr)]
