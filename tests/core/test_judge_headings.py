"""The Deployer's judge and a candidate that reads another column: a fix remembered from a source
that lost its Category column, applied to one that lost its Brand column, gives every field a value
of the right shape, but brand now reads the categories. It must wait for a person."""

from __future__ import annotations

from healerd.core.blueprint import from_dict
from healerd.core.candidate_headings import candidate_relabelled
from healerd.core.extract import extract
from healerd.core.judge import PROMOTE, STAGE, judge
from tests.support.driftpages import GEAR, PRICES_BP, pricelist


def bp_of(d: dict):
    return from_dict(dict(d, url="http://127.0.0.1/prices"))


PRODUCTION = bp_of(PRICES_BP)
# the fix healed on a price list that lost its Category column: price is now the third cell
REMEMBERED = bp_of(dict(PRICES_BP, fields=dict(PRICES_BP["fields"], price={"css": "td:nth-child(3)",
                                                                           "type": "float"})))


def verdict(after: str, last_good_html: str | None):
    before = pricelist()
    good = extract(before, PRODUCTION).data
    return judge(REMEMBERED, PRODUCTION, extract(after, REMEMBERED), after,
                 production_ex=extract(after, PRODUCTION), recent_counts=[len(good)] * 5, last_good=good,
                 confidence=0.95, last_good_html=last_good_html)


def test_a_remembered_fix_reading_another_column_waits_for_a_person():
    after = pricelist(drop="Brand")
    assert extract(after, REMEMBERED).data[0] == {"name": "Trail Kettle", "brand": "Cooking", "price": 24.0}
    v = verdict(after, pricelist())
    assert v.action == STAGE, v.reason
    assert v.reason.startswith("brand would read the value under 'Category' where it read 'Brand'"), v.reason
    assert verdict(after, None).action == PROMOTE   # what the judge did without the last good page


def test_the_same_fix_where_it_belongs_is_promoted():
    v = verdict(pricelist(drop="Category"), pricelist())
    assert v.action == PROMOTE, v.reason


def test_a_renamed_heading_over_the_same_values_is_no_move():
    good = extract(pricelist(), PRODUCTION).data
    renamed = pricelist().replace("<th>Brand</th>", "<th>Maker</th>")
    assert candidate_relabelled(PRODUCTION, pricelist(), good, PRODUCTION, renamed, good) is None


def test_a_column_whose_header_was_reworded_is_not_another_column():
    """The Brand column's header now says "Maker" (and the brands changed): the field reads the same
    column renamed, not a place the last good page named otherwise — nothing to stage for."""
    before = pricelist()
    rows = [(r[0], f"{r[1]} Works", r[2], r[3]) for r in GEAR]
    after = pricelist(rows=rows).replace("<th>Brand</th>", "<th>Maker</th>")
    good = extract(before, PRODUCTION).data
    new = extract(after, PRODUCTION).data
    assert new[0]["brand"] != good[0]["brand"]
    assert candidate_relabelled(PRODUCTION, before, good, PRODUCTION, after, new) is None
    # the same page where "Maker" was already another column's header on the last good page is staged
    before_maker = pricelist().replace("<th>Category</th>", "<th>Maker</th>")
    assert candidate_relabelled(PRODUCTION, before_maker, good, PRODUCTION, after, new) is not None
