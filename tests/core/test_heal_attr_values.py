"""The built-in healer finding a text field's last good values again in an attribute.

Small page pairs of our own: a shop whose release keeps each price only in a `data-value`
(or in a child's attribute, or an `aria-label`) while the visible text becomes a login wall or
goes away. The field is written with `attr = "..."` and found at the confidence of a value found
as text. Where the values are truly gone (the attribute an opaque token, nothing at all, a
`<meta content>` in the head, one record of several), the heal is refused; a value changed in
place keeps its text even when the node keeps the old value in an attribute; a copy of a value
in an unlike node's `title` is not the field.
"""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.pipeline import heal

PROMOTION_THRESHOLD = 0.75
PRODUCTS = [("Blue Kettle", "14.99"), ("Red Toaster", "39.50"), ("Steel Pan", "22.75"), ("Oak Board", "18.20")]
LISTING = Blueprint(fields={"name": FieldSpec("name", "a.name", "str"), "price": FieldSpec("price", "span.price", "str")},
                    items="ul.products li.item")
SINGLE = Blueprint(fields={"title": FieldSpec("title", "h1.title", "str"), "price": FieldSpec("price", "span.price", "str"),
                           "sku": FieldSpec("sku", "span.sku", "str")})


def _page(body: str, head: str = "") -> str:
    return f"<html><head><title>Shop</title>{head}</head><body><main>{body}</main></body></html>"


def _listing(price) -> str:
    return _page("<ul class='products'>" + "".join(
        f"<li class='item'><a class='name' href='/p/{k}'>{name}</a> {price(value)}</li>"
        for k, (name, value) in enumerate(PRODUCTS)) + "</ul>")


def _single(price: str, head: str = "", around: str = "") -> str:
    return _page(f"<div class='product'{around}><h1 class='title'>Blue Kettle</h1>{price}"
                 "<span class='sku'>KT-2231</span></div>", head)


LISTING_BEFORE = _listing(lambda v: f"<span class='price'>{v}</span>")
SINGLE_BEFORE = _single("<span class='price'>14.99</span>")


def _heal(bp: Blueprint, before: str, after: str):
    return heal(bp, before, extract(before, bp).data, after)


def test_listing_prices_kept_only_in_a_data_attribute_behind_a_login_wall_are_read_from_it():
    after = _listing(lambda v: f"<span class='price' data-value='{v}'>Sign in to view</span>")
    res = _heal(LISTING, LISTING_BEFORE, after)
    assert res.ok, res.reason
    assert res.blueprint.fields["price"].attr == "data-value"
    assert [r["price"] for r in extract(after, res.blueprint).data] == [v for _n, v in PRODUCTS]
    assert res.confidence >= PROMOTION_THRESHOLD   # as found as text: the old values themselves, in every record


def test_listing_prices_moved_into_a_childs_attribute_with_the_text_gone_are_read_from_it():
    after = _listing(lambda v: f"<span class='price'><span class='v' aria-label='{v}'></span></span>")
    res = _heal(LISTING, LISTING_BEFORE, after)
    assert res.ok, res.reason
    assert res.blueprint.fields["price"].attr == "aria-label"
    assert [r["price"] for r in extract(after, res.blueprint).data] == [v for _n, v in PRODUCTS]


def test_listing_names_behind_a_wall_of_words_are_read_from_their_attribute_not_kept_as_changed():
    """The link now says "Members only" (words, like the names were): not a value changed in place,
    since the same node keeps each record's old name in its `data-value`."""
    after = _page("<ul class='products'>" + "".join(
        f"<li class='item'><a class='name' href='/p/{k}' data-value='{name}'>Members only</a> "
        f"<span class='price'>{value}</span></li>" for k, (name, value) in enumerate(PRODUCTS)) + "</ul>")
    res = _heal(LISTING, LISTING_BEFORE, after)
    assert res.ok, res.reason
    assert res.blueprint.fields["name"].attr == "data-value"
    assert [r["name"] for r in extract(after, res.blueprint).data] == [n for n, _v in PRODUCTS]


def test_listing_prices_whose_attribute_holds_an_opaque_token_are_refused():
    tokens = iter(["a81f2c", "9bd410", "c0ffee", "77e1a9"])
    after = _listing(lambda v: f"<span class='price' data-value='{next(tokens)}'>Sign in to view</span>")
    res = _heal(LISTING, LISTING_BEFORE, after)
    assert not res.ok and "price" in res.reason, res.reason


