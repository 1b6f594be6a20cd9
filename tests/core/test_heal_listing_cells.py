"""A table's rows become a grid of divs: short values placed by their old cell (healerd.core.heal.fields.listing_by_cell)."""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.fields.listing_by_cell import ALIGNED_CONFIDENCE
from healerd.core.heal.pipeline import heal

ROWS = [("Claw hammer", "12", "4"), ("Garden hose", "30", "7"), ("Tape measure", "9", "15"), ("Spirit level", "21", "2")]

BEFORE = (
    "<html><body><h1>Stock</h1><table id='stock'><tr><th>Product</th><th>Price</th><th>Qty</th></tr>"
    + "".join(f"<tr class='row'><td class='name'>{n}</td><td class='price'>{p}</td><td class='qty'>{q}</td></tr>"
              for n, p, q in ROWS) + "</table></body></html>")


def grid(order: tuple[int, int, int] = (0, 1, 2), width: int = 3, rows: int = len(ROWS)) -> str:
    """The table as a grid of divs, every class hashed, the header row a row like the others, no labels."""
    def row(cells: tuple[str, ...]) -> str:
        picked = [cells[k] for k in order] + ["-"] * (width - 3)
        return "<div class='r8Tx'>" + "".join(f"<div class='c4Qz'>{c}</div>" for c in picked) + "</div>"
    return ("<html><body><h1>Stock</h1><div class='g1Aa'>" + row(("Product", "Price", "Qty"))
            + "".join(row(r) for r in ROWS[:rows]) + "</div></body></html>")


BP = Blueprint(items="#stock tr.row", fields={
    "name": FieldSpec("name", "td.name", "str"),
    "price": FieldSpec("price", "td.price", "int"),
    "qty": FieldSpec("qty", "td.qty", "int"),
})


def test_short_values_in_their_old_cells_heal_staged():
    after = grid()
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, after)
    assert res.ok, res.reason
    got = extract(after, res.blueprint).data
    assert [(r["name"], r["price"], r["qty"]) for r in got] == [(n, int(p), int(q)) for n, p, q in ROWS]
    # the place and the value, no name: below the Deployer's promotion bar
    assert res.confidence == ALIGNED_CONFIDENCE < 0.75
    assert "old cell" in res.details["qty"]["why"]


def test_cells_in_another_order_stay_refused():
    """The name, found by value, moved to the last cell: the old cells say nothing of the short values' place,
    not even of the price's, still in its old cell."""
    after = grid(order=(2, 1, 0))
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, after)
    assert not res.ok
    assert res.details["price"]["status"] == "ambiguous"
    assert "short values" in res.details["price"]["why"]


def test_rows_of_another_width_stay_refused():
    after = grid(width=4)
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, after)
    assert not res.ok


def test_a_block_carrying_only_some_of_the_records_is_no_grid_of_them():
    """Cells say where a value sits only among all the records: with one of them not found again (a
    "related" block copying some records looks just so), the short values stay refused."""
    after = grid(rows=len(ROWS) - 1)
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, after)
    assert not res.ok
    assert res.details["qty"]["status"] == "ambiguous"
