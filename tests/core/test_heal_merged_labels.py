"""The healer finds a value whose label moved into its node (healerd.core.heal.fields.merged_labels)."""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.pipeline import heal

ROWS = [("Claw hammer", "12", "4"), ("Garden hose", "30", "7"), ("Tape measure", "9", "15"), ("Spirit level", "21", "2")]

BEFORE = (
    "<html><body><ul id='stock'>" + "".join(
        f"<li class='item'><h3 class='name'>{n}</h3><span class='price'>{p}</span><span class='qty'>{q}</span></li>"
        for n, p, q in ROWS) + "</ul></body></html>")

BP = Blueprint(items="#stock li.item", fields={
    "name": FieldSpec("name", "h3.name", "str"),
    "price": FieldSpec("price", "span.price", "int"),
    "qty": FieldSpec("qty", "span.qty", "int"),
})


def after(qty_label) -> str:
    """The redesign: hashed classes, the quantity's label written into its node, in a key/value pair."""
    return "<html><body><div class='Xa9'>" + "".join(
        f"<div class='Kp2'><h3 class='T1'>{n}</h3><b class='Pz'>{p}</b>"
        f"<div class='Rw'><em class='Lb'>In stock</em><i class='Qf'>{qty_label(k)}{q}</i></div></div>"
        for k, (n, p, q) in enumerate(ROWS)) + "</div></body></html>"


def run(html: str):
    old = extract(BEFORE, BP).data
    return heal(BP, BEFORE, old, html)


def test_the_same_label_merged_in_every_record_is_the_field():
    html = after(lambda k: "Qty: ")
    res = run(html)
    assert res.ok, res.reason
    got = extract(html, res.blueprint).data
    assert [(r["name"], r["qty"]) for r in got] == [(n, int(q)) for n, _, q in ROWS]
    assert res.blueprint.fields["qty"].css != BP.fields["qty"].css


def test_text_that_differs_between_records_is_no_label():
    """Around a short number, text that changes from record to record is data: which node holds qty is a guess."""
    res = run(after(lambda k: f"Aisle {'ABCD'[k]}: "))
    assert not res.ok
    assert "qty" in res.reason


SINGLE = Blueprint(fields={
    "next_title": FieldSpec("next_title", "div.related a.next", "str"),
    "next_href": FieldSpec("next_href", "div.related a.next", "str", "href"),
})
TOC = "<ul class='toc'><li><a href='/intro'>Introduction</a></li><li><a href='/start#top'>Getting started</a></li></ul>"
SINGLE_BEFORE = (f"<html><body><nav>{TOC}</nav><main><p>Text</p></main>"
                 "<div class='related'><a class='next' href='/start'>Getting started</a></div></body></html>")
# the block's class renamed, and the link now says its label: the same text is found whole only in the table of contents
SINGLE_AFTER = (f"<html><body><nav>{TOC.replace('toc', 'Tq1')}</nav><main><p>Text</p></main>"
                "<div class='Rz8'><a class='next' href='/start'>Next: Getting started</a></div></body></html>")


def test_a_single_record_value_said_with_its_label_is_no_licence_to_take_a_lookalike_elsewhere():
    old = extract(SINGLE_BEFORE, SINGLE).data
    res = heal(SINGLE, SINGLE_BEFORE, old, SINGLE_AFTER)
    if res.ok:   # a heal must read the related link, never the table of contents
        assert extract(SINGLE_AFTER, res.blueprint).data["next_title"] == "Next: Getting started"
    else:
        assert "with a label merged in" in res.reason
