"""The healing ladder's rungs, driven with in-memory ports (tests/support/ladder_fakes.py): the fix
memory, the built-in healer (its repairs, refusals, data gone and best guess), the external healer
(cycles, an untrusted listener, the same answer again, the daily budgets at their limits) and the
relocation of a page that moved."""

from __future__ import annotations

from healerd.core.blueprint import from_dict
from healerd.core.ladder.ports import FetchedPage, FetchFailed, LadderSettings
from healerd.core.timeutil import iso
from tests.support.ladder_fakes import (
    AMBIGUOUS,
    BEFORE,
    GONE,
    NOW,
    RECIPE_BP,
    Answer,
    World,
    bp_of,
    healed,
    listing_no_score,
    listing_v1,
    listing_v2,
)

FIXED = bp_of({"url": "http://shop.test/stats", "items": "table.league-table tr.row-player",
               "fields": {"name": {"css": "td.player-name"}, "score": {"css": "td.pts", "type": "int"}}})
WRONG = bp_of({"url": "http://shop.test/stats", "items": "table.league-table tr",
               "fields": {"name": {"css": "th"}, "score": {"css": "td.nothing", "type": "int"}}})


def ladder(*rungs: str, **extra) -> LadderSettings:
    return LadderSettings(ladder=rungs, **extra)


# -- the built-in healer ------------------------------------------------------------------------------

def test_the_builtin_rung_heals_a_redesign_and_the_fix_is_remembered():
    w = World()
    got = w.treat(task_id=11)
    assert got["outcome"] == "promoted" and got["strategy"] == "builtin" and got["version"] == 2
    assert got["reason"].startswith("builtin: ")
    dep, = w.deploys
    assert dep["origin"] == "builtin" and dep["page_html"] == listing_v2() and 0 < dep["confidence"] <= 1
    fix = w.last_fix
    assert fix["outcome"] == "promoted" and fix["deployed_to"] == "PRODUCTION" and fix["version"] == 2
    assert fix["fingerprint"] == "fp-task" and fix["error_type"] == "PARSE_ERROR"
    assert fix["patch"] == dep["body"] and fix["context"]["version"] == 1
    assert w.tasks == [("complete", 11, {"outcome": "promoted", "version": 2})]
    remembered, = [e for e in w.memory_log if e[0] == "remember"]
    assert remembered[1] == dep["body"] and remembered[2] == "shop.test"
    assert remembered[3] == ("table.stats tr.player",), "the broken selectors the memory is searched by"
    assert w.reports == [], "a promotion needs no person"


def test_the_task_fingerprint_falls_back_to_the_source_s_last():
    w = World()
    w.treat(context={})
    assert w.last_fix["fingerprint"] == "fp-1"


def test_a_candidate_rejected_on_the_live_page_is_a_failed_attempt():
    w = World()
    # The live page the Deployer re-fetches is the old layout again: the candidate reads nothing there.
    real_deploy = w.ports.deployer.deploy

    def flip(*a):
        w.site[w.url] = listing_no_score()
        return real_deploy(*a)
    w.ports.deployer.deploy = flip
    got = w.treat()
    assert got["outcome"] == "rejected" and got["strategy"] == "builtin"
    fix = w.last_fix
    assert fix["outcome"] == "rejected" and fix["deployed_to"] == "FAILED" and fix["version"] == 2
    assert fix["deferred_report"]["tried"] == [got["reason"]]
    assert not [e for e in w.memory_log if e[0] == "remember"]
    assert w.tasks == [("complete", 7, {"outcome": "rejected"})]


def test_the_same_candidate_rejected_earlier_in_the_episode_is_not_deployed_again():
    w = World()
    first = World()
    first.treat()
    w.versions[2] = {"status": "rejected", "body": first.deploys[0]["body"], "at": NOW - 60, "judged": True}
    got = w.treat()
    assert got["outcome"] == "rejected" and w.deploys == []
    assert "builtin: the same candidate was rejected before (not retried)" in got["reason"]


