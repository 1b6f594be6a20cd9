"""The production core: probation verdicts, the plan before healing, merging two layouts,
and blueprints with fallback selectors."""

from __future__ import annotations

import json

import pytest

from healerd.actors.scraper import run_parser_on
from healerd.core import errors
from healerd.core.blueprint import BlueprintError, from_dict, from_json
from healerd.core.extract import extract
from healerd.core.production import (
    FALSE_POSITIVE,
    HEAL,
    MERGE,
    PASSED,
    ROLLBACK,
    ProofPage,
    merge,
    merge_and_prove,
    plan_before_heal,
    probation_verdict,
    prove,
    trial,
)
from tests.support.sitepages import LISTING_BP, ROWS, listing_v1, listing_v2

EXPECTED = [{"name": n, "score": s} for n, s in ROWS]
A = from_dict(LISTING_BP)
B = from_dict(dict(LISTING_BP, items="tr.row-player",
                   fields={"name": {"css": "td.player-name"}, "score": {"css": "td.pts", "type": "int"}}))


# -- probation ---------------------------------------------------------------------------------
@pytest.mark.parametrize("good, ok, error_type, probation, verdict", [
    (0, True, None, 3, None),                        # first good scrape of three: still on probation
    (1, True, None, 3, None),
    (2, True, None, 3, PASSED),                      # the third good scrape ends it
    (0, True, None, 1, PASSED),
    (0, False, errors.PARSE_ERROR, 3, FALSE_POSITIVE),
    (2, False, errors.SCHEMA_MISMATCH, 3, FALSE_POSITIVE),
    (1, False, errors.NETWORK, 3, None),             # the site was down: says nothing of the parser
    (1, False, errors.TIMEOUT, 3, None),
    (1, False, errors.BLOCKED, 3, None),
])
def test_probation_verdict(good, ok, error_type, probation, verdict):
    assert probation_verdict(good, ok, error_type, probation) == verdict


# -- fallback selectors --------------------------------------------------------------------------
def test_a_field_with_a_list_of_selectors_takes_the_first_that_matches():
    bp = from_dict({"items": ["table.stats tr.player", "tr.row-player"],
                    "fields": {"name": {"css": ["td.name", "td.player-name"]},
                               "score": {"css": ["td.score", "td.pts"], "type": "int"}}})
    assert extract(listing_v1(), bp).data == EXPECTED
    assert extract(listing_v2(), bp).data == EXPECTED
    assert bp.fields["name"].selectors == ("td.name", "td.player-name")
    assert bp.items_selectors == ("table.stats tr.player", "tr.row-player")
    # Round trip: the list form is what is stored, a single selector stays a string.
    again = from_json(bp.to_json())
    assert again == bp
    assert json.loads(bp.to_json())["fields"]["name"]["css"] == ["td.name", "td.player-name"]
    assert json.loads(A.to_json())["fields"]["name"]["css"] == "td.name"


def test_the_first_selector_wins_when_both_match():
    page = '<div><p class="a">first</p><p class="b">second</p></div>'
    assert extract(page, from_dict({"fields": {"t": {"css": ["p.b", "p.a"]}}})).data == {"t": "second"}
    assert extract(page, from_dict({"fields": {"t": {"css": ["p.zz", "p.a"]}}})).data == {"t": "first"}
    assert extract(page, from_dict({"fields": {"t": {"css": ["p.zz", "p.yy"]}}})).data == {"t": None}


@pytest.mark.parametrize("css, key", [
    ([], "fields.t.css"),
    (["p", "p["], "fields.t.css[1]"),
    (["p", 3], "fields.t.css[1]"),
    (["p", "p"], "fields.t.css"),
])
def test_each_selector_of_a_list_is_checked(css, key):
    with pytest.raises(BlueprintError) as exc:
        from_dict({"fields": {"t": {"css": css}}})
    assert exc.value.key == key


def test_each_items_selector_is_checked():
    with pytest.raises(BlueprintError) as exc:
        from_dict({"items": ["tr", "tr["], "fields": {"t": {"css": "td"}}})
    assert exc.value.key == "items[1]"


# -- merge ----------------------------------------------------------------------------------------
def test_merge_tries_the_first_versions_selectors_then_the_seconds():
    m = merge(A, B)
    assert m.items_selectors == ("table.stats tr.player", "tr.row-player")
    assert m.fields["name"].selectors == ("td.name", "td.player-name")
    assert m.fields["score"].type == "int"
    assert extract(listing_v1(), m).data == extract(listing_v2(), m).data == EXPECTED


