"""A blueprint written from example values (`healerctl suggest URL --example FIELD=VALUE ...`).

The healer's own machinery finds where the values are, the way it finds a record's old values
on a changed page: each example value is looked up in the page's text (exactly, then nearly) and
in its attributes (a link's href); of the places each value has, the ones closest together are
the record. When the record's container repeats (siblings built alike, each holding a node the
same relative selector finds), the page is a listing: `items` selects every container and each
field is a selector inside it. Otherwise it is a single record, each field the first match of
its selector in the document. Selectors come from the healer's selector builder and are checked
with selectolax; types are guessed from the values (a number is `int` or `float`).

It refuses, naming them, when the examples are ambiguous: a value found in several places no
other example tells apart, or two equally close groupings that read different records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import product
from typing import Any

from healerd.core.blueprint import Blueprint, BlueprintError, from_dict
from healerd.core.extract import extract, first_number
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.page.selectors import items_selector, relative_selectors, single_selector

ATTRS = ("href", "src", "content", "value", "title", "alt", "datetime", "data-id")
MAX_PLACES = 12          # places kept per value (nearest first)
MAX_GROUPS = 20_000      # groupings of places tried
_NUMBER = re.compile(r"^[^\w\-]{0,3}-?\d[\d,]*(\.\d+)?(\s?[%a-zA-Z€$£]{0,4})$")


class SuggestError(ValueError):
    """The examples cannot make a blueprint; the message says why (naming the examples)."""


@dataclass
class Suggestion:
    blueprint: Blueprint
    records: int                       # what it reads on the page (1 for a single record)
    unplaced: list[str] = field(default_factory=list)   # example fields it could not place
    listing: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"blueprint": self.blueprint.to_dict(), "records": self.records, "unplaced": self.unplaced,
                "listing": self.listing}


def guess_type(value: str) -> str:
    """`int` or `float` for a value that is a number (a currency sign or a unit around it allowed)."""
    text = value.strip()
    if not _NUMBER.match(text) or first_number(text) is None:
        return "str"
    return "float" if re.search(r"\d\.\d", text) else "int"


def _places(page: Page, value: str) -> list[tuple[int, str | None]]:
    """Where `value` is on the page: (element, None) for its text, (element, attr) for an attribute;
    the deepest element of a chain carrying the same text only."""
    text = " ".join(value.split())

    def deepest(hits: list[int]) -> list[tuple[int, str | None]]:
        return [(i, None) for i in hits if not any(j != i and page.contains(i, j) for j in hits)]

    found = deepest(page.exact(text, None))     # the text exactly, then an attribute exactly, then nearly
    if not found:
        for attr in ATTRS:
            found += [(i, attr) for i in page.exact(value.strip(), attr)]
    if not found:
        found = deepest([i for i, _ in page.near(text, None, limit=MAX_PLACES)])
    return found[:MAX_PLACES]


def _lca(page: Page, nodes: list[int]) -> int:
    anc = nodes[0]
    while anc >= 0 and not all(page.contains(anc, n) for n in nodes):
        anc = page.parent[anc]
    return anc


def _group(page: Page, places: dict[str, list[tuple[int, str | None]]]) -> tuple[dict[str, tuple[int, str | None]], list[str]]:
    """One place per field, the closest together (deepest common ancestor, then least spread), and
    the fields whose place the grouping could not settle (a tie with another grouping)."""
    names = list(places)
    best: list[tuple[tuple[int, int], dict]] = []
    for n, combo in enumerate(product(*(places[k] for k in names))):
        if n >= MAX_GROUPS:
            break
        nodes = [i for i, _ in combo]
        anc = _lca(page, nodes)
        score = (page.depth[anc] if anc >= 0 else -1, -(max(nodes) - min(nodes)))
        best.append((score, dict(zip(names, combo))))
    best.sort(key=lambda t: t[0], reverse=True)
    top = best[0]
    tied = [g for s, g in best[1:] if s == top[0]]
    unsettled = sorted({k for g in tied for k in names if g[k] != top[1][k]})
    return top[1], unsettled


def _alike(page: Page, a: int, b: int) -> bool:
    """Siblings built alike: the same tag, and the same classes or the same children's tags
    (table rows striped `row1`/`row2` are records alike)."""
    if page.tags[a] != page.tags[b]:
        return False
    if sorted(page.classes(a)) == sorted(page.classes(b)):
        return True
    kids = [page.tags[k] for k in page.children[a]]
    return bool(kids) and kids == [page.tags[k] for k in page.children[b]]


def _containers(page: Page, nodes: list[int]) -> list[int] | None:
    """The record containers when the record repeats: from the group's common ancestor up, the
    first element with siblings built alike (at least two in all), with them, in document order."""
    anc = _lca(page, nodes) if len(nodes) > 1 else page.parent[nodes[0]]
    while anc >= 0 and page.parent[anc] >= 0:
        siblings = [s for s in page.children[page.parent[anc]] if _alike(page, s, anc)]
        if len(siblings) >= 2:
            return siblings
        anc = page.parent[anc]
    return None


def _field_spec(name: str, value: str, attr: str | None, css: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"css": css, "type": guess_type(value) if attr is None else "str"}
    if attr:
        spec["attr"] = attr
    return spec


def _relative(page: Page, containers: list[int], container: int, target: int, attr: str | None) -> str | None:
    """A selector finding `target` as the first match inside `container`, and something in most
    of the other containers (a field the record has, not one node of it)."""
    for sel in relative_selectors(page, container, target)[:200]:
        css = sel.css()
        if page.first_in(container, css) != target:
            continue
        hits = sum(1 for c in containers if page.first_in(c, css) is not None)
        if hits >= 2 and hits * 5 >= len(containers) * 3:   # in most of the records (60 %), never one alone
            return css
    return None


def _same(got: Any, want: str, ftype: str) -> bool:
    if got is None:
        return False
    if ftype == "str":
        return " ".join(str(got).split()) == " ".join(want.split())
    return first_number(str(got)) == first_number(want) or got == first_number(want)


def suggest(html: str, examples: dict[str, str], url: str | None = None) -> Suggestion:
    """A blueprint reading the record the example values belong to (every record of a listing)."""
    if not examples:
        raise SuggestError("give at least one --example FIELD=VALUE")
    page = Page(html)
    places = {name: _places(page, value) for name, value in examples.items()}
    unplaced = [n for n, p in places.items() if not p]
    placed = {n: p for n, p in places.items() if p}
    if not placed:
        raise SuggestError(f"none of the example values is on the page ({', '.join(examples)})")
    if len(placed) == 1 and len(next(iter(placed.values()))) > 1:
        name = next(iter(placed))
        raise SuggestError(f"ambiguous example: {name} is in {len(placed[name])} places on the page; give more "
                           f"example fields of the same record so its place can be told")
    chosen, unsettled = _group(page, placed)
    if unsettled:
        raise SuggestError(f"ambiguous examples: {', '.join(unsettled)} found in several places that the other "
                           f"examples do not tell apart; give more example fields (or longer values)")
    nodes = [i for i, _ in chosen.values()]
    containers = _containers(page, nodes)
    fields: dict[str, dict[str, Any]] = {}
    bp_items = None
    if containers:
        container = next(c for c in containers if all(page.contains(c, n) for n in nodes))
        for name, (node, attr) in chosen.items():
            css = _relative(page, containers, container, node, attr)
            if css is None:
                containers = None
                break
            fields[name] = _field_spec(name, examples[name], attr, css)
        if containers:
            bp_items = items_selector(page, containers)
            if bp_items is None:
                containers = None
    if not containers:
        fields = {}
        for name, (node, attr) in chosen.items():
            css = single_selector(page, node, avoid_attr=attr)
            if css is None:
                unplaced.append(name)
                continue
            fields[name] = _field_spec(name, examples[name], attr, css)
    if not fields:
        raise SuggestError(f"no selector reads the example values ({', '.join(examples)})")
    data: dict[str, Any] = {"fields": fields}
    if url:
        data["url"] = url
    if bp_items:
        data = {**({"url": url} if url else {}), "items": bp_items, "fields": fields}
    try:
        bp = from_dict(data)
    except BlueprintError as exc:
        raise SuggestError(f"the selectors found do not make a blueprint: {exc}") from None
    got = extract(page.tree, bp).data
    rows = got if isinstance(got, list) else [got]
    if not any(isinstance(r, dict) and all(_same(r.get(n), examples[n], bp.fields[n].type) for n in fields)
               for r in rows):
        raise SuggestError("the blueprint found does not read the example record back; give more example fields")
    return Suggestion(bp, len(rows), sorted(set(unplaced)), listing=bp_items is not None)