def test_a_rejection_before_the_episode_or_never_judged_does_not_hold_the_candidate_back():
    for at, judged in ((NOW - 3600, True), (NOW - 60, False)):
        w = World()
        first = World()
        first.treat()
        w.versions[2] = {"status": "rejected", "body": first.deploys[0]["body"], "at": at, "judged": judged}
        assert w.treat()["outcome"] == "promoted"


def test_a_code_parser_is_not_for_the_builtin_healer():
    w = World()
    w.blueprint = bp_of({"url": "http://shop.test/soup", "parser": "def parse(html):\n    return {'title': None}\n",
                         "fields": {"title": {}}})
    w.last_good = {"html": BEFORE, "records": {"title": "Kettle Soup"}, "fetched_at": NOW - 700, "status_code": 200}
    w.slow.add("parser")   # never run here: a code parser is the sandbox's
    w.ports.trials.run_parser = lambda bp, html, limits=None: __import__(
        "healerd.core.extract", fromlist=["Extraction"]).Extraction({"title": None}, {"title": None}, None)
    got = w.treat()
    assert "builtin: the source has a code parser; the built-in healer repairs selectors only" in got["reason"]
    assert w.deploys == []


def test_no_last_good_page_nothing_to_learn_from():
    w = World()
    w.last_good = None
    got = w.treat()
    assert got["outcome"] == "rejected" and got["reason"] == "builtin: no last good page to learn from"
    assert got["strategy"] == "builtin"


def test_the_builtin_search_too_slow_is_a_rejection_that_says_so():
    w = World()
    w.slow.add("builtin")
    got = w.treat()
    assert got["outcome"] == "rejected" and got["strategy"] == "builtin"
    assert got["reason"].startswith("builtin: too slow on this page")
    assert w.deploys == []


def test_old_selectors_that_still_work_are_nothing_for_the_builtin_rung_to_do():
    w = World(after=listing_v1())
    w.failing = {"html": listing_v1().replace("Ada", ""), "fetched_at": NOW - 1, "status_code": 200}
    got = w.treat()
    assert got["outcome"] == "rejected"
    assert "builtin: the old selectors still work on the current page" in got["reason"]
    assert w.deploys == []


def test_an_ambiguous_refusal_stages_its_best_guess_at_confidence_zero_for_a_person():
    w = World(bp=dict(RECIPE_BP), before=BEFORE, after=AMBIGUOUS)
    got = w.treat()
    assert got["outcome"] == "staged" and got["strategy"] == "builtin"
    dep, = w.deploys
    assert dep["confidence"] == 0.0 and dep["note"].startswith("best guess of a refusal: cannot heal: title")
    fix = w.last_fix
    assert fix["deployed_to"] == "STAGING" and fix["data_gone"] is None
    report, = w.reports   # a person is needed now
    assert report["proposal"]["approve"] == "healerctl approve stats 2"
    assert "title: would extract 'Kettle Soup', last good 'Kettle Soup'" in report["proposal"]["values"]
    assert got["reason"].endswith("builtin: best guess staged: held for approval")


def test_a_best_guess_already_rejected_or_not_staged_is_not_offered():
    w = World(bp=dict(RECIPE_BP), before=BEFORE, after=AMBIGUOUS)
    w.treat()
    body = w.deploys[0]["body"]
    again = World(bp=dict(RECIPE_BP), before=BEFORE, after=AMBIGUOUS)
    again.versions[2] = {"status": "rejected", "body": body, "at": NOW - 5, "judged": True}
    got = again.treat()
    assert got["outcome"] == "rejected" and again.deploys == [] and again.reports == []

    unread = World(bp=dict(RECIPE_BP), before=BEFORE, after=AMBIGUOUS)
    unread.unfetched = True
    got = unread.treat()
    assert got["outcome"] == "rejected" and "proposal" not in unread.last_fix["deferred_report"]


def test_a_best_guess_already_waiting_for_a_person_is_declined_not_spent():
    w = World(bp=dict(RECIPE_BP), before=BEFORE, after=AMBIGUOUS)
    w.treat()
    again = World(bp=dict(RECIPE_BP), before=BEFORE, after=AMBIGUOUS)
    again.declines[w.deploys[0]["body"]] = 2
    got = again.treat()
    assert got["outcome"] == "declined" and got["reason"].endswith("builtin: best guess declined: already staged")
    assert again.last_fix["outcome"] == "declined" and again.last_fix["strategy"] == "builtin"


