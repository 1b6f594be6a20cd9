"""The Ledger's side of production: probation verdicts and applying the Validator's plan."""

from __future__ import annotations

from healerd.core import errors
from healerd.store import probation, versions
from healerd.store.lifecycle import ACTIVE, DEGRADED
from healerd.store.sql import rows, scalar
from tests.support.ledger_kit import (
    V2,
    add,
    alert_events,
    bad,
    events,
    good,
    health,
    items,
    promote_fix,
    rollback_plan,
    verdicts,
)


def test_a_fix_passes_probation_after_its_good_scrapes(conn, make_ledger):
    led = make_ledger(doctor__probation=2)
    add(led)
    led.record_scrape(good(led))
    v = promote_fix(led)
    led.record_scrape(bad(led, error_type=errors.NETWORK, version=v))   # says nothing of the parser
    assert verdicts(conn) == [(v, None)]
    led.record_scrape(good(led, version=v))
    assert verdicts(conn) == [(v, None)]
    led.record_scrape(good(led, version=v))
    assert verdicts(conn) == [(v, "passed")]
    led.record_scrape(bad(led, version=v))                               # after probation: not a false positive
    assert verdicts(conn) == [(v, "passed")]


def test_a_scrape_by_an_older_version_in_flight_judges_nothing(conn, ledger):
    add(ledger)
    v = promote_fix(ledger)
    ledger.record_scrape(bad(ledger, version=1))
    assert verdicts(conn) == [(v, None)]


def test_the_plan_rolls_back_in_the_scrapes_transaction_without_an_attempt(conn, ledger):
    add(ledger)
    ledger.record_scrape(good(ledger))
    v = promote_fix(ledger)
    attempts = ledger.attempts_used("shop")
    fx = ledger.record_scrape(bad(ledger, version=v, plan=rollback_plan()))
    assert fx.result["ok"] is True and fx.result["version"] == 1 and fx.result["state"] == ACTIVE
    assert alert_events(fx) == ["HEALED"] and fx.alerts[0]["details"]["rollback"] is True
    assert scalar(conn, "SELECT current_version FROM sources WHERE name = 'shop'") == 1
    assert [(r["version"], r["status"], r["promoted_by"]) for r in rows(
        conn, "SELECT version, status, promoted_by FROM parser_versions WHERE source_name = 'shop' ORDER BY version")] \
        == [(1, "production", versions.DAEMON), (2, "archived", versions.DAEMON)]
    assert ledger.attempts_used("shop") == attempts
    assert verdicts(conn) == [(v, "false_positive")]
    assert events(conn)[-1] == (ACTIVE, ACTIVE, "rollback")
    assert health(conn)["consecutive_failures"] == 0
    assert scalar(conn, "SELECT version FROM records WHERE source_name = 'shop' ORDER BY id DESC LIMIT 1") == 1
    assert probation.took_turns(conn, "shop", 1, v) and probation.took_turns(conn, "shop", v, 1)


def test_a_plan_made_before_production_moved_is_dropped(conn, ledger):
    add(ledger)
    ledger.record_scrape(good(ledger))
    v = promote_fix(ledger)
    v3 = promote_fix(ledger)        # another version came in while v2's scrape was being validated
    fx = ledger.record_scrape(bad(ledger, version=v, plan=rollback_plan()))
    assert fx.result["ok"] is False and fx.result["state"] == DEGRADED   # recorded as the failure it was
    assert not [e for e in events(conn) if e[2] == "rollback"]
    assert scalar(conn, "SELECT current_version FROM sources WHERE name = 'shop'") == v3


def test_a_rollback_to_a_version_no_longer_archived_is_dropped(conn, ledger):
    add(ledger)
    ledger.record_scrape(good(ledger))
    v = promote_fix(ledger)
    fx = ledger.record_scrape(bad(ledger, version=v, plan=rollback_plan(to=7)))
    assert fx.result["ok"] is False and fx.result["state"] == DEGRADED
    assert verdicts(conn) == [(v, "false_positive")]


def test_only_a_version_the_daemon_promoted_keeps_its_pages(conn, ledger):
    add(ledger)
    ledger.record_scrape(good(ledger, html="<ul><li class=p>one</li></ul>"))
    assert probation.get_page(conn, "shop", 1) is None            # a person's blueprint: never rolled back
    v = promote_fix(ledger)
    assert probation.get_page(conn, "shop", v)["html"] == "<ul><li class=q>x</li></ul>"   # kept at promotion
    ledger.record_scrape(good(ledger, version=v, html="<ul><li class=q>y</li></ul>"))
    kept = probation.get_page(conn, "shop", v)
    assert kept["html"] == "<ul><li class=q>y</li></ul>" and kept["records"] == items(3)
    at = kept["fetched_at"]
    ledger.clock.advance(10)
    ledger.record_scrape(good(ledger, version=v, html="<ul><li class=q>y</li></ul>"))
    assert probation.get_page(conn, "shop", v)["fetched_at"] == at  # the same page is not written again


def test_a_fix_recorded_after_its_version_already_failed_takes_the_verdict(conn, ledger):
    """The Deployer promotes, a scrape fails on the new version and is rolled back, and only then
    does the Doctor record the promoted fix: it is still a production false positive."""
    add(ledger)
    ledger.record_scrape(good(ledger))
    v = ledger.stage_version("shop", V2, "builtin")
    ledger.promote("shop", v)
    fx = ledger.record_scrape(bad(ledger, version=v, plan=rollback_plan()))
    assert fx.result["version"] == 1
    ledger.record_fix(name="shop", error_type=errors.PARSE_ERROR, strategy="builtin", outcome="promoted", reason="r",
                      version=v)
    assert verdicts(conn) == [(v, "false_positive")]