def test_merge_refuses_what_cannot_be_one_parser():
    other_fields = from_dict({"items": "tr", "fields": {"title": {"css": "td"}}})
    attr = from_dict(dict(LISTING_BP, fields={"name": {"css": "td.name", "attr": "title"},
                                              "score": {"css": "td.score", "type": "int"}}))
    code = A.with_parser("def parse(html):\n    return []\n")
    assert merge(A, other_fields) is None
    assert merge(A, attr) is None
    assert merge(A, code) is None
    assert merge(A, A) is None            # nothing to merge
    assert merge(A, merge(A, B)) is None   # the merged one already reads A's layout


def test_a_merge_is_proved_on_both_pages():
    pages = [ProofPage("A", listing_v1(), EXPECTED), ProofPage("B", listing_v2(), EXPECTED)]
    merged, why = merge_and_prove(A, B, pages)
    assert merged is not None and why == []
    # A page where the merged parser reads other values than the version that passed there.
    wrong = [ProofPage("A", listing_v1(), EXPECTED[:2] + [{"name": "Nobody", "score": 1}] + EXPECTED[3:])]
    assert prove(merged, wrong) == ["A: extracts other values than the version that passed there"]
    merged, why = merge_and_prove(A, B, wrong)
    assert merged is None and why


def test_a_merge_that_misreads_a_layout_is_tried_the_other_way_round_or_refused():
    """A selector of one version also matches on the other layout but reads the wrong element:
    that order fails its proof, the other order is the one promoted; when neither order reads
    both pages right, there is no merge."""
    page_a = '<div><p class="x">wrong</p><p class="t">right</p></div>'
    page_b = '<div><p class="x">right</p></div>'
    on_a = from_dict({"fields": {"v": {"css": "p.t"}}})
    on_b = from_dict({"fields": {"v": {"css": "p.x"}}})
    pages = [ProofPage("A", page_a, {"v": "right"}), ProofPage("B", page_b, {"v": "right"})]
    assert prove(merge(on_b, on_a), pages) == ["A: extracts other values than the version that passed there"]
    merged, why = merge_and_prove(on_b, on_a, pages)
    assert merged is not None and merged.fields["v"].selectors == ("p.t", "p.x") and why == []
    page_b2 = '<div><p class="t">wrong</p><p class="x">right</p></div>'
    merged, why = merge_and_prove(on_b, on_a, [pages[0], ProofPage("B", page_b2, {"v": "right"})])
    assert merged is None and why


# -- the plan before healing ------------------------------------------------------------------------
def test_no_previous_version_or_a_failing_one_means_ordinary_healing():
    prod = trial(2, B, listing_v1(), run=run_parser_on)
    assert not prod.passed
    assert plan_before_heal(error_type=errors.PARSE_ERROR, production=prod, previous=None,
                            html=listing_v1()).action == HEAL
    prev_fails = trial(1, B, listing_v1(), run=run_parser_on)
    assert plan_before_heal(error_type=errors.PARSE_ERROR, production=prod, previous=prev_fails,
                            html=listing_v1()).action == HEAL
    # A failure that is not the parser's never rolls back.
    assert plan_before_heal(error_type=errors.NETWORK, production=prod,
                            previous=trial(1, A, listing_v1(), run=run_parser_on),
                            html=listing_v1()).action == HEAL


def test_the_previous_version_passing_here_is_rolled_back_to():
    plan = plan_before_heal(error_type=errors.PARSE_ERROR, production=trial(2, B, listing_v1(), run=run_parser_on),
                            previous=trial(1, A, listing_v1(), run=run_parser_on), html=listing_v1(),
                            production_page=ProofPage("B", listing_v2(), EXPECTED))
    assert plan.action == ROLLBACK and plan.to_version == 1
    assert plan.data == EXPECTED and plan.item_count == len(ROWS)
    assert "version 2 fails" in plan.reason and "version 1 passes" in plan.reason


def test_two_versions_that_took_turns_are_merged():
    plan = plan_before_heal(error_type=errors.PARSE_ERROR, production=trial(2, B, listing_v1(), run=run_parser_on),
                            previous=trial(1, A, listing_v1(), run=run_parser_on), html=listing_v1(),
                            production_page=ProofPage("B", listing_v2(), EXPECTED), alternating=True)
    assert plan.action == MERGE and plan.merged_from == (1, 2)
    assert extract(listing_v1(), plan.merged).data == extract(listing_v2(), plan.merged).data == EXPECTED
    assert plan.to_dict()["merged"] == plan.merged.to_json()
    # Without a page the failing version passed on, nothing proves a merge: roll back.
    plan = plan_before_heal(error_type=errors.PARSE_ERROR, production=trial(2, B, listing_v1(), run=run_parser_on),
                            previous=trial(1, A, listing_v1(), run=run_parser_on), html=listing_v1(), alternating=True)
    assert plan.action == ROLLBACK and "no merge" in plan.reason
