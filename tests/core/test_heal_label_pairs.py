"""The healer reads a card's labelled pairs as the table's columns they were (healerd.core.heal.page.label_pairs)."""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.page.label_pairs import is_label_pair
from healerd.core.heal.pipeline import heal

ROWS = [("Claw hammer", "12", "4"), ("Garden hose", "30", "7"), ("Tape measure", "9", "15"), ("Spirit level", "21", "2")]

BEFORE = (
    "<html><body><h1>Stock</h1><table id='stock'><thead><tr><th>Product</th><th>Price</th><th>Qty</th></tr></thead>"
    "<tbody>" + "".join(f"<tr class='row'><td class='name'>{n}</td><td class='price'>{p}</td><td class='qty'>{q}</td></tr>"
                         for n, p, q in ROWS) + "</tbody></table></body></html>")

# the same data as cards: every class hashed, each cell a labelled pair beside its column's header
AFTER = (
    "<html><body><h1>Stock</h1><div class='x7Fq'>" + "".join(
        f"<article class='k2Jd'><div class='a1'><span class='q9'>Product</span><span class='w3'>{n}</span></div>"
        f"<div class='a1'><span class='q9'>Price</span><span class='w3'>{p}</span></div>"
        f"<div class='a1'><span class='q9'>Qty</span><span class='w3'>{q}</span></div></article>"
        for n, p, q in ROWS) + "</div></body></html>")

BP = Blueprint(items="#stock tbody tr.row", fields={
    "name": FieldSpec("name", "td.name", "str"),
    "price": FieldSpec("price", "td.price", "int"),
    "qty": FieldSpec("qty", "td.qty", "int"),
})


def test_a_table_rewritten_as_cards_heals_by_the_pairs_labels():
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, AFTER)
    assert res.ok, res.reason
    got = extract(AFTER, res.blueprint).data
    assert [(r["name"], r["price"], r["qty"]) for r in got] == [(n, int(p), int(q)) for n, p, q in ROWS]


def test_cards_without_the_labels_are_never_promoted():
    """Short numbers in unlike nodes and nothing naming them: no label takes them. At most their old
    cells do (fields.listing_by_cell), a place and not a name: staged below the Deployer's bar (0.75)."""
    bare = AFTER.replace("<span class='q9'>Product</span>", "").replace("<span class='q9'>Price</span>", "") \
                .replace("<span class='q9'>Qty</span>", "")
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, bare)
    assert not res.ok or res.confidence < 0.75
    assert "label" not in res.details["price"]["why"]


def test_a_pair_value_is_labelled_by_its_key():
    page = Page(AFTER)
    values = [i for i, t in enumerate(page.texts) if t == "30" and page.tags[i] == "span"]
    assert values and page.label_info(values[0]) == ("price", "pair")


def test_two_peers_are_no_pair():
    assert is_label_pair("div", ["span", "span"], 1, True)
    assert not is_label_pair("ul", ["li", "li"], 1, True)          # a list of two items
    assert not is_label_pair("div", ["span", "span", "span"], 1, True)
    assert not is_label_pair("div", ["span", "span"], 1, False)      # the first holds elements: no key
    assert not is_label_pair("div", ["span", "b"], 1, True)          # another kind: the older rule's