def test_data_gone_is_a_refusal_with_the_fields_and_never_a_guess():
    w = World(after=listing_no_score())
    got = w.treat()
    assert got["outcome"] == "rejected"
    assert w.deploys == [], "no best guess for data gone"
    fix = w.last_fix
    assert fix["data_gone"] == ["score"]
    report = fix["deferred_report"]
    assert report["data_gone"] == ["score"]
    assert "gone_fields" in w.trials and "heal" in w.trials, "asked in the trial worker, then repaired without"
    assert "proposal" not in report and w.reports == []
    # The blueprint a person could save: the gone field optional, the others repaired for this page.
    assert 'items = "tr.row-player"' in report["blueprint_toml"]
    assert report["blueprint_toml"].split("[fields.score]")[1].strip().endswith("required = false")


def test_records_gone_from_the_page_altogether_are_data_gone_for_every_field():
    w = World(after="<html><body><nav><a href='/'>home</a></nav><p>Closed for the season</p></body></html>")
    got = w.treat()
    assert got["outcome"] == "rejected" and "cannot heal: items" in got["reason"]
    assert w.last_fix["data_gone"] == ["name", "score"]


def test_a_refusal_naming_a_field_still_on_the_page_is_not_data_gone():
    w = World(bp=dict(RECIPE_BP), before=BEFORE, after=GONE)
    got = w.treat()
    assert got["outcome"] == "rejected" and not w.last_fix["data_gone"]


def test_a_data_gone_check_that_fails_says_nothing_is_gone():
    w = World(after=listing_no_score())
    w.slow.add("gone_fields")
    w.treat()
    assert not w.last_fix["data_gone"]


# -- the fix memory ---------------------------------------------------------------------------------

def test_a_known_fix_from_the_memory_is_applied_first_and_confirmed():
    w = World(settings=ladder("memory", "builtin"))
    w.issues["I-1"] = FIXED
    got = w.treat()
    assert got["outcome"] == "promoted" and got["strategy"] == "memory"
    assert got["reason"] == "memory: known fix I-1 (known fix I-1)"
    dep, = w.deploys
    assert dep["origin"] == "memory" and dep["note"] == "fix memory issue I-1"
    assert ("fix_applied", "I-1") in w.memory_log and ("confirm", "I-1", True) in w.memory_log
    assert not [e for e in w.memory_log if e[0] == "remember"], "a memory fix is not submitted to itself"
    assert "builtin" not in w.trials


def test_a_known_fix_that_fails_is_confirmed_as_failed_and_the_ladder_goes_on():
    w = World(settings=ladder("memory", "builtin"))
    w.issues["I-1"] = WRONG
    got = w.treat()
    assert ("confirm", "I-1", False) in w.memory_log
    assert got["outcome"] == "promoted" and got["strategy"] == "builtin"
    assert w.last_fix["reason"].startswith("builtin: ")
    assert [d["origin"] for d in w.deploys] == ["memory", "builtin"]


def test_a_known_fix_judged_on_no_page_is_not_held_against_it():
    w = World(settings=ladder("memory"))
    w.issues["I-1"] = FIXED
    w.unfetched = True
    got = w.treat()
    assert got["outcome"] == "rejected" and got["strategy"] == "memory"
    assert not [e for e in w.memory_log if e[0] == "confirm"]


def test_memory_misses_and_failures_are_lines_in_the_report():
    w = World(settings=ladder("memory"))
    got = w.treat()
    assert got["reason"] == "memory: no known fix for this change" and got["strategy"] == "memory"
    w = World(settings=ladder("memory"))
    w.memory_broken = True
    assert w.treat()["reason"] == "memory: search failed (the fix memory is unreadable)"
    w = World(settings=ladder("memory"))
    w.issues["I-9"] = None
    assert w.treat()["reason"].startswith("memory: issue I-9 could not be retrieved (")
    w = World(settings=ladder("memory"))
    w.issues["I-2"] = w.blueprint   # changes nothing on this source
    w.treat()
    assert w.deploys == [] and ("fix_applied", "I-2") not in w.memory_log


