"""Cards whose labels reword the old column headers (healerd.core.heal.page.label_pairs.label_renamed)."""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.page.label_pairs import label_renamed
from healerd.core.heal.pipeline import heal

ROWS = [("Claw hammer", "12", "4"), ("Garden hose", "30", "7"), ("Tape measure", "9", "15"), ("Spirit level", "21", "2")]

BEFORE = (
    "<html><body><h1>Stock</h1><table id='stock'><thead><tr><th>Product</th><th>Price</th><th>Qty</th></tr></thead>"
    "<tbody>" + "".join(f"<tr class='row'><td class='name'>{n}</td><td class='price'>{p}</td><td class='qty'>{q}</td></tr>"
                         for n, p, q in ROWS) + "</tbody></table></body></html>")


def cards(price_label: str, qty_label: str, rows: list[tuple[str, str, str]] = ROWS) -> str:
    """The table as cards of labelled pairs, every class hashed, the headers written anew."""
    return (
        "<html><body><h1>Stock</h1><div class='x7Fq'>" + "".join(
            f"<article class='k2Jd'><div class='a1'><span class='q9'>Product</span><span class='w3'>{n}</span></div>"
            f"<div class='a1'><span class='q9'>{price_label}</span><span class='w3'>{p}</span></div>"
            f"<div class='a1'><span class='q9'>{qty_label}</span><span class='w3'>{q}</span></div></article>"
            for n, p, q in rows) + "</div></body></html>")


BP = Blueprint(items="#stock tbody tr.row", fields={
    "name": FieldSpec("name", "td.name", "str"),
    "price": FieldSpec("price", "td.price", "int"),
    "qty": FieldSpec("qty", "td.qty", "int"),
})


def test_reworded_headers_still_name_their_columns_at_a_staged_confidence():
    after = cards("Price (current)", "Your qty")
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, after)
    assert res.ok, res.reason
    got = extract(after, res.blueprint).data
    assert [(r["name"], r["price"], r["qty"]) for r in got] == [(n, int(p), int(q)) for n, p, q in ROWS]
    # weaker evidence than the old label itself: below the Deployer's bar (0.75), staged for a person
    assert res.confidence < 0.75
    assert "reworded" in res.details["qty"]["why"]


def test_the_old_labels_themselves_keep_their_confidence():
    after = cards("Price", "Qty")
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, after)
    assert res.ok, res.reason
    assert res.confidence >= 0.75


def test_labels_naming_the_other_column_leave_short_values_refused():
    after = cards("Qty", "Price")
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, after)
    assert not res.ok
    assert "price" in res.reason and "qty" in res.reason


def test_unrelated_labels_are_no_rewording():
    """'Cost' is no rewording of 'Price': the field is not taken by its label (at best by its cell, staged)."""
    after = cards("Cost", "Count")
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, after)
    assert "reworded" not in res.details["qty"]["why"]
    assert not res.ok or res.confidence < 0.75


def test_a_rewording_keeps_every_old_word_and_adds_few():
    assert label_renamed("storage", "your storage")
    assert label_renamed("price", "price (current)")
    assert not label_renamed("price", "price")                  # the same label is no rewording
    assert not label_renamed("storage limit", "storage used")    # an old word gone
    assert not label_renamed("qty", "qty left in the north warehouse")
    assert not label_renamed("", "anything")


def test_a_reworded_label_counts_only_among_all_the_records():
    """The list's values all changed; a "related" block copies two of the old records under reworded
    labels. Its cards hold old values, but not every record: the rewording names no column there."""
    new_rows = [("Mallet", "105", "61"), ("Hose reel", "133", "81"), ("Laser measure", "149", "71"), ("Level", "125", "91")]
    related = cards("Price (current)", "Your qty", ROWS[:2]).split("<body>")[1].split("</body>")[0].replace("k2Jd", "r5Xy")
    after = cards("Price", "Qty", new_rows).replace("</body>", f"<aside class='related'>{related}</aside></body>")
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, after)
    assert not res.ok
    assert "reworded" not in res.details["qty"]["why"]
