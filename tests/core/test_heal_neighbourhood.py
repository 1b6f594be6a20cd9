"""A single record told from a look-alike copy by the tree around it (healerd.core.heal.fields.single_by_neighbourhood)."""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.fields.single_by_neighbourhood import likeness, pick, profile
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.pipeline import heal
from healerd.core.judge import LOW_CONFIDENCE

BP = Blueprint(fields={
    "title": FieldSpec("title", "div.product h1.title", "str"),
    "price": FieldSpec("price", "div.product span.price", "str"),
})

BEFORE = ("<html><body><header><a href='/'>Shop</a></header><section><div class='product'><h1 class='title'>Claw hammer</h1>"
          "<span class='price'>$14.99</span></div><footer>About</footer></section></body></html>")


def record(title: str = "Claw hammer", price: str = "$14.99") -> str:
    return f"<div class='x1'><h1 class='x2'>{title}</h1><span class='x3'>{price}</span></div>"


# classes hashed, and a "Recommended" block with a copy of the record placed before the real one, in
# the same markup: the same path from the root (body > section > div), only the tree around tells
AFTER = ("<html><body><header><a href='/'>Shop</a></header><section><h3>Recommended</h3>" + record() +
         "</section><section>" + record() + "<footer>About</footer></section></body></html>")


def test_the_record_where_it_sat_is_taken_and_staged_for_a_person():
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, AFTER)
    assert res.ok, res.reason
    page = Page(AFTER)
    node = page.index_of(page.tree.root.css_first(res.blueprint.fields["price"].css))
    assert node is not None and "footer" in [page.tags[k] for k in page.children[page.parent[page.parent[node]]]]
    assert res.confidence < LOW_CONFIDENCE


def test_two_copies_in_like_surroundings_stay_refused():
    """Neither block is where the record sat: each is a new section with a heading beside the record."""
    twice = ("<html><body><header><a href='/'>Shop</a></header><section><h3>Recommended</h3>" + record() +
             "</section><section><h3>Today's deal</h3>" + record() + "</section></body></html>")
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, twice)
    assert not res.ok
    assert "two places carry" in res.reason


def test_a_new_holder_costs_more_than_a_sibling():
    before = Page(BEFORE)
    after = Page(AFTER)
    old = profile(before, before.index_of(before.tree.root.css_first("span.price")))
    prices = [i for i, t in enumerate(after.texts) if t == "$14.99" and after.tags[i] == "span"]
    decoy, real = prices
    # the real record: only the body gained a child (the new block); the copy: a new holder too
    assert likeness(old, profile(after, real)) == 0.8
    assert likeness(old, profile(after, decoy)) < 0.6


def test_two_places_as_like_the_old_one_are_not_told_apart():
    """Both blocks sit as the old one did (two look-alike sections): the tree does not tell."""
    twice = Page("<html><body><header><a href='/'>Shop</a></header><section>" + record() + "<footer>About</footer>"
                 "</section><section>" + record() + "<footer>Contact</footer></section></body></html>")
    before = Page(BEFORE)
    old_node = before.index_of(before.tree.root.css_first("span.price"))
    nodes = [i for i, t in enumerate(twice.texts) if t == "$14.99" and twice.tags[i] == "span"]
    node, why = pick(before, old_node, twice, nodes)
    assert node is None and "nor does the tree" in why
    node, _ = pick(before, old_node, Page(AFTER), [i for i, t in enumerate(Page(AFTER).texts) if t == "$14.99"])
    assert node is not None