def test_a_known_fix_held_for_a_person_stops_the_ladder():
    w = World(settings=ladder("memory", "builtin"))
    w.issues["I-1"] = FIXED
    w.hold = True
    got = w.treat()
    assert got["outcome"] == "staged" and got["strategy"] == "memory" and len(w.deploys) == 1
    assert w.reports and w.last_fix["deployed_to"] == "STAGING"
    assert not [e for e in w.memory_log if e[0] == "confirm"], "still pending: no verdict yet"


# -- the external healer ------------------------------------------------------------------------------

def test_no_external_healer_configured():
    w = World(settings=ladder("external"))
    got = w.treat()
    assert got["reason"] == "external: not configured" and got["strategy"] == "none"
    assert w.last_fix["deferred_report"]["tried"] == ["external: not configured"]


def test_the_external_healer_heals_in_a_later_cycle_with_the_history_of_the_earlier():
    w = World(settings=ladder("external", healer_cycles=3, healer_timeouts=(1, 2, 3)),
              answers=[Answer(False, "timeout", "no answer in 1s"), healed(FIXED)])
    got = w.treat()
    assert got["outcome"] == "promoted" and got["strategy"] == "external"
    assert [c for c, _ in w.healer_asked] == [1, 2]
    assert w.healer_asked[1][1] == [{"cycle": 1, "outcome": "timeout", "reason": "no answer in 1s",
                                     "changes_summary": ""}]
    assert [(c["cycle"], c["outcome"]) for c in w.calls] == [(1, "timeout"), (2, "healed")]
    assert w.calls[0]["started_at"] == NOW and w.calls[0]["backend"] == "code-healer"
    assert w.deploys[0]["origin"] == "external" and w.deploys[0]["note"] == "selectors renamed"
    assert [e for e in w.memory_log if e[0] == "remember"]
    assert w.healer_open == 0, "the client is closed"


def test_an_answer_without_a_url_gets_the_source_s():
    nourl = from_dict({"items": "table.league-table tr.row-player",
                       "fields": {"name": {"css": "td.player-name"}, "score": {"css": "td.pts", "type": "int"}}})
    w = World(settings=ladder("external", healer_cycles=1, healer_timeouts=(1,)), answers=[healed(nourl)])
    assert w.treat()["outcome"] == "promoted"
    assert '"url":"http://shop.test/stats"' in w.deploys[0]["body"]


def test_cycles_stop_at_the_fewer_of_cycles_and_timeouts():
    w = World(settings=ladder("external", healer_cycles=5, healer_timeouts=(1, 2)),
              answers=[Answer(False, "bad_response", "not JSON")])
    got = w.treat()
    assert [c for c, _ in w.healer_asked] == [1, 2]
    assert got["outcome"] == "rejected" and got["strategy"] == "external"
    assert got["reason"] == "external cycle 1: bad_response: not JSON; external cycle 2: bad_response: not JSON"


def test_an_untrusted_listener_pauses_the_attempt_without_spending_it_and_is_never_called_again():
    w = World(settings=ladder("external", healer_cycles=3, healer_timeouts=(1, 2, 3)),
              answers=[Answer(False, "untrusted", "the listener is uid 1234", http_status=None)])
    got = w.treat(task_id=5)
    assert len(w.healer_asked) == 1
    # Another user's listener is no failed fix: the attempt is declined (not counted), the task waits.
    assert got["outcome"] == "declined" and w.last_fix["outcome"] == "declined"
    assert w.tasks == [("release", 5, NOW + 300.0)]
    alert, = w.alerts
    assert alert["event"] == "BUDGET_PAUSED" and alert["severity"] == "error"
    assert alert["details"] == {"cause": "untrusted_healer", "cycle": 1, "resumes_at": iso(NOW + 300.0)}
    assert alert["message"].startswith("healing paused, no fix attempt spent: external healer not called: "
                                       "the listener is uid 1234")
    assert got["reason"] == "external cycle 1: untrusted: the listener is uid 1234"


