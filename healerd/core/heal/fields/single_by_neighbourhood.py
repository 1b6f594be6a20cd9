"""Two places carry a single record's old value (a "Recommended" copy placed before it): which sat there before?

Values cannot tell a copy from the record, and neither can the node's own likeness when the copy
is made of the same markup. The tree around it can: walking up from the old node on the last good
page, each ancestor had some children (their tags, in order); the record still sitting where it
sat has the same ones, while a copy placed in a new block has a new neighbourhood (the block's
heading beside it, another holder above). Each level is compared as sequences of tags
(`difflib`'s ratio: order kept, an inserted sibling costs little, a new holder much); the
likeness is the product over the levels, so one changed level is enough to tell the two apart.

Only a clear winner is taken, and at a confidence under the Deployer's promotion threshold:
a person approves a record told from its copy by the tree alone.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from healerd.core.heal.page.fingerprint import Page

LEVELS = 4            # ancestors compared above the node
MIN_LIKENESS = 0.8    # the place taken looks like the old neighbourhood at least this much
MARGIN = 0.15         # ... and this much more than any other place carrying the value
CONFIDENCE = 0.6      # staged for a person, never promoted on this evidence alone


def profile(page: Page, i: int, levels: int = LEVELS) -> list[list[str]]:
    """The tags of the children of each of node i's `levels` nearest ancestors (nearest first)."""
    out: list[list[str]] = []
    cur = i
    for _ in range(levels):
        p = page.parent[cur]
        if p < 0:
            break
        out.append([page.tags[c] for c in page.children[p]])
        cur = p
    return out


def likeness(old: list[list[str]], new: list[list[str]]) -> float:
    """0..1: how much a neighbourhood looks like the old one (the product of each level's sequence ratio)."""
    if not old:
        return 0.0
    out = 1.0
    for k, tags in enumerate(old):
        if k >= len(new):
            return 0.0
        out *= SequenceMatcher(None, tags, new[k], autojunk=False).ratio()
    return out


def pick(before: Page, old_node: int, after: Page, nodes: list[int]) -> tuple[int | None, str]:
    """(the one node sitting where the old one sat, why), or (None, why) when the tree does not tell."""
    if len(nodes) < 2:
        return None, "one place only"
    old = profile(before, old_node)
    ranked = sorted(((likeness(old, profile(after, n)), -n, n) for n in nodes), reverse=True)
    (best, _, node), (second, _, _) = ranked[0], ranked[1]
    if best < MIN_LIKENESS or best - second < MARGIN:
        return None, f"nor does the tree around them (likeness {best:.2f} vs {second:.2f})"
    return node, f"the one whose surroundings are the old ones (likeness {best:.2f} vs {second:.2f})"
