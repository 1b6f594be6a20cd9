"""A selector loosened through the siblings' change of node never reads the record's own container
(healerd.core.heal.fields.listing_by_siblings.all_of_tag).

A table become a grid of <div>s, two header rows kept as grid rows before the records: the first
record's row is itself `:nth-child(3)`, so a loosened `:nth-child(3)` matches, in that record, the
row whole ("Alder Lake Plus North 4121 87.5" read as one number). Such a selector is not the
field's; the heal then reads every record's own cell, or refuses.
"""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.pipeline import heal

BP = Blueprint(items="table.frame tbody tr", fields={
    "reservoir": FieldSpec("reservoir", "th"),
    "capacity": FieldSpec("capacity", "td:nth-child(3)", type="int"),
    "level": FieldSpec("level", "td:nth-child(4)", type="float"),
})
ROWS = [("Alder Lake", "North", "4120", "87.5"), ("Birch Hollow", "West", "2650", "64.2"),
        ("Cedar Falls", "North", "8830", "91.0"), ("Dunmore", "East", "1975", "48.7"),
        ("Elm Ridge", "South", "3310", "72.4")]
NEW_CAPACITY = ["4121", "2651", "8831", "1976", "3311"]
BEFORE = ("<html><body><table class='frame'><thead><tr><th></th><th>region</th><th>capacity</th><th>level</th></tr>"
          "<tr><th>reservoir</th><th></th><th></th><th></th></tr></thead><tbody>"
          + "".join(f"<tr><th>{a}</th><td>{b}</td><td>{c}</td><td>{d}</td></tr>" for a, b, c, d in ROWS)
          + "</tbody></table></body></html>")


def _row(cells) -> str:
    return "<div class='grid-row'>" + "".join(f"<div class='cell'>{x}</div>" for x in cells) + "</div>"


NEW_ROWS = [(a + " Plus", b, cap, d) for (a, b, _c, d), cap in zip(ROWS, NEW_CAPACITY)]
AFTER = ("<html><body><div class='grid frame'>" + _row(["", "region", "capacity", "level"])
         + _row(["reservoir", "", "", ""]) + "".join(_row(r) for r in NEW_ROWS) + "</div></body></html>")


def test_no_field_reads_the_first_records_whole_row():
    res = heal(BP, BEFORE, extract(BEFORE, BP).data, AFTER)
    if res.ok:
        assert res.blueprint is not None
        assert [r["capacity"] for r in extract(AFTER, res.blueprint).data] == [int(v) for v in NEW_CAPACITY]
    else:
        assert "capacity" in res.reason
