"""The healing ladder's breakers and diagnosis, driven with in-memory ports (tests/support/ladder_fakes.py):
what declines an attempt before any rung runs, the budget edges, the systemic halt, and what the
diagnosis of the live page decides (nothing to heal, drift, a page that cannot be fetched or read)."""

from __future__ import annotations

import pytest

from healerd.core.ladder.ladder import HALT_RETRY_S, last_rung, one_line, rung_of
from healerd.core.ladder.ports import FetchedPage, FetchFailed, LadderSettings
from tests.support.ladder_fakes import NOW, World, listing_v1, listing_v2


def declined_before_any_rung(w: World) -> None:
    assert w.deploys == [] and w.trials == [] and w.fetched == []
    assert w.fixes == [], "a decline before the ladder spends no attempt"


def test_a_removed_source_is_declined_and_its_task_completed():
    w = World()
    w.source = None
    got = w.treat(task_id=3)
    assert got == {"name": "stats", "outcome": "declined", "strategy": None, "reason": "no such source",
                   "version": None, "state": None}
    assert w.tasks == [("complete", 3, {"outcome": "declined", "reason": "source removed"})]
    declined_before_any_rung(w)


@pytest.mark.parametrize("state", ["QUARANTINED", "DEAD"])
def test_an_open_breaker_declines_until_a_person_unquarantines(state):
    w = World()
    w.source["state"] = state
    got = w.treat()
    assert got["outcome"] == "declined" and got["state"] == state
    assert got["reason"] == f"stats is {state}: `healerctl unquarantine stats` first"
    assert w.tasks == [("complete", 7, {"outcome": "declined", "reason": got["reason"]})]
    declined_before_any_rung(w)


def test_healing_disabled_declines():
    w = World(settings=LadderSettings(enabled=False))
    got = w.treat()
    assert got["reason"] == "healing is disabled ([doctor] enabled = false)"
    declined_before_any_rung(w)


def test_the_systemic_halt_releases_the_task_for_later_instead_of_completing_it():
    w = World()
    w.halt = {"reason": "the same failure on 3 hosts"}
    got = w.treat(task_id=9)
    assert got["outcome"] == "declined"
    assert got["reason"] == ("healing is halted everywhere (SYSTEMIC_HALT: the same failure on 3 hosts); "
                             "`healerctl resume-healing` to resume")
    assert w.tasks == [("release", 9, NOW + HALT_RETRY_S)]   # the cooldown: offered again 30 s later
    declined_before_any_rung(w)


def test_a_halt_without_a_reason_still_halts():
    w = World()
    w.halt = {}
    assert "SYSTEMIC_HALT: systemic halt" in w.treat()["reason"]


def test_a_source_that_never_passed_is_never_healed():
    w = World()
    w.source["success_count"] = 0
    got = w.treat()
    assert got["reason"] == "stats was never scraped successfully: check the URL and blueprint"
    declined_before_any_rung(w)


def test_the_attempt_budget_at_exactly_its_limit_declines_and_one_below_heals():
    w = World()
    w.past_fix("rejected", 100)
    w.past_fix("error", 50)
    w.past_fix("promoted", 40)    # a promotion is no failed attempt
    w.past_fix("declined", 30)    # nor is a decline
    assert w.treat(max_fix_attempts=3)["outcome"] == "promoted"   # 2 of 3 failed: one left

    w = World()
    for ago in (300, 200, 100):
        w.past_fix("rejected", ago)
    got = w.treat(max_fix_attempts=3)
    assert got["outcome"] == "declined"
    assert got["reason"] == "the attempt budget is spent: 3 of 3 failed attempts allowed in the window"
    assert w.deploys == [] and len(w.fixes) == 3


def test_failures_outside_the_window_or_before_an_unquarantine_do_not_count():
    w = World()
    for ago in (7200, 7100, 7000):
        w.past_fix("rejected", ago)
    assert w.treat(max_fix_attempts=3, attempt_window=3600.0)["outcome"] == "promoted"

    w = World()
    for ago in (300, 200, 100):
        w.past_fix("rejected", ago)
    w.source["attempts_since"] = NOW - 150   # unquarantined since the first two
    assert w.treat(max_fix_attempts=2)["outcome"] == "promoted"


def test_after_a_quarantine_expires_only_one_retry_is_allowed():
    w = World()
    w.source["retry_only"] = 1
    w.past_fix("rejected", 10)
    got = w.treat(max_fix_attempts=5)
    assert got["reason"] == "the attempt budget is spent: 1 of 1 failed attempts allowed in the window"


# -- the diagnosis ---------------------------------------------------------------------------------

def test_a_page_the_production_parser_still_reads_is_nothing_to_heal():
    w = World(after=listing_v1())
    got = w.treat()
    assert got["outcome"] == "unchanged"
    assert got["reason"] == "the production parser passes on the current page: nothing to heal"
    assert w.tasks == [("complete", 7, {"outcome": "unchanged"})]
    assert w.scheduled == ["stats"], "scraped again at once"
    assert w.deploys == [] and w.fixes == []


