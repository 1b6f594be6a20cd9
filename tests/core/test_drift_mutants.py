"""Drift that validation passes (healerd.core.drift): cases a mutation found no test for.

- records repeated in the last good data already are no sign of a block of copies;
- production giving fewer records than the healer finds again is drift, as more is;
- the cheap trigger stays quiet where a title and a link legitimately share their values.
"""

from __future__ import annotations

import pytest
from selectolax.lexbor import LexborHTMLParser

from healerd.core.blueprint import from_dict
from healerd.core.drift import _renamed, copies, drift_reason, label_of, shift_suspect
from healerd.core.extract import extract
from healerd.core.validate import last_good_sample
from tests.support.driftpages import TABLE_BP, table

NAMES = ["name", "score"]


def test_records_repeated_in_the_last_good_data_already_are_no_block_of_copies():
    ada, bob = {"name": "Ada", "score": 31}, {"name": "Bob", "score": 20}
    assert copies([ada, ada, bob], [ada, ada, bob], NAMES) is None
    assert copies([ada, ada, bob, bob], [ada, ada, bob], NAMES) is None
    # last good records all distinct: a repeat now is a copy
    assert copies([ada, bob, ada], [ada, bob], NAMES) == ("1 of 3 records repeat another record exactly: the items "
                                                          "selector also picks up a block of copies")
    # records with no value at all are not counted as repeats
    assert copies([ada, bob, {"name": None, "score": None}, {"name": None, "score": None}], [ada, bob], NAMES) is None


def test_production_missing_records_the_healer_finds_again_is_drift():
    bp = from_dict(dict(TABLE_BP, url="http://127.0.0.1/x"))
    before = table()
    old = extract(before, bp).data
    after = before
    for name in ("Linus", "Ken"):     # two rows restyled: the items selector no longer picks them up
        after = after.replace(f'<tr class="player"><td class="name">{name}', f'<tr class="player-new"><td class="name">{name}')
    new = extract(after, bp).data
    assert (len(old), len(new)) == (5, 3)
    why = drift_reason(bp, before, old, after, new)
    assert why is not None and why.startswith("the last good records are found again as 5 records, but the items "
                                              "selector now gives 3"), why


def test_a_title_and_a_link_sharing_values_do_not_trigger_the_check():
    """A new post whose link text is its title: the link gives a value the sample had as a title only,
    but the title still holds it as often; nothing moved."""
    sample = last_good_sample([{"title": "Alpha", "link": "Read more"}, {"title": "Beta", "link": "Beta"}])
    newer = [{"title": "Alpha", "link": "Alpha"}, {"title": "Gamma", "link": "Gamma"}]
    assert shift_suspect(newer, sample) is False
    # the link giving the title's values while the title gives others: moved
    moved = [{"title": "Gamma", "link": "Alpha"}, {"title": "Delta", "link": "Beta"}]
    assert shift_suspect(moved, sample) is True


@pytest.mark.parametrize("html, css, label", [
    # a table cell: its row's header cell and its column's header
    ("<table><thead><tr><th></th><th>Price</th><th>Stock</th></tr></thead><tbody><tr><th>Hammer</th><td>12</td>"
     "<td>4</td></tr></tbody></table>", "td:nth-of-type(2)", "Hammer | Stock"),
    ("<table><tr><th>Item</th><th>Price</th></tr><tr><td>Hammer</td><td>12</td></tr></table>",
     "tr:nth-of-type(2) td:nth-of-type(2)", "Hammer | Price"),
    # a two-column table of name and value: the name cell, no column header
    ("<table><tr><td>Weight</td><td>2 kg</td></tr></table>", "td:nth-of-type(2)", "Weight | "),
    ("<table><tr><td>Weight</td><td>2 kg</td></tr></table>", "td:nth-of-type(1)", " | "),
    ("<table><tr><td>" + "W" * 45 + "</td><td>2 kg</td></tr></table>", "td:nth-of-type(2)", " | "),
    # outside tables: a <dt>, a <label>, a short heading before the parent
    ("<dl><dt>Score</dt> <dd>7</dd></dl>", "dd", "Score"),
    ("<div><label>Price</label><span>12</span></div>", "span", "Price"),
    ("<h3>Stock</h3><div><span>4</span></div>", "span", "Stock"),
    # a sibling with a number, a long one, none, or one two levels up: no label
    ("<p>Item 12</p><span>4</span>", "span", ""),
    ("<p>" + "x" * 41 + "</p><span>4</span>", "span", ""),
    ("<span>4</span>", "span", ""),
    ("<div><b>Only</b></div><div><p><span>4</span></p></div>", "span", ""),
])
def test_the_label_beside_a_value(html, css, label):
    tree = LexborHTMLParser(f"<html><body>{html}</body></html>")
    assert label_of(tree.css_first(css)) == label
    assert label_of(None) == ""


@pytest.mark.parametrize("was, now, renamed", [
    ("Code", "Code (current)", False), ("Price", "Our price", False), ("Price:", "price", False),
    ("Price", "Stock", True), ("Score 10", "Rank 10", True), ("Hammer | Price", "Hammer | Stock", True),
    ("Hammer | ", "Drill | ", True), ("", "Stock", False), ("No.", "No", False),
])
def test_a_label_reworded_is_not_renamed(was, now, renamed):
    assert _renamed(was, now) is renamed
