"""Where a node sits seen from another: the child positions down from their common ancestor.

The placing stages follow a changed field from the fields found again by this path
(`fields.single_anchored`, `fields.listing_anchored`), and the verdict's corroboration checks that
every changed field kept it (`verdict.corroboration`).
"""

from __future__ import annotations

from healerd.core.heal.page.fingerprint import Page

Path = tuple[tuple[int, ...], tuple[int, ...]]


def _down(page: Page, top: int, i: int) -> tuple[int, ...]:
    """Child positions from `top` down to i (i inside top's subtree); a step into an only child (a
    wrapper added or removed around a field) is no position and is left out."""
    steps = []
    while i != top:
        p = page.parent[i]
        sibs = page.children[p]
        if len(sibs) > 1:
            steps.append(sibs.index(i))
        i = p
    return tuple(reversed(steps))


def relative_path(page: Page, anchor: int, node: int) -> Path:
    """Where `node` sits seen from `anchor`: the child positions down from their common ancestor to
    the anchor and to the node. Tags and classes are left out on purpose, and so are the levels
    climbed and the steps into only children: a redesign renames tags and classes and adds wrappers;
    a field's place among its siblings is what the alignment compares."""
    top = anchor
    while not page.contains(top, node):
        top = page.parent[top]
        if top < 0:
            return ((-1,), ())
    return (_down(page, top, anchor), _down(page, top, node))


def steps_to_common(page: Page, x: int, y: int) -> tuple[int, int] | None:
    """Steps up from x and from y to their lowest common ancestor."""
    up_x: dict[int, int] = {}
    k, a = 0, x
    while a >= 0:
        up_x[a] = k
        a, k = page.parent[a], k + 1
    k, a = 0, y
    while a >= 0:
        if a in up_x:
            return up_x[a], k
        a, k = page.parent[a], k + 1
    return None