def test_a_page_that_passes_but_drifted_is_a_schema_mismatch_not_nothing_to_heal():
    # Validation passes (six rows of names and numbers) but a promoted look-alike row leads the table.
    promoted = ('<tr class="player promoted"><td class="name">Zed <span class="badge">Sponsored</span></td>'
                '<td class="score">99</td></tr>')
    drifted = listing_v1().replace("<th>Score</th></tr>", "<th>Score</th></tr>" + promoted)
    w = World(after=drifted)
    got = w.treat()
    assert got["outcome"] != "unchanged"
    assert "page_drift" in w.trials
    fix = w.last_fix
    assert fix["error_type"] == "SCHEMA_MISMATCH"
    assert fix["context"]["error_message"].startswith("drift: ")
    assert fix["context"]["validation_errors"] == [fix["context"]["error_message"]]


def test_a_drift_check_that_fails_is_no_drift():
    w = World(after=listing_v1())
    w.slow.add("page_drift")
    assert w.treat()["outcome"] == "unchanged"


def test_a_page_that_cannot_be_fetched_for_a_reason_healing_cannot_fix_is_declined():
    w = World()
    w.site[w.url] = FetchFailed("NETWORK", "connection refused")
    got = w.treat()
    assert got["outcome"] == "declined"
    assert got["reason"].startswith("the page cannot be fetched (NETWORK: connection refused); ")
    assert w.deploys == [] and w.fixes == []


def test_a_page_over_the_work_bounds_is_declined():
    w = World(settings=LadderSettings(ladder=("builtin",), limits=__import__("healerd.core.extract",
              fromlist=["PageLimits"]).PageLimits(max_elements=10)))
    got = w.treat()
    assert got["outcome"] == "declined" and got["reason"].startswith("the page passes a work bound (")
    assert w.deploys == []


def test_production_too_slow_on_the_page_is_a_timeout_not_a_repair():
    w = World()
    w.slow.add("parser")
    got = w.treat()
    assert got["outcome"] == "declined"
    assert got["reason"].startswith("the production parser is too slow on this page")
    assert got["reason"].endswith("healing cannot help (a scrape of it fails as TIMEOUT)")
    assert w.deploys == [] and w.fixes == []


def test_the_failing_layout_of_this_episode_is_healed_when_the_live_page_passes():
    w = World(after=listing_v1())
    w.failing = {"html": listing_v2(), "fetched_at": NOW - 300, "status_code": 200, "records": None}
    got = w.treat()
    assert got["outcome"] == "promoted"
    assert w.deploys[0]["page_html"] == listing_v2(), "the candidate is made for (and sent with) the failing page"


def test_a_failing_page_older_than_the_episode_is_not_healed_for():
    w = World(after=listing_v1())
    w.failing = {"html": listing_v2(), "fetched_at": NOW - 900, "status_code": 200, "records": None}
    assert w.treat()["outcome"] == "unchanged"
    w = World(after=listing_v1())
    w.failing = {"html": listing_v2(), "fetched_at": NOW - 300, "status_code": 200, "records": None}
    w.source["state"] = "ACTIVE"
    assert w.treat()["outcome"] == "unchanged"


def test_a_parser_that_fails_on_the_page_is_a_parse_error_to_heal():
    w = World()
    w.site[w.url] = FetchedPage(w.url, "<html><body>" + "<div>" * 5 + "</body></html>", 200)
    w.slow.clear()
    got = w.treat()
    assert got["outcome"] == "rejected"
    assert w.last_fix["error_type"] == "PARSE_ERROR"


# -- a crash, and the helpers the report uses ----------------------------------------------------------

def test_a_crash_fails_the_task_and_spends_an_attempt_as_an_error():
    w = World()
    got = w.ladder().crashed("stats", 4, {}, ValueError("bad\nrow token=sk-abcdefghijklmnopqrstuvwxyz0123456789"))
    assert got["outcome"] == "error" and got["reason"].startswith("internal error: ValueError: bad row")
    assert "abcdefghijklmnopqrstuvwxyz" not in got["reason"], "masked"
    assert w.tasks == [("fail", 4, got["reason"])]
    assert w.last_fix["outcome"] == "error" and w.last_fix["error_type"] == "PARSE_ERROR"
    assert w.last_fix["deployed_to"] == "FAILED"
    w.ladder().crashed("stats", 5, {"error_type": "SCHEMA_MISMATCH", "fingerprint": "f"}, RuntimeError(""))
    assert w.last_fix["error_type"] == "SCHEMA_MISMATCH" and w.last_fix["reason"].endswith("no message")
    assert w.last_fix["fingerprint"] == "f"
    w.source = None
    w.ladder().crashed("stats", 6, {}, RuntimeError("x"))
    assert w.last_fix["error_type"] == "UNKNOWN"


def test_the_rung_a_tried_line_names():
    assert rung_of("external cycle 2: timeout: slow") == "external"
    assert rung_of("") == "none"
    assert last_rung(["memory: no known fix for this change", "external: not configured"]) == "memory"
    assert last_rung(["external: not configured"]) == "none"
    assert one_line(RuntimeError("a\n  b")) == "RuntimeError: a b"
