"""The breakers' rules, exhaustively at their boundaries (a `>=` turned `>` fails here)."""

from __future__ import annotations

import itertools

import pytest

from healerd.core import breakers
from healerd.core.routing import resembles_last_good


@pytest.mark.parametrize("max_attempts,retry_only,expected", [(3, False, 3), (3, True, 1), (1, False, 1),
                                                              (5, True, 1), (0, False, 0)])
def test_the_budget_is_the_configured_number_or_one_retry_after_quarantine(max_attempts, retry_only, expected):
    assert breakers.attempt_budget(max_attempts, retry_only) == expected


@pytest.mark.parametrize("budget", [1, 2, 3, 5])
def test_the_budget_is_spent_exactly_when_the_failed_attempts_reach_it(budget):
    for failed in range(0, budget + 3):
        assert breakers.budget_spent(failed, budget) is (failed >= budget), (failed, budget)
    assert not breakers.budget_spent(budget - 1, budget)
    assert breakers.budget_spent(budget, budget)


def test_quarantine_only_on_a_failed_attempt_that_spends_the_last_of_the_budget_of_a_degraded_source():
    outcomes = ["promoted", "rejected", "error", "declined", "staged"]
    states = ["ACTIVE", "DEGRADED", "QUARANTINED", "DEAD"]
    for outcome, state, failed, budget in itertools.product(outcomes, states, range(0, 5), range(1, 4)):
        expected = outcome in ("rejected", "error") and state == "DEGRADED" and failed >= budget
        assert breakers.should_quarantine(outcome, failed, budget, state) is expected, (outcome, state, failed, budget)


def test_a_promotion_never_quarantines_even_past_the_budget():
    assert not breakers.should_quarantine("promoted", 10, 3, "DEGRADED")
    assert breakers.should_quarantine("rejected", 3, 3, "DEGRADED")
    assert not breakers.should_quarantine("rejected", 2, 3, "DEGRADED")


@pytest.mark.parametrize("count,expected", [(None, False), (0, False), (1, True), (7, True)])
def test_healing_needs_one_scrape_that_passed(count, expected):
    assert breakers.has_good_past(count) is expected


def test_systemic_counts_distinct_hosts_not_sources():
    fp = "abc"
    one_host_many_sources = [("a.org", fp)] * 10
    assert breakers.systemic_halt(one_host_many_sources, fp, 3) is None
    assert breakers.systemic_halt(one_host_many_sources, fp, 1) == ["a.org"]
    two = [("a.org", fp), ("b.org", fp), ("b.org", fp)]
    assert breakers.systemic_halt(two, fp, 3) is None
    three = two + [("c.org", fp)]
    assert breakers.systemic_halt(three, fp, 3) == ["a.org", "b.org", "c.org"]
    assert breakers.systemic_halt(three, fp, 4) is None


@pytest.mark.parametrize("threshold", [1, 2, 3, 4])
def test_systemic_halts_exactly_at_the_threshold(threshold):
    fp = "f"
    for n in range(0, threshold + 2):
        failures = [(f"h{i}.org", fp) for i in range(n)] + [("other.org", "g")] * 5
        got = breakers.systemic_halt(failures, fp, threshold)
        assert (got is not None) is (n >= threshold), (n, threshold)


def test_systemic_ignores_other_fingerprints_missing_hosts_and_no_fingerprint():
    failures = [("a.org", "x"), ("b.org", "y"), (None, "x"), ("", "x")]
    assert breakers.systemic_hosts(failures, "x") == ["a.org"]
    assert breakers.systemic_halt(failures, None, 1) is None
    assert breakers.systemic_halt(failures, "x", 0) is None


def test_the_quarantine_words_are_one_phrase():
    assert breakers.spent_phrase(3, "24h") == "3 fix attempts failed in 24h"
    assert breakers.spent_phrase(1, "1h") == "1 fix attempt failed in 1h"
    assert breakers.spent_phrase(0, "1h") == "0 fix attempts failed in 1h"


def test_a_relocation_candidate_must_yield_records_like_the_last_good_ones():
    good = [{"title": "A", "n": 1}, {"title": "B", "n": 2}]
    assert resembles_last_good([{"title": "C", "n": 3}, {"title": "D", "n": 4}], good) == (True, "")
    assert not resembles_last_good([{"title": "C", "n": 3}], None)[0]          # no good past
    assert not resembles_last_good([], good)[0]
    assert not resembles_last_good([{"title": "C", "n": None}] * 2, good)[0]   # a field the good ones had
    assert not resembles_last_good([{"title": "C", "n": "x"}] * 2, good)[0]    # another type
    assert not resembles_last_good([{"title": "C", "n": 1}] * 9, good)[0]      # 9 > 2 * 4
    assert resembles_last_good([{"title": "C", "n": 1}] * 8, good)[0]          # 8 == 2 * 4: the boundary
    assert resembles_last_good({"title": "x", "n": 2}, {"title": "y", "n": 5})[0]
