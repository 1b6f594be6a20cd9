"""A listing field's selector that finds nothing in a record saying the old value with a label merged in
misses that record (healerd.core.heal.fields.listing_by_value)."""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.pipeline import heal

BP = Blueprint(items="div.log div.sec", fields={
    "anchor": FieldSpec("anchor", "h2 a.link", "str", attr="href"),
    "note": FieldSpec("note", "li", "str"),
})
ADDED = "Added <a href='api.html#restock'><code>restock()</code></a> warehouse argument."
FIXED = "Fixed rounding in <a href='api.html#tax'><code>price_with_tax()</code></a>."


def section(i: int, note: str, ul: str = "simple", li: str = "", sec: str = "sec", link: str = "link") -> str:
    cls = f" class='{li}'" if li else ""
    return (f"<div class='{sec}' id='s{i}'><h2>1.{i}<a class='{link}' href='#s{i}'>¶</a></h2>"
            f"<ul class='{ul}'><li{cls}>{note}</li></ul></div>")


BEFORE = ("<html><body><div class='log'>" + section(1, ADDED) + section(2, FIXED)
          + section(3, "First public release.") + "</div></body></html>")
# utility classes everywhere (two lists happen to share one), and a label merged into the last note
AFTER = ("<html><body><div class='log'>" + section(1, ADDED, "gap-4 rounded-lg", "py-2 shadow", "w-full", "p-3")
         + section(2, FIXED, "rounded-lg border", "border font-medium", "text-sm", "md")
         + section(3, "Note: First public release.", "hidden mb-4", "truncate mt-2", "py-2", "p-3 x")
         + "</div></body></html>")


def test_a_selector_finding_nothing_where_the_label_merged_value_is_loses_to_one_reading_it():
    res = heal(BP, BEFORE, extract(BEFORE, BP).data, AFTER)
    assert res.ok, res.reason
    notes = [r["note"] for r in extract(AFTER, res.blueprint).data]
    assert notes[2] == "Note: First public release."   # not None: the record still says it
