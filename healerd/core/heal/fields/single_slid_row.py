"""A single record's row removed and the next row slid into the field's place.

The old selector still finds a node, but it now sits beside another key ("Packages" where
"Build" was) that the last good page showed too: the node's value is not the field's value
changed in place, and the field is not kept there.
"""

from __future__ import annotations

from healerd.core.heal.page.fingerprint import LABEL_MAX, Page


def key_beside(page: Page, i: int | None) -> str:
    """The short text just before node i (or before its parent when i comes first in it): a row's key."""
    if i is None:
        return ""
    cur = i
    for _level in range(2):
        p = page.parent[cur]
        if p < 0:
            return ""
        sibs = page.children[p]
        k = sibs.index(cur)
        if k > 0:
            t = page.texts[sibs[k - 1]]
            return t if t and len(t) <= LABEL_MAX and t != page.texts[i] and any(ch.isalpha() for ch in t) else ""
        cur = p
    return ""


def slid_into_place(before: Page, old_node: int | None, after: Page, cur: int | None) -> str:
    """The key now beside the old selector's node, when another row slid into the field's place, else "".

    The old node sat beside one key ("Build"); the node the old selector finds now sits beside
    another ("Packages") that the last good page showed too: the field's row was removed and the
    next row took its place, so the node's value is not the field's value changed in place.
    """
    old_key, new_key = key_beside(before, old_node), key_beside(after, cur)
    if old_key and new_key and old_key != new_key and before.exact(new_key, None):
        return new_key
    return ""
