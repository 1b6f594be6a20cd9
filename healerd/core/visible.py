"""What a browser renders: a page's hidden nodes, and candidates that read them.

A node is hidden when it or an ancestor has the `hidden` attribute, an inline style with
`display: none` or `visibility: hidden`/`collapse`, `aria-hidden="true"`, or is a `<template>` or
`<noscript>` element. A block of copies of the last good records kept out of sight (with,
sometimes, a sentence addressed to a model) is not the page's data: neither the built-in healer
nor an external candidate may read it, and what is sent to an external healer leaves it out.

- `visible_html(html)`: the page with every hidden node emptied — the element stays, with its
  attributes, so positions (`nth-child`) and selectors mean on it what they mean on the page,
  but nothing in it can be read;
- `reads_hidden(blueprint, html, data)`: why a blueprint's extraction `data` of `html` reads
  hidden nodes (a value that is there only in hidden nodes, or records that are), or None.
"""

from __future__ import annotations

import re
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from healerd.core.blueprint import Blueprint
from healerd.core.extract import extract

_HIDDEN_STYLE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse))\s*(?:!important\s*)?(?:;|$)",
                           re.I)
_ALWAYS_HIDDEN = ("template", "noscript")
_SELECTOR = "[hidden], [style], [aria-hidden], template, noscript"
# a template's content is a fragment of its own: no selector reads it, but the page's text still has it
_TEMPLATE = re.compile(r"(<template\b[^>]*>).*?(</template\s*>)", re.I | re.S)


def hides(node: LexborNode) -> bool:
    """Whether `node` itself hides its subtree (its ancestors aside)."""
    if node.tag in _ALWAYS_HIDDEN:
        return True
    attrs = node.attributes
    if "hidden" in attrs:
        return True
    if (attrs.get("aria-hidden") or "").strip().lower() == "true":
        return True
    return bool(_HIDDEN_STYLE.search(attrs.get("style") or ""))


def _emptied(tree: LexborHTMLParser) -> int:
    """Empty every hiding node of `tree` in place; how many were emptied."""
    n = 0
    for node in tree.css(_SELECTOR):
        if hides(node):
            child = node.child
            while child is not None:
                nxt = child.next
                child.decompose()
                child = nxt
            n += 1
    return n


def visible_html(html: str) -> str:
    """`html` with every hidden node emptied (the page itself when none is hidden)."""
    if not html:
        return html
    low = html.lower()
    if not any(m in low for m in ("hidden", "display", "visibility", "<template", "<noscript")):
        return html
    tree = LexborHTMLParser(html)
    if not _emptied(tree):
        return html
    return _TEMPLATE.sub(r"\1\2", tree.html or "")


def _rows(data: Any) -> list[dict]:
    if isinstance(data, dict):
        return [data]
    return [r for r in data if isinstance(r, dict)] if isinstance(data, list) else []


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, str) and not v.strip())


def reads_hidden(blueprint: Blueprint, html: str, data: Any) -> str | None:
    """Why `data`, what `blueprint` extracts from `html`, is read from nodes a browser would not
    render, or None: records found only among hidden nodes, or a field whose value is there only
    in hidden nodes (a value partly hidden, a visible price with a hidden currency, is the page's)."""
    if blueprint.parser or not html:
        return None
    seen = visible_html(html)
    if seen is html:
        return None
    shown = extract(seen, blueprint).data
    got, vis = _rows(data), _rows(shown)
    if blueprint.items:
        # emptied item nodes still match: their fields are all blank there
        hidden_items = sum(1 for r in vis if all(_blank(v) for v in r.values()))
        if hidden_items and len(vis) == len(got) and hidden_items > sum(
                1 for r in got if all(_blank(v) for v in r.values())):
            return f"{hidden_items} of {len(got)} records are in nodes a browser would not render (hidden)"
    if len(vis) != len(got):
        return (f"{len(got)} records, only {len(vis)} of them in nodes a browser renders: it reads "
                f"nodes a browser would not render (hidden)")
    for name in blueprint.fields:
        only_hidden = sum(1 for a, b in zip(got, vis, strict=True) if not _blank(a.get(name)) and _blank(b.get(name)))
        if only_hidden:
            where = f" in {only_hidden} of {len(got)} records" if blueprint.items else ""
            return f"{name} is read from nodes a browser would not render (hidden){where}"
    return None