def test_an_untrusted_listener_after_an_earlier_rung_deployed_ends_the_attempt_as_a_failure():
    w = World(settings=ladder("builtin", "external", healer_cycles=2, healer_timeouts=(1, 2)),
              answers=[Answer(False, "untrusted", "the listener is uid 1234", http_status=None)])
    w.unfetched = True   # the built-in candidate was staged, then rejected unjudged
    got = w.treat()
    assert len(w.deploys) == 1 and len(w.healer_asked) == 1
    assert got["outcome"] == "rejected" and w.last_fix["outcome"] == "rejected"
    alert, = [a for a in w.alerts if a["details"].get("cause") == "untrusted_healer"]
    assert alert["event"] == "HEAL_FAILED" and alert["details"] == {"cause": "untrusted_healer", "cycle": 1}


def test_the_same_answer_as_a_rejected_one_stops_the_calls():
    w = World(settings=ladder("external", healer_cycles=3, healer_timeouts=(1, 2, 3)), answers=[healed(WRONG)])
    got = w.treat()
    assert len(w.deploys) == 1 and len(w.healer_asked) == 2
    assert got["reason"].endswith("external cycle 2: the same candidate as a rejected one (not deployed again); "
                                  "no further calls")
    assert w.healer_asked[1][1][0]["outcome"] == "rejected"

    w = World(settings=ladder("external", healer_cycles=3, healer_timeouts=(1, 2, 3)), answers=[healed(WRONG)])
    w.versions[5] = {"status": "rejected", "body": WRONG.to_json(), "at": NOW - 30, "judged": True}
    w.treat()
    assert w.deploys == [] and len(w.healer_asked) == 1


def test_an_external_answer_held_or_declined_ends_the_ladder():
    w = World(settings=ladder("external", "builtin", healer_cycles=2, healer_timeouts=(1, 2)), answers=[healed(FIXED)])
    w.hold = True
    got = w.treat()
    assert got["outcome"] == "staged" and got["strategy"] == "external" and len(w.healer_asked) == 1
    assert "builtin" not in w.trials


def test_the_per_source_budget_at_exactly_its_limit_pauses_without_spending_an_attempt():
    w = World(settings=ladder("external", healer_cycles=1, healer_timeouts=(1,), daily_budget_per_source=2),
              answers=[healed(FIXED)])
    w.calls += [{"name": "stats", "started_at": NOW - 3000}, {"name": "stats", "started_at": NOW - 100}]
    got = w.treat(task_id=5)
    assert got["outcome"] == "declined" and w.healer_asked == []
    assert got["reason"] == "external: paused: the daily budget of external healer calls for stats is spent (2)"
    assert w.tasks == [("release", 5, NOW - 3000 + 86400)], "offered again when the oldest call leaves the window"
    assert w.last_fix["outcome"] == "declined" and w.last_fix["strategy"] == "external"
    alert, = w.alerts
    assert alert["event"] == "BUDGET_PAUSED" and alert["details"]["cycle"] == 1
    # One below the limit: the call is made.
    w = World(settings=ladder("external", healer_cycles=1, healer_timeouts=(1,), daily_budget_per_source=2),
              answers=[healed(FIXED)])
    w.calls += [{"name": "stats", "started_at": NOW - 100}, {"name": "other", "started_at": NOW - 50},
                {"name": "stats", "started_at": NOW - 86401}]
    assert w.treat()["outcome"] == "promoted" and len(w.healer_asked) == 1


def test_the_global_budget_at_exactly_its_limit_pauses_and_a_pause_waits_at_least_a_minute():
    w = World(settings=ladder("external", healer_cycles=1, healer_timeouts=(1,), daily_budget_total=2),
              answers=[healed(FIXED)])
    w.calls += [{"name": "a", "started_at": NOW - 86390}, {"name": "b", "started_at": NOW - 10}]
    got = w.treat(task_id=5)
    assert got["reason"] == "external: paused: the daily budget of external healer calls is spent (2 in 24h)"
    assert w.tasks == [("release", 5, NOW + 60.0)]
    w = World(settings=ladder("external", healer_cycles=1, healer_timeouts=(1,), daily_budget_total=3),
              answers=[healed(FIXED)])
    w.calls += [{"name": "a", "started_at": NOW - 86390}, {"name": "b", "started_at": NOW - 10}]
    assert w.treat()["outcome"] == "promoted"