def test_listing_price_kept_in_one_record_of_four_is_refused():
    """One record's value in an attribute may be chance: most of the records must carry theirs."""
    after = _listing(lambda v: f"<span class='price' data-value='{v}'>Sign in to view</span>" if v == "14.99"
                     else "<span class='price'>Sign in to view</span>")
    res = _heal(LISTING, LISTING_BEFORE, after)
    assert not res.ok and "price" in res.reason, res.reason


def test_listing_prices_changed_in_place_are_not_read_from_a_stale_attribute():
    """Each price changed; the node keeps the old one in `data-was`: the text is the field, not the copy."""
    after = _listing(lambda v: f"<span class='price' data-was='{v}'>{float(v) + 1:.2f}</span>")
    res = _heal(LISTING, LISTING_BEFORE, after)
    assert not res.ok or res.blueprint.fields["price"].attr is None, res.reason


def test_single_price_kept_only_in_a_data_attribute_is_read_from_it_at_the_text_confidence():
    after = _single("<span class='price' data-value='14.99'>Log in to see the price</span>")
    res = _heal(SINGLE, SINGLE_BEFORE, after)
    assert res.ok, res.reason
    assert res.blueprint.fields["price"].attr == "data-value"
    assert extract(after, res.blueprint).data["price"] == "14.99"
    assert res.confidence >= PROMOTION_THRESHOLD


def test_single_title_carried_by_several_attributes_is_read_from_the_node_like_the_old_one():
    """The wrapper also names the product in `data-document-title`; the heading keeps it in `data-value`."""
    after = _single("<span class='price'>14.99</span>", around=" data-document-title='Blue Kettle'").replace(
        "<h1 class='title'>Blue Kettle</h1>", "<h1 class='title' data-value='Blue Kettle'></h1>")
    res = _heal(SINGLE, SINGLE_BEFORE, after)
    assert res.ok, res.reason
    assert res.blueprint.fields["title"].attr == "data-value"
    assert extract(after, res.blueprint).data["title"] == "Blue Kettle"


def test_single_price_behind_a_wall_with_no_attribute_left_is_refused():
    res = _heal(SINGLE, SINGLE_BEFORE, _single("<span class='price'>Log in to see the price</span>"))
    assert not res.ok and "price" in res.reason, res.reason


def test_single_price_said_only_by_a_meta_tag_in_the_head_is_refused():
    after = _single("<span class='price'>Log in to see the price</span>",
                    head="<meta property='product:price:amount' content='14.99'>")
    res = _heal(SINGLE, SINGLE_BEFORE, after)
    assert not res.ok and "price" in res.reason, res.reason


def test_single_title_copied_in_an_unlike_buttons_title_is_not_the_field():
    """The heading's text is gone; a "save" button's title repeats the product's name: a copy, not the field."""
    after = _single("<span class='price'>14.99</span>").replace(
        "<h1 class='title'>Blue Kettle</h1>",
        "<h1 class='title'></h1><button type='button' class='fav' title='Blue Kettle'>Save</button>")
    res = _heal(SINGLE, SINGLE_BEFORE, after)
    assert not res.ok and "title" in res.reason, res.reason


def test_single_title_in_its_heading_attribute_is_found_though_a_related_card_still_says_it():
    """A "related" card below repeats the name as text; the heading keeps it in `data-value`: the heading."""
    after = _single("<span class='price'>14.99</span>").replace(
        "<h1 class='title'>Blue Kettle</h1>", "<h1 class='title' data-value='Blue Kettle'>Members only</h1>")
    after = after.replace("</main>", "<aside class='related'><h6>Blue Kettle</h6></aside></main>")
    res = _heal(SINGLE, SINGLE_BEFORE, after)
    assert res.ok, res.reason
    assert res.blueprint.fields["title"].attr == "data-value"
    assert extract(after, res.blueprint).data["title"] == "Blue Kettle"


def test_single_title_carried_only_by_an_unlike_nodes_data_attribute_is_not_the_field():
    """The heading is empty; only a favourite button's container names the product in `data-title`."""
    after = _single("<span class='price'>14.99</span>").replace(
        "<h1 class='title'>Blue Kettle</h1>",
        "<h1 class='title'></h1><div id='fav' data-title='Blue Kettle'><button type='button'>Save</button></div>")
    res = _heal(SINGLE, SINGLE_BEFORE, after)
    assert not res.ok and "title" in res.reason, res.reason
