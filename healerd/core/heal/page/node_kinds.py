"""Nodes alike in tag and attributes, read once.

A compound selector without a position (`:nth-child`, `:nth-of-type`) or a child (`:has(> …)`)
is answered by a node's tag and attributes alone (`Compound.matches` reads nothing else), so
two nodes with the same tag and the same attributes match it alike. The record containers of a
big listing are thousands of such twins (`<article class="card">`): asking a compound of one
node per kind gives the answer asking it of every node gives.
"""

from __future__ import annotations

from healerd.core.heal.page.fingerprint import Page


def one_per_kind(page: Page, nodes: list[int]) -> list[int]:
    """The first of `nodes` of each kind (same tag, same attributes in the same order), in their order."""
    tags, attrs = page.tags, page.attrs
    firsts: dict[tuple, int] = {}
    for n in nodes:
        firsts.setdefault((tags[n], tuple(attrs[n].items())), n)
    return list(firsts.values())