def test_a_pause_already_alerted_since_the_last_call_is_not_alerted_again():
    w = World(settings=ladder("external", healer_cycles=1, healer_timeouts=(1,), daily_budget_per_source=1),
              answers=[healed(FIXED)])
    w.calls.append({"name": "stats", "started_at": NOW - 100})
    w.alerts.append({"event": "BUDGET_PAUSED", "source": "stats", "at": NOW - 50})
    w.treat()
    assert len(w.alerts) == 1
    w.alerts[0]["at"] = NOW - 150   # raised before the newest call: a new pause
    w.treat()
    assert len(w.alerts) == 2
    w.alerts[:] = [{"event": "BUDGET_PAUSED", "source": "stats", "at": NOW - 100}]   # with the call: no
    w.treat()
    assert len(w.alerts) == 1


def test_a_budget_spent_after_a_deploy_ends_the_cycles_and_spends_the_attempt():
    w = World(settings=ladder("external", healer_cycles=3, healer_timeouts=(1, 2, 3), daily_budget_per_source=1),
              answers=[healed(WRONG)])
    got = w.treat()
    assert len(w.healer_asked) == 1 and len(w.deploys) == 1
    assert got["outcome"] == "rejected" and got["strategy"] == "external"
    assert got["reason"].endswith("external: paused: the daily budget of external healer calls for stats is spent (1)")


# -- the order of the rungs -------------------------------------------------------------------------

def test_the_rungs_run_in_the_configured_order_and_unknown_ones_are_skipped():
    w = World(settings=ladder("nonsense", "memory", "external", "builtin"))
    got = w.treat()
    assert got["outcome"] == "promoted" and got["strategy"] == "builtin"
    assert w.last_fix["context"]["error_type"] == "PARSE_ERROR"
    assert got["reason"].startswith("builtin: ")
    assert [e[0] for e in w.memory_log][:1] == ["search"]


def test_a_rejection_in_an_earlier_rung_does_not_stop_a_later_one():
    w = World(settings=ladder("builtin", "external", healer_cycles=1, healer_timeouts=(1,)),
              answers=[healed(FIXED)])
    w.slow.add("builtin")
    got = w.treat()
    assert got["outcome"] == "promoted" and got["strategy"] == "external"


def test_when_nothing_healed_the_report_lists_every_rung_and_the_previous_attempts():
    w = World(settings=ladder("memory", "builtin", "external"))
    w.slow.add("builtin")
    w.past_fix("rejected", 120, strategy="memory")
    w.past_fix("rejected", 3600, strategy="external")   # before the episode
    got = w.treat()
    report = w.last_fix["deferred_report"]
    assert report["tried"] == ["memory: no known fix for this change", got["reason"].split("; ")[1],
                               "external: not configured"]
    assert [a["strategy"] for a in report["attempts"]] == ["memory", "builtin"]
    assert w.last_fix["context"]["previous_attempts"] == 1
    assert got["strategy"] == "builtin"


# -- a page that moved -----------------------------------------------------------------------------

def test_a_page_that_moved_is_found_on_the_same_site_and_followed():
    w = World(settings=ladder("builtin"), after=listing_v1())
    w.site.pop(w.url)
    w.site["http://shop.test/sitemap.xml"] = ("<urlset><url><loc>http://shop.test/about</loc></url>"
                                             "<url><loc>http://shop.test/league/stats</loc></url></urlset>")
    w.site["http://shop.test/league/stats"] = listing_v1()
    w.site["http://shop.test/about"] = "<html><body><p>About us</p></body></html>"
    got = w.treat()
    assert got["outcome"] == "promoted" and got["strategy"] == "relocate"
    assert got["reason"] == "relocate: page moved to http://shop.test/league/stats"
    dep, = w.deploys
    assert dep["note"] == "the page moved to http://shop.test/league/stats" and dep["page_html"] is None
    assert '"url":"http://shop.test/league/stats"' in dep["body"]


