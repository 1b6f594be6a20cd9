"""The built-in healer's best guess on an ambiguous refusal (HealResult.candidate), and the report
that puts it before a person."""

from __future__ import annotations

from healerd.core.blueprint import from_dict
from healerd.core.extract import extract
from healerd.core.heal.pipeline import heal
from healerd.core.routing import deferred_report, proposal
from tests.support.bestguess_pages import AMBIGUOUS, BEFORE, GONE, RECIPE_BP


def bp():
    return from_dict(dict(RECIPE_BP, url="http://127.0.0.1/soup"))


def test_an_ambiguous_refusal_carries_a_best_guess_that_reads_the_record():
    b = bp()
    res = heal(b, BEFORE, extract(BEFORE, b).data, AMBIGUOUS)
    assert not res.ok and "two places carry the old value" in res.reason
    assert res.blueprint is None   # a refusal still: nothing to promote
    assert res.candidate is not None
    assert extract(AMBIGUOUS, res.candidate).data == {"title": "Kettle Soup", "first": "2 carrots", "second": "1 onion"}


def test_a_refusal_for_data_gone_carries_no_guess():
    b = bp()
    res = heal(b, BEFORE, extract(BEFORE, b).data, GONE)
    assert not res.ok and res.candidate is None


def test_the_report_puts_the_guess_first_with_its_values_and_command():
    p = proposal("soup", 4, [{"title": "A", "n": "1"}, {"title": "B", "n": "2"}], [{"title": "A", "n": "9"}],
                 ["title", "n"])
    assert p == {"version": 4, "approve": "healerctl approve soup 4",
                 "values": ["record 1: title: would extract 'A', last good 'A'",
                            "record 1: n: would extract '1', last good '9'",
                            "record 2: title: would extract 'B', last good None",
                            "record 2: n: would extract '2', last good None"]}
    rep = deferred_report(name="soup", error_type="PARSE_ERROR", last_error="x", attempts=[], tried=[],
                          missing_fields=[], staged_versions=[4], external_configured=True, proposal=p)
    assert rep["proposal"] is p
    assert rep["options"][0].endswith("`healerctl approve soup 4`")
    assert not any("review staged version 4" in o for o in rep["options"])   # said once
    plain = deferred_report(name="soup", error_type="PARSE_ERROR", last_error="x", attempts=[], tried=[],
                            missing_fields=[], staged_versions=[], external_configured=True)
    assert "proposal" not in plain
