"""A grid's cells named "the k-th of n" so the row holding them is not read instead (listing_fields.cell_selectors)."""

from __future__ import annotations

import itertools

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.page.selectors import Compound, Selector, all_matches
from healerd.core.heal.pipeline import heal

ROWS = [("Claw hammer with fibreglass grip", "Tools", "12.50"), ("Adjustable wrench, 250 mm", "Tools", "9.99"),
        ("Cordless drill driver 18 V", "Power", "79.00"), ("Set of six precision screwdrivers", "Tools", "14.25"),
        ("Folding utility knife", "Blades", "6.40")]

BEFORE = (
    "<html><body><h1>Stock</h1><table class='stock'><tr><th>Product</th><th>Aisle</th><th>Price</th></tr>"
    + "".join(f"<tr class='row'><td class='name'>{n}</td><td class='aisle'>{a}</td><td class='price'>{p}</td></tr>"
              for n, a, p in ROWS) + "</table></body></html>")

_SOUP = itertools.cycle(["flex p-4", "grid gap-2 text-sm", "p-3 mt-2 rounded-lg", "shadow border", "px-4 py-2",
                         "text-lg font-bold", "mb-4 w-full", "items-center truncate", "leading-6 gap-4"])


def soup() -> str:
    return next(_SOUP)


# the table as a grid of divs, the header row first, every element's classes a soup unlike its neighbours'
AFTER = ("<html><body><h1>Stock</h1><div class='" + soup() + "'>"
         + "".join("<div class='" + soup() + "'>" + "".join(f"<div class='{soup()}'>{c}</div>" for c in row) + "</div>"
                   for row in [("Product", "Aisle", "Price"), *ROWS]) + "</div></body></html>")

BP = Blueprint(items="table.stock tr.row", fields={
    "name": FieldSpec("name", "td.name", "str"),
    "aisle": FieldSpec("aisle", "td.aisle", "str"),
    "price": FieldSpec("price", "td.price", "float"),
})


def test_a_grid_under_a_header_row_heals_its_short_columns():
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, AFTER)
    assert res.ok, res.reason
    got = extract(AFTER, res.blueprint).data
    assert [(r["name"], r["aisle"], r["price"]) for r in got] == [(n, a, float(p)) for n, a, p in ROWS]
    assert res.confidence < 0.75      # short values placed by their cells: staged


def test_the_kth_of_n_is_the_cell_never_its_row():
    page = Page(AFTER)
    second = Selector((Compound(tag="div", nth_child=2),))
    kth_of_n = Selector((Compound(tag="div", nth_child=2, nth_last=2),))
    got = all_matches(page, kth_of_n)
    assert [page.texts[i] for i in got] == ["Aisle", *[a for _, a, _ in ROWS]]
    # the bare position also matches the first data row itself, the second child of the grid
    assert any(page.children[i] for i in all_matches(page, second))
    assert kth_of_n.css() == "div:nth-child(2):nth-last-child(2)"
    assert [page.texts[page.index_of(n)] for n in page.tree.css(kth_of_n.css())] == [page.texts[i] for i in got]
