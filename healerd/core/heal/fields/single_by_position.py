"""A single record's node picked out by the places of its ancestors, when nothing nearer names it.

A table whose rows became cards (`<tr>` → `<article>`, each cell a labelled pair `<div><span>key</span>
<span>value</span></div>`) leaves a field's node with nothing of its own to tell it apart: every card
holds the same pairs, built alike, and the old row's place (`tr:nth-child(2)`) is now the card's. The
node is found (its old value, exactly, on the current page); only the selector fails, since the
healer's usual candidates put a position on the node itself or on its parent, never both on an
ancestor further up and on the parent below it. Here they do, one place per level:
`article:nth-child(2) > div:nth-child(2) > span`, or `article.card:nth-child(2) span.v`. A position is
the weakest name a node has, so these are tried only after every other candidate and every loosened
form of the old selector failed, and not at all on a page carrying a new copy of one of the record's old
values in another place (`values_copied`: a "related" block); each is checked with lexbor as the
others are.
"""

from __future__ import annotations

from healerd.core.blueprint import BlueprintError, check_selector
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.page.selectors import Compound, Selector, compounds, first_in

MAX_LEVELS = 4      # ancestors above the parent tried as the placed one
MAX_TRIES = 200


class PlacedSelectors:
    """`placed_selector` for a heal's nodes, none when the page carries a new copy of the record's values."""

    def __init__(self, before: Page, after: Page, values: list[tuple[str, str | None]]) -> None:
        self.before, self.after, self.values = before, after, values
        self._copied: bool | None = None    # read once, and only when a placed selector is asked for

    def pick(self, node: int, avoid_attr: str | None = None) -> str | None:
        if self._copied is None:
            self._copied = values_copied(self.before, self.after, self.values)
        return None if self._copied else placed_selector(self.after, node, avoid_attr)


def values_copied(before: Page, after: Page, values: list[tuple[str, str | None]]) -> bool:
    """Does the current page carry one of the record's old values in more places than the last good page did?

    A new copy of the record's values (a "related" block, a summary) is where a position is the
    weakest evidence: a place counted among look-alikes may be the copy's. No placed selector then.
    Places are counted innermost (a value's wrapper saying the same text is no second place).
    """
    return any(_places(after, value, attr) > _places(before, value, attr) for value, attr in values if value)


def _places(page: Page, value: str, attr: str | None) -> int:
    """Hits of the value that hold no other hit: in document order, a hit holding another holds the next one."""
    hits = page.exact(value, attr)
    return sum(1 for h, nxt in zip(hits, [*hits[1:], -1]) if not (nxt >= 0 and page.contains(h, nxt)))


def _placed(page: Page, i: int) -> list[Compound]:
    """Node i's compounds that carry its place among its siblings (`div:nth-child(2)`, `li.item:nth-of-type(3)`)."""
    return [c for c in compounds(page, i, positional=True) if c.nth_child or c.nth_of_type]


def placed_selector(page: Page, target: int, avoid_attr: str | None = None) -> str | None:
    """A selector whose first match in the document is `target`, placing one of its ancestors by position.

    Candidates, cheapest first: a placed ancestor above the target's parent, then (descendant) the
    target itself, named or placed; and the same with its parent placed between them
    (`A:nth-child(k) > P:nth-child(j) > T`). None when no such chain gives the target first.
    """
    parent = page.parent[target]
    if parent < 0:
        return None
    own = compounds(page, target, avoid_attr, positional=True)
    own = [c for c in own if not (c.nth_child or c.nth_of_type)][:4] + [c for c in own if c.nth_child][:1]
    parent_placed = _placed(page, parent)[:2]
    cands: list[Selector] = []
    anc, level = page.parent[parent], 1
    while anc >= 0 and level <= MAX_LEVELS:
        for ac in _placed(page, anc)[:3]:
            for c in own:
                cands.append(Selector((_cost(ac, 0.3 * level), c), (" ",)))
                for pc in parent_placed:
                    cands.append(Selector((_cost(ac, 0.3 * level), pc, c), (" " if level > 1 else ">", ">")))
        anc, level = page.parent[anc], level + 1
    cands.sort(key=lambda s: s.cost)
    root = page.tree.root
    if root is None:
        return None
    for sel in cands[:MAX_TRIES]:
        if first_in(page, sel, None) != target:
            continue
        css = sel.css()
        try:
            check_selector(css, "selector")
        except BlueprintError:
            continue
        if page.index_of(root.css_first(css)) == target:
            return css
    return None


def _cost(c: Compound, extra: float) -> Compound:
    return Compound(c.tag, c.node_id, c.classes, c.attrs, c.nth_child, c.nth_of_type, c.cost + extra, c.nth_from,
                    c.has, c.not_class)
