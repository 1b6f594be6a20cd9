"""Compounds common to many nodes, asked of one node per kind (same tag, same attributes): the
answer asking every node gives, on every corpus page."""

from __future__ import annotations

import pathlib

from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.page.node_kinds import one_per_kind
from healerd.core.heal.page.selectors import Compound, _common_compounds, compounds

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
CAP = 400       # nodes per group: well past the 8 from which kinds are used, and the test stays short


def _every_node(page: Page, nodes: list[int]) -> list[Compound]:
    """The plain definition: the first node's compounds that every other node matches."""
    return [c for c in compounds(page, nodes[0], positional=False)
            if all(c.matches(page, n) for n in nodes[1:])]


def _groups(page: Page) -> list[list[int]]:
    """Nodes a listing's containers are made of: one tag, one class, one parent's children."""
    groups: list[list[int]] = list(page.by_tag.values()) + list(page.by_class.values())
    groups += [kids for kids in page.children if len(kids) > 8]
    return [g[:CAP] for g in groups if len(g) > 9]


def _pages() -> list[pathlib.Path]:
    roots = [DATA / "corpus", DATA / "corpus2", DATA / "corpus3" / "dev"]
    return sorted(p for root in roots for p in root.rglob("*.html"))


def test_common_compounds_by_kind_are_those_of_every_node() -> None:
    checked = differing = 0
    for path in _pages():
        page = Page(path.read_text(encoding="utf-8", errors="replace"))
        for group in _groups(page):
            want = _every_node(page, group)
            assert _common_compounds(page, group) == want, (str(path.relative_to(DATA)), group[:3])
            checked += 1
            differing += len(want) < len(compounds(page, group[0], positional=False))
    assert checked > 5_000 and differing > 1_000    # groups where some compound is refused by a later node


def test_one_per_kind_keeps_every_tag_and_attribute_apart() -> None:
    page = Page('<div><a class="x" href="/1">a</a><a class="x" href="/1">b</a><a class="x" href="/2">c</a>'
                '<a class="y" href="/1">d</a><a class="x">e</a><b class="x" href="/1">f</b>'
                '<a href="/1" class="x">g</a></div>')
    a = page.by_tag["a"]
    b = page.by_tag["b"]
    # the text is no part of a node's kind; an attribute's value, its presence, their order and the tag are
    assert one_per_kind(page, a + b) == [a[0], a[2], a[3], a[4], a[5], b[0]]
