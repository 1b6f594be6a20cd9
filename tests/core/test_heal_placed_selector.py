"""A single record's fields picked out by their cards' places (healerd.core.heal.fields.single_by_position)."""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.fields.single_by_position import placed_selector, values_copied
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.pipeline import heal

SPECS = [("Model", "Kettle KX-2"), ("Weight", "1.35"), ("Colour", "Slate grey"), ("Warranty", "24 months")]

BEFORE = (
    "<html><body><h1>Kettle</h1><table class='specs'>"
    + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in SPECS)
    + "</table><p>Ships in two days.</p></body></html>")

# the spec table rewritten as cards: every card built alike, nothing but its place tells them apart
AFTER = (
    "<html><body><h1>Kettle</h1><div class='grid'>"
    + "".join(f"<article class='card'><div class='pair'><span class='k'>{k}</span><span class='v'>{v}</span></div>"
              f"<div class='pair'><span class='k'>Note</span><span class='v'>-</span></div></article>"
              for k, v in SPECS)
    + "</div><p>Ships in two days.</p></body></html>")

BP = Blueprint(items=None, fields={
    "model": FieldSpec("model", "table.specs tr:nth-child(1) td", "str"),
    "weight": FieldSpec("weight", "table.specs tr:nth-child(2) td", "float"),
    "colour": FieldSpec("colour", "table.specs tr:nth-child(3) td", "str"),
    "warranty": FieldSpec("warranty", "table.specs tr:nth-child(4) td", "str"),
})


def test_spec_rows_become_look_alike_cards_and_heal_by_the_cards_places():
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, AFTER)
    assert res.ok, res.reason
    assert res.blueprint is not None
    got = extract(AFTER, res.blueprint).data
    assert got == {"model": "Kettle KX-2", "weight": 1.35, "colour": "Slate grey", "warranty": "24 months"}
    assert ":nth-" in res.blueprint.fields["warranty"].css


def test_the_placed_selector_gives_the_node_first_and_checks_with_lexbor():
    page = Page(AFTER)
    target = next(i for i, t in enumerate(page.texts) if t == "Slate grey" and page.tags[i] == "span")
    css = placed_selector(page, target)
    assert css is not None
    assert page.index_of(page.tree.root.css_first(css)) == target


def test_no_placed_selector_for_a_node_without_ancestors_to_place():
    page = Page("<html><body><p>one</p></body></html>")
    html = page.index_of(page.tree.root)
    assert placed_selector(page, html) is None


def test_no_placed_selector_where_a_copy_of_the_record_appeared():
    """A 'related' block now repeats a value: a place among look-alikes may be the copy's, so none is taken."""
    copy = "<aside class='related'><div class='pair'><span class='v'>Slate grey</span></div></aside>"
    after = AFTER.replace("<div class='grid'>", copy + "<div class='grid'>")
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, after)
    if res.ok:
        assert res.blueprint is not None
        assert not any(":nth-" in f.css for f in res.blueprint.fields.values() if f.css)


def test_values_copied_counts_new_places_only():
    before = Page("<html><head><title>Kettle</title></head><body><h1>Kettle</h1><p>1.35</p></body></html>")
    same = Page("<html><head><title>Kettle</title></head><body><h2>Kettle</h2><div><p>1.35</p></div></body></html>")
    more = Page("<html><body><h1>Kettle</h1><p>1.35</p><aside><b>1.35</b></aside></body></html>")
    assert not values_copied(before, same, [("Kettle", None), ("1.35", None)])
    assert values_copied(before, more, [("Kettle", None), ("1.35", None)])
