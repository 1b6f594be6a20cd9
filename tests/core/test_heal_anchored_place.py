"""A single record's field whose value changed with the layout (healerd.core.heal.fields.single_anchored).

A product page restyled (tags and classes renamed) while its price changed: the old price is
nowhere on the page, but the title and the SKU were found again by their values, and the price
sits relative to them as it did. It is placed there, at a confidence no higher than the promotion
threshold. Its data removed, a related item's old name in its place, or the found fields pointing
at different places: refused.
"""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.fields.single_anchored import place_by_anchors
from healerd.core.heal.fields.single_candidates import Candidate
from healerd.core.heal.page.fingerprint import Page, fingerprint
from healerd.core.heal.pipeline import heal
from healerd.core.heal.single_record import _confidence
from healerd.core.judge import LOW_CONFIDENCE

BP = Blueprint(fields={
    "title": FieldSpec("title", "div.product h1.title"),
    "sku": FieldSpec("sku", "div.product span.sku"),
    "price": FieldSpec("price", "div.product span.price", type="float"),
})
OLD_CLASSES = ("title", "sku", "price", "note")
NEW_CLASSES = ("Card_title__x1", "Card_code__x2", "Card_amount__x3", "Card_foot__x4")
RELATED = "<aside><h3>Related</h3><a href='/p/2'>Brass Floor Lamp</a><span>39.90</span></aside>"


def page(box: str, tag: str, cls: tuple[str, ...], price: str | None, related: str = RELATED,
         order: str = "tsp") -> str:
    parts = {"t": f"<h1 class='{cls[0]}'>Walnut Desk Lamp</h1>", "s": f"<{tag} class='{cls[1]}'>WDL-2231</{tag}>",
             "p": "" if price is None else f"<{tag} class='{cls[2]}'>{price}</{tag}>",
             "g": f"<div><{tag} class='{cls[1]}'>WDL-2231</{tag}><span>New arrival</span></div>"}
    return (f"<html><body><header><a href='/'>Home</a></header><main><div class='{box}'>"
            + "".join(parts[k] for k in order)
            + f"<p class='{cls[3]}'>Ships in two days</p></div>{related}</main></body></html>")


BEFORE = page("product", "span", OLD_CLASSES, "49.90")
OLD = extract(BEFORE, BP).data


def restyled(price: str | None, **kw) -> str:
    return page("Card_box__9f", "div", NEW_CLASSES, price, **kw)


def test_a_changed_value_is_placed_as_before_relative_to_the_fields_found_again():
    after = restyled("54.90")
    res = heal(BP, BEFORE, OLD, after)
    assert res.ok and res.blueprint is not None, res.reason
    assert "placed as before relative to sku, title" in res.reason
    assert extract(after, res.blueprint).data == {"title": "Walnut Desk Lamp", "sku": "WDL-2231", "price": 54.9}
    assert res.confidence <= LOW_CONFIDENCE    # structure, not the value: never above the promotion threshold


def test_the_placement_alone_stays_under_the_promotion_threshold():
    """Without the agreement's corroboration the placement's own confidence is a staged one."""
    after = Page(restyled("54.90"))
    before = Page(BEFORE)
    old_nodes = {n: before.index_of(before.tree.css_first(s.css)) for n, s in BP.fields.items()}
    sku_node = after.index_of(after.tree.css_first("div.Card_code__x2"))
    title_node = after.index_of(after.tree.css_first("h1"))
    decisions = {"title": ("healed", Candidate(title_node, 1.0, 1.0, False, "exact"), "old value found"),
                 "sku": ("healed", Candidate(sku_node, 1.0, 1.0, False, "exact"), "old value found"),
                 "price": ("gone", None, "the old value is nowhere on the page")}
    raw = {"title": "Walnut Desk Lamp", "sku": "WDL-2231", "price": "49.90"}
    fps = {n: fingerprint(before, old_nodes[n], raw[n]) for n in BP.fields}
    placed = place_by_anchors(BP, before, after, old_nodes, raw, fps, decisions)
    assert set(placed) == {"price"}
    cand, _why = placed["price"]
    assert after.value(cand.node, None) == "54.90"
    assert _confidence(cand) < LOW_CONFIDENCE


def test_a_price_removed_stays_refused():
    res = heal(BP, BEFORE, OLD, restyled(None))
    assert not res.ok and "price" in res.reason


def test_old_text_in_the_old_place_is_no_new_value():
    """The price removed and the related item's price moved into its place: text the last good page showed."""
    after = restyled("39.90", related="<aside><h3>Related</h3></aside>")
    res = heal(BP, BEFORE, OLD, after)
    assert not res.ok and "price" in res.reason


def test_every_field_found_again_must_lead_to_the_node():
    """The SKU now grouped with a badge: from the title the old path still leads to the price's place,
    from the SKU it leads nowhere; one anchor alone does not place the field when another disagrees."""
    after = restyled("54.90", order="tgp")
    res = heal(BP, BEFORE, OLD, after)
    assert not res.ok and "price" in res.reason


REPORT = Blueprint(fields={
    "title": FieldSpec("title", "div.note > h1"),
    "author": FieldSpec("author", "div.note p strong"),
    "data_file": FieldSpec("data_file", "div.note p code"),
})


def report(author: str) -> str:
    return ("<html><body><div class='note'><h1>Reservoir levels, week 23</h1>"
            f"<p>Prepared by {author} for the Water Board on 2023-06-09.</p>"
            "<p>Levels are read from the export <code>levels_w23.csv</code>.</p></div></body></html>")


def test_the_sentence_a_removed_value_sat_in_is_not_its_new_value():
    """The author's <strong> removed from its sentence: the path from the title now leads to the <p>,
    which says the old sentence's words around nothing. Data gone: refused."""
    before = report("<strong>Priya Raman</strong>")
    res = heal(REPORT, before, extract(before, REPORT).data, report(""))
    assert not res.ok and "author" in res.reason


def test_a_renamed_author_in_the_same_sentence_is_placed():
    before = report("<strong>Priya Raman</strong>")
    after = report("<b>Dana Whitfield</b>")
    res = heal(REPORT, before, extract(before, REPORT).data, after)
    assert res.ok and res.blueprint is not None, res.reason
    assert extract(after, res.blueprint).data["author"] == "Dana Whitfield"
