"""The built-in healer refuses look-alike pages instead of guessing (see bench/mutation.py).

Pages of our own where the old value sits in two places alike, only in an unlike place, or
where no column gives every record's value: the answer must be a refusal naming the field.
"""

from __future__ import annotations

import pytest

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.pipeline import heal


def blueprint(fields: dict[str, tuple[str, str]], items: str | None = None) -> Blueprint:
    return Blueprint(fields={n: FieldSpec(n, css, ftype) for n, (css, ftype) in fields.items()}, items=items)


def page(body: str) -> str:
    return f"<html><head><title>Shop</title></head><body>{body}</body></html>"


PRODUCT = {"title": ("h1.product-title", "str"), "price": ("span.price", "float")}
PRODUCT_BEFORE = page('<div class="product"><h1 class="product-title">Claw Hammer Deluxe</h1>'
                      '<span class="price">$14.99</span><p class="sku">SKU TL-1001</p></div>')
LISTING = {"name": ("td.name", "str"), "score": ("td.score", "int")}
LISTING_BEFORE = page('<table class="stats">' + "".join(
    f'<tr class="player"><td class="name">P{i}</td><td class="score">{i * 3}</td></tr>' for i in range(1, 6))
    + "</table>")


def refused(bp: Blueprint, before: str, after: str):
    res = heal(bp, before, extract(before, bp).data, after)
    assert res.ok is False, f"healed where it should refuse: {res.changed} -> {extract(after, res.blueprint).data}"
    return res


@pytest.mark.parametrize("after", [
    # the old price in two look-alike boxes: either could be the price tomorrow
    page('<div class="p"><h1 class="name">Claw Hammer Deluxe</h1><div class="a"><span class="amount">$14.99</span></div>'
         '<div class="b"><span class="amount">$14.99</span></div></div>'),
    # the old price only deep in a footer table, nothing like where it was
    page('<footer><table><tr><td><b><i>$14.99</i></b></td></tr></table></footer>'
         '<div class="p"><h1 class="name">Claw Hammer Deluxe</h1></div>'),
    # the old price twice in the product box, one wrapped: alike enough that neither clearly wins
    page('<div class="product"><h1 class="name">Claw Hammer Deluxe</h1><span class="amount">$14.99</span>'
         '<div><span class="amount">$14.99</span></div></div>'),
], ids=["two-alike-places", "only-an-unlike-place", "a-close-runner-up"])
def test_a_single_record_is_refused_when_the_value_has_no_one_right_place(after):
    res = refused(blueprint(PRODUCT), PRODUCT_BEFORE, after)
    assert "price" in res.reason


def test_a_listing_is_refused_when_no_column_gives_every_records_value():
    after = page('<table class="league">' + "".join(
        f'<tr class="row"><td class="n">P{i}</td><td class="s">{i * 3 if i != 2 else 50}</td>'
        f'<td class="s2">{i * 3 if i != 4 else 60}</td></tr>' for i in range(1, 6)) + "</table>")
    res = refused(blueprint(LISTING, items="tr.player"), LISTING_BEFORE, after)
    assert "score" in res.reason


def test_a_title_nearly_found_in_two_look_alike_boxes_with_different_values_is_refused():
    after = page('<div class="p"><div class="a"><h2 class="n">Claw Hammer Deluxe XL</h2></div>'
                 '<div class="b"><h2 class="n">Claw Hammer Deluxe XS</h2></div><span class="cost">$14.99</span></div>')
    res = refused(blueprint(PRODUCT), PRODUCT_BEFORE, after)
    assert "title" in res.reason


def test_two_fields_that_had_two_nodes_are_not_healed_onto_one():
    # the breadcrumb repeating the title is gone: both old values are now found only in the title
    fields = {"title": ("h1.product-title", "str"), "crumb": ("span.crumb", "str")}
    before = page('<nav><span class="crumb">Garden Spade</span></nav>'
                  '<div class="product"><h1 class="product-title">Garden Spade</h1><p>Steel</p></div>')
    after = page('<div class="product"><h1 class="name">Garden Spade</h1><p>Steel</p></div>')
    res = refused(blueprint(fields), before, after)
    assert "crumb" in res.reason


