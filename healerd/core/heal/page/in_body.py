"""Where page data can be: the document's <head> carries none.

The <title>, <meta> descriptions and <link> elements repeat what the page shows (a title, a
canonical address), but a scraper reads the body: a field whose old node sat in the body is
never relocated into the head because the head still carries its old value (a <title> holding
an article's old heading while the heading itself now reads "Title: ..."). Only a field whose
old node was in the head (a scraper reading `meta[property=og:title]`) may be found there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from healerd.core.heal.page.fingerprint import Fingerprint, Page

T = TypeVar("T")


def old_node_in_head(fp: Fingerprint) -> bool:
    """The fingerprinted node was the <head> or inside it."""
    return fp.tag == "head" or "head" in fp.ancestor_tags


def in_head(page: Page, i: int) -> bool:
    """Node i is a <head> element or inside one."""
    return any(page.contains(h, i) for h in page.by_tag.get("head", ()))


def in_body_unless_head(page: Page, fp: Fingerprint, cands: Iterable[T], node_of: Callable[[T], int]) -> list[T]:
    """The candidates outside the head, unless the old node itself was in the head."""
    items = list(cands)
    if old_node_in_head(fp) or not page.by_tag.get("head"):
        return items
    return [c for c in items if not in_head(page, node_of(c))]