def test_a_permanent_redirect_on_the_same_host_is_tried_first():
    w = World(after=listing_v1())
    w.site[w.url] = FetchFailed("HTTP_ERROR", "HTTP 410", 410)
    w.site["http://shop.test/"] = FetchedPage("http://shop.test/", '<a href="/new/stats">stats</a>', 200)
    w.site["http://shop.test/new/stats"] = listing_v1()
    got = w.treat()
    assert got["strategy"] == "relocate" and got["outcome"] == "promoted"


def test_a_moved_page_with_other_data_is_not_followed():
    w = World(after=listing_v1())
    w.site.pop(w.url)
    w.site["http://shop.test/"] = '<a href="/stats-2024">stats</a>'
    w.site["http://shop.test/stats-2024"] = listing_v1(rows=[(f"P{i}", i) for i in range(25)])   # 25 for 5
    got = w.treat()
    assert got["outcome"] == "rejected" and w.deploys == []
    assert "relocate: http://shop.test/stats-2024: not like the last good records (" in got["reason"]
    assert got["reason"].endswith("relocate: none of 2 same-site URLs yields the expected data")


def test_no_candidate_address_for_a_moved_page():
    w = World(before=listing_v1().replace('<nav><a href="/">home</a></nav>', ""))
    w.site.clear()
    got = w.treat()
    assert got["outcome"] == "rejected" and got["strategy"] == "relocate"
    assert got["reason"] == "relocate: no candidate URL on the same site (sitemap.xml, links)"


def test_a_budget_spent_after_an_earlier_rung_deployed_spends_the_attempt():
    w = World(settings=ladder("builtin", "external", healer_cycles=1, healer_timeouts=(1,),
                              daily_budget_per_source=1), answers=[healed(FIXED)])
    w.calls.append({"name": "stats", "started_at": NOW - 100})
    w.unfetched = True   # the built-in candidate was staged, then rejected unjudged
    got = w.treat()
    assert len(w.deploys) == 1 and w.healer_asked == []
    assert got["outcome"] == "rejected" and w.last_fix["outcome"] == "rejected"
    assert got["reason"].endswith("external: paused: the daily budget of external healer calls for stats is spent (1)")


def test_at_most_fifteen_same_site_addresses_are_tried():
    w = World()
    w.site.clear()
    links = "".join(f'<a href="/stats-{i}">stats {i}</a>' for i in range(20))
    w.site["http://shop.test/"] = f"<html><body>{links}</body></html>"
    got = w.treat()
    assert got["reason"].endswith("relocate: none of 15 same-site URLs yields the expected data")
    tried = [u for u in w.fetched if "/stats-" in u]
    assert len(tried) == 15 and len(set(tried)) == 15


def test_a_refusal_whose_fields_are_only_partly_gone_is_a_healer_s_limit_not_data_gone():
    w = World(bp=dict(RECIPE_BP), before=BEFORE, after=GONE)
    real = w.ports.trials.bounded
    w.ports.trials.bounded = lambda name, *a: ["first", "second"] if name == "gone_fields" else real(name, *a)
    got = w.treat()
    assert "gone_fields" not in w.trials   # answered by the stand-in above: title is still on the page
    assert got["outcome"] == "rejected" and not w.last_fix["data_gone"]
    assert "data_gone" not in w.last_fix["deferred_report"]


def test_a_moved_page_linked_from_the_last_good_page_is_found_without_a_sitemap_or_home_page():
    before = listing_v1().replace('<a href="/">home</a>', '<a href="/archive/stats">all stats</a>')
    w = World(before=before)
    w.site.clear()
    w.site["http://shop.test/archive/stats"] = before
    got = w.treat()
    assert got["outcome"] == "promoted" and got["reason"] == "relocate: page moved to http://shop.test/archive/stats"