SIZE_BEFORE = ('<div class="product"><h1 class="product-title">Claw Hammer Deluxe</h1><span class="size">{v}</span>'
               '<p class="sku">SKU TL-1001</p></div>')


@pytest.mark.parametrize("value,ftype", [("$14.99", "float"), ("1499", "int"), ("X L", "str")],
                         ids=["short-money", "short-number", "three-characters"])
@pytest.mark.parametrize("moved_to", [
    '<div class="product"><h1 class="product-title">Claw Hammer Deluxe</h1><p class="sku">SKU TL-1001</p></div>'
    '<aside><ul><li>{v}</li></ul></aside>',
    '<div class="product"><h1 class="product-title">Claw Hammer Deluxe</h1><p class="sku">SKU TL-1001</p>'
    '<p class="cost">{v}</p></div>',
], ids=["an-aside-list", "a-paragraph"])
def test_a_short_value_found_only_in_a_half_alike_place_is_refused(value, ftype, moved_to):
    # a short value occurs by chance: found once in a place only half like the old one, it is no evidence
    bp = blueprint({"size": ("span.size", ftype)})
    res = refused(bp, page(SIZE_BEFORE.format(v=value)), page(moved_to.format(v=value)))
    assert "size" in res.reason


def test_a_title_extended_two_ways_in_look_alike_headings_is_refused():
    # "… XL" and "… XS" both contain the old title equally: which one is the product cannot be told
    after = page('<div class="p"><h1 class="t1">Claw Hammer Deluxe XL</h1><h1 class="t2">Claw Hammer Deluxe XS</h1>'
                 '<span class="cost">$14.99</span></div>')
    res = refused(blueprint(PRODUCT), PRODUCT_BEFORE, after)
    assert "title" in res.reason


STOCK = {"title": ("h1.name", "str"), "stock": ("span.stock", "int")}
STOCK_BEFORE = page('<div class="item"><h1 class="name">Garden Spade Pro</h1><span class="stock">7</span></div>')


@pytest.mark.parametrize("elsewhere", ['<ul><li><a>7</a></li></ul>', '<nav><ul><li><a href="/p/7">7</a></li></ul></nav>'],
                         ids=["a-list-link", "a-pager-link"])
def test_a_short_stock_number_is_not_healed_onto_an_unrelated_link(elsewhere):
    # the stock box is gone; a "7" in a link list after the item is chance, not the stock
    after = page('<div class="item"><h1 class="name">Garden Spade Pro</h1><div class="avail">in stock</div></div>' + elsewhere)
    res = refused(blueprint(STOCK), STOCK_BEFORE, after)
    assert "stock" in res.reason


@pytest.mark.parametrize("old_records", [{"title": "Garden Spade Pro", "stock": 7}, {}, {"title": None, "stock": None}],
                         ids=["records-the-pages-do-not-hold", "no-records", "records-without-values"])
def test_empty_pages_are_never_healed(old_records):
    res = heal(blueprint(STOCK), "", old_records, "")
    assert res.ok is False and res.blueprint is None, res.reason


def test_a_short_number_is_not_vouched_for_by_the_text_before_it():
    # the text before the old stock (the title) is also before a "7" in a list: a loose label, no evidence
    after = page('<div class="item"><h1 class="name">Garden Spade Pro</h1></div><ul><li>7</li></ul>')
    res = refused(blueprint({"stock": ("span.stock", "int")}), STOCK_BEFORE, after)
    assert "stock" in res.reason


def test_a_listing_whose_records_now_sit_in_two_alike_lists_is_refused():
    # every value changed and the rows lost their class: two tables of rows carry values of the old
    # kinds equally well, so which one holds the records cannot be told
    def rows(first: int, cls: str) -> str:
        return "".join(f'<tr class="{cls}"><td class="name">P{i + first}</td><td class="score">{i * 7 + 40}</td></tr>'
                       for i in range(1, 6))
    after = page(f'<table class="x"><tbody class="a">{rows(20, "row")}</tbody></table>'
                 f'<div><table class="y"><tbody class="b">{rows(30, "line")}</tbody></table></div>')
    res = refused(blueprint(LISTING, items="tr.player"), LISTING_BEFORE, after)
    assert "items" in res.reason
