"""The Ledger (healerd/store/ledger.py), every write the daemon makes, on a real SQLite file with an injected clock."""

from __future__ import annotations

import hashlib
import json

import apsw
import pytest

from healerd.core import errors
from healerd.core.blueprint import from_dict
from healerd.store import fixes, records, snapshots, sources, tasks, versions
from healerd.store.health_writes import HALT_KEY
from healerd.store.ledger import Ledger
from healerd.store.lifecycle import ACTIVE, DEAD, DEGRADED, QUARANTINED, IllegalTransition
from healerd.store.outcomes import ITEM_COUNT_MEMORY
from healerd.store.sql import row, rows, scalar
from tests.support.ledger_kit import (
    EVERY,
    T0,
    Clock,
    add,
    alert_events,
    bad,
    events,
    fix_tasks,
    good,
    health,
    items,
    source,
)

# -- good scrapes ------------------------------------------------------------------------------

def test_a_good_scrape_stores_records_snapshot_and_counters(conn, ledger, clock):
    add(ledger, good_past=False)
    clock.advance(5)
    o = good(ledger, n=3)
    fx = ledger.record_scrape(o)
    assert fx.alerts == []
    assert fx.result["ok"] and fx.result["state"] == ACTIVE and fx.result["records"] == 3
    assert fx.result["duration_ms"] == pytest.approx(200.0)
    assert [r["data"] for r in records.latest(conn, "shop")] == [items(3)]
    snap = snapshots.get(conn, "shop", snapshots.LAST_GOOD)
    assert (snap["html"], snap["records"], snap["status_code"], snap["fetched_at"]) == (o.html, items(3), 200, clock())
    assert snapshots.get(conn, "shop", snapshots.CURRENT) is None
    h = health(conn)
    assert (h["state"], h["success_count"], h["failure_count"], h["consecutive_failures"]) == (ACTIVE, 1, 0, 0)
    assert h["last_success_at"] == clock() and json.loads(h["item_counts"]) == [3]
    s = source(conn)
    assert s["next_run_at"] == clock() + EVERY and (s["etag"], s["last_modified"]) == ('"v1"', "Mon, 01 Jan 2024")
    assert events(conn) == [("NEW", ACTIVE, "register")]
    assert ledger.model("shop").state == ACTIVE


def test_the_last_good_snapshot_is_rewritten_only_when_the_page_changed(conn, ledger, clock):
    add(ledger)
    ledger.record_scrape(good(ledger, html="<p>one</p>"))
    first = snapshots.get(conn, "shop", snapshots.LAST_GOOD)["fetched_at"]
    clock.advance(60)
    ledger.record_scrape(good(ledger, html="<p>one</p>"))
    assert snapshots.get(conn, "shop", snapshots.LAST_GOOD)["fetched_at"] == first
    clock.advance(60)
    ledger.record_scrape(good(ledger, html="<p>two</p>"))
    snap = snapshots.get(conn, "shop", snapshots.LAST_GOOD)
    assert (snap["html"], snap["fetched_at"]) == ("<p>two</p>", clock())
    assert records.count(conn, "shop") == 3  # records are kept on every good scrape


def test_a_page_in_another_charset_is_not_rewritten_on_every_scrape(conn, ledger, clock):
    # The scraper hashes the bytes the site sent; a Latin-1 page decoded and stored as text must
    # still compare equal to itself on the next scrape.
    add(ledger)
    sent = "<p>Crème brûlée, 4,50 €</p>".encode("cp1252")
    page = dict(html=sent.decode("cp1252"), page_sha=hashlib.sha256(sent).hexdigest())
    ledger.record_scrape(good(ledger, **page))
    first = snapshots.get(conn, "shop", snapshots.LAST_GOOD)
    clock.advance(60)
    ledger.record_scrape(good(ledger, **page))
    again = snapshots.get(conn, "shop", snapshots.LAST_GOOD)
    assert again["fetched_at"] == first["fetched_at"] and again["html"] == "<p>Crème brûlée, 4,50 €</p>"


def test_a_not_modified_answer_counts_as_success_without_new_records(conn, ledger, clock):
    add(ledger, good_past=False)
    ledger.record_scrape(good(ledger))
    clock.advance(EVERY)
    fx = ledger.record_scrape(good(ledger, not_modified=True, data=None, html=None, item_count=None, etag=None,
                                   last_modified=None, status=304))
    assert fx.result["not_modified"] and fx.result["records"] == 0
    assert records.count(conn, "shop") == 1
    h = health(conn)
    assert h["success_count"] == 2 and json.loads(h["item_counts"]) == [3]
    s = source(conn)
    assert (s["etag"], s["last_modified"]) == ('"v1"', "Mon, 01 Jan 2024")  # the validators are kept
    assert s["next_run_at"] == clock() + EVERY


def test_item_counts_remember_the_recent_good_scrapes(conn, ledger):
    add(ledger)
    for n in range(1, ITEM_COUNT_MEMORY + 6):
        ledger.record_scrape(good(ledger, n=n))
    assert json.loads(health(conn)["item_counts"]) == list(range(6, ITEM_COUNT_MEMORY + 6))


def test_records_are_kept_up_to_the_retention_per_source(conn, make_ledger, clock):
    led = make_ledger(daemon__records_retention=3)
    add(led, "shop")
    add(led, "news")
    for i in range(5):
        clock.advance(1)
        led.record_scrape(good(led, "shop", n=i + 1))
    led.record_scrape(good(led, "news", n=1))
    assert records.count(conn, "shop") == 3 and records.count(conn, "news") == 1
    assert [len(r["data"]) for r in records.latest(conn, "shop")] == [5, 4, 3]  # newest first


def test_a_permanent_redirect_on_the_same_site_is_followed(conn, ledger):
    add(ledger)
    ledger.record_scrape(good(ledger, permanent_redirect="http://shop.example/new-shop"))
    assert source(conn)["url"] == "http://shop.example/new-shop"
    ledger.record_scrape(good(ledger, permanent_redirect="http://elsewhere.example/shop"))
    assert source(conn)["url"] == "http://shop.example/new-shop"


def test_a_scrape_of_a_removed_source_writes_nothing(conn, ledger):
    add(ledger)
    ledger.remove_source("shop")
    fx = ledger.record_scrape(good(ledger))
    assert fx.result["state"] == "REMOVED" and fx.alerts == []
    assert scalar(conn, "SELECT count(*) FROM records") == 0


# -- failed scrapes ----------------------------------------------------------------------------

def test_a_failed_scrape_degrades_keeps_the_page_and_enqueues_a_fix(conn, ledger, clock):
    add(ledger, good_past=False)
    ledger.record_scrape(good(ledger, html="<p>good</p>"))
    clock.advance(EVERY)
    o = bad(ledger, error="Empty field: price (null in all 3 items)")
    fx = ledger.record_scrape(o)
    assert fx.result["state"] == DEGRADED and not fx.result["ok"] and fx.result["records"] == 0
    assert health(conn)["state"] == DEGRADED and ledger.model("shop").state == DEGRADED
    ev = rows(conn, "SELECT * FROM source_events WHERE source_name = 'shop' ORDER BY id DESC LIMIT 1")[0]
    assert (ev["from_state"], ev["to_state"], ev["trigger"], ev["at"]) == (ACTIVE, DEGRADED, "fail", clock())
    assert ev["reason"] == "PARSE_ERROR: Empty field: price (null in all 3 items)"
    assert snapshots.get(conn, "shop", snapshots.CURRENT)["html"] == o.html
    assert snapshots.get(conn, "shop", snapshots.LAST_GOOD)["html"] == "<p>good</p>"
    assert records.count(conn, "shop") == 1
    h = health(conn)
    assert (h["failure_count"], h["consecutive_failures"], h["success_count"]) == (1, 1, 1)
    assert (h["last_error"], h["last_error_type"]) == ("Empty field: price (null in all 3 items)", errors.PARSE_ERROR)
    assert (h["failing_since"], h["last_failure_at"], h["last_fingerprint"]) == (clock(), clock(), "PARSE_ERROR:shop")
    [task] = fix_tasks(conn)
    assert task["state"] == "PENDING"
    assert json.loads(task["context_json"])["error_type"] == errors.PARSE_ERROR
    assert alert_events(fx) == ["DEGRADED"]
    assert fx.alerts[0]["state"] == DEGRADED and fx.alerts[0]["details"]["error_type"] == errors.PARSE_ERROR
    assert source(conn)["next_run_at"] == clock() + EVERY


def test_a_second_failure_neither_transitions_nor_alerts_nor_enqueues_again(conn, ledger, clock):
    add(ledger)
    ledger.record_scrape(bad(ledger))
    since = health(conn)["failing_since"]
    clock.advance(EVERY)
    fx = ledger.record_scrape(bad(ledger, error="still broken"))
    assert fx.alerts == []
    assert events(conn) == [("NEW", ACTIVE, "register"), (ACTIVE, DEGRADED, "fail")]
    assert len(fix_tasks(conn)) == 1
    h = health(conn)
    assert (h["consecutive_failures"], h["failing_since"], h["last_error"]) == (2, since, "still broken")


def test_secrets_in_an_error_are_masked_before_they_are_stored(conn, ledger):
    add(ledger)
    ledger.record_scrape(bad(ledger, error="GET http://admin:hunter2@shop.example/x failed"))
    h = health(conn)
    assert "hunter2" not in h["last_error"]
    assert "hunter2" not in scalar(conn, "SELECT reason FROM source_events ORDER BY id DESC LIMIT 1")


@pytest.mark.parametrize("error_type, status, redirect, enqueued", [
    (errors.PARSE_ERROR, 200, None, True),
    (errors.SCHEMA_MISMATCH, 200, None, True),
    (errors.HTTP_ERROR, 404, None, True),
    (errors.HTTP_ERROR, 410, None, True),
    (errors.HTTP_ERROR, 301, "http://shop.example/moved", True),
    (errors.HTTP_ERROR, 500, None, False),
    (errors.HTTP_ERROR, 503, None, False),
    (errors.HTTP_ERROR, 403, None, False),
    (errors.TIMEOUT, None, None, False),
    (errors.RATE_LIMIT, 429, None, False),
    (errors.NETWORK, None, None, False),
    (errors.BLOCKED, 403, None, False),
])
def test_only_healable_classes_enqueue_a_fix(conn, ledger, error_type, status, redirect, enqueued):
    add(ledger)
    fx = ledger.record_scrape(bad(ledger, error_type=error_type, status=status, permanent_redirect=redirect))
    assert health(conn)["state"] == DEGRADED and alert_events(fx) == ["DEGRADED"]
    assert len(fix_tasks(conn)) == (1 if enqueued else 0)


def test_a_failure_and_its_audit_row_commit_together_or_not_at_all(conn, ledger, clock):
    add(ledger)
    ledger.record_scrape(good(ledger))
    before = (health(conn), events(conn))
    # The last write of the failure (enqueueing the fix) fails: everything before it must roll back.
    conn.execute("CREATE TEMP TRIGGER boom BEFORE INSERT ON main.task_queue BEGIN SELECT RAISE(ABORT, 'disk on fire'); END")
    clock.advance(EVERY)
    with pytest.raises(apsw.ConstraintError, match="disk on fire"):
        ledger.record_scrape(bad(ledger))
    assert (health(conn), events(conn)) == before
    assert snapshots.get(conn, "shop", snapshots.CURRENT) is None
    ledger.resync_models()  # what the StoreWriter does after a failed write
    assert ledger.model("shop").state == ACTIVE
    conn.execute("DROP TRIGGER boom")
    fx = ledger.record_scrape(bad(ledger))
    assert fx.result["state"] == DEGRADED and events(conn)[-1] == (ACTIVE, DEGRADED, "fail")


def test_a_failing_audit_row_leaves_the_state_alone(conn, ledger):
    add(ledger)
    conn.execute("CREATE TEMP TRIGGER boom BEFORE INSERT ON main.source_events BEGIN SELECT RAISE(ABORT, 'no'); END")
    with pytest.raises(apsw.ConstraintError):
        ledger.record_scrape(bad(ledger))
    assert ledger.model("shop").state == ACTIVE  # lifecycle.fire restored the model itself
    assert (health(conn)["state"], health(conn)["failure_count"]) == (ACTIVE, 0)
    assert fix_tasks(conn) == []


def test_timeouts_back_off_exponentially_up_to_the_interval(conn, make_ledger, clock):
    led = make_ledger(doctor__timeout_backoff=30.0)
    add(led)
    delays = []
    for _ in range(7):
        clock.advance(1000)
        led.record_scrape(bad(led, error_type=errors.TIMEOUT, status=None, html=None))
        delays.append(source(conn)["next_run_at"] - clock())
    assert delays == [30.0, 60.0, 120.0, 240.0, 480.0, EVERY, EVERY]
    clock.advance(1000)
    led.record_scrape(good(led))
    assert source(conn)["next_run_at"] - clock() == EVERY


def test_rate_limits_honour_retry_after_and_stretch_the_interval(conn, ledger, clock):
    add(ledger, every=60.0)
    seen = []
    for retry_after in (900.0, None, 10.0, None, None, None, None):
        clock.advance(1000)
        ledger.record_scrape(bad(ledger, error_type=errors.RATE_LIMIT, status=429, retry_after=retry_after))
        s = source(conn)
        seen.append((s["interval_factor"], s["next_run_at"] - clock()))
    assert seen == [(2.0, 900.0), (4.0, 240.0), (8.0, 480.0), (16.0, 960.0), (32.0, 1920.0), (32.0, 1920.0),
                    (32.0, 1920.0)]
    clock.advance(5000)
    ledger.record_scrape(good(ledger))
    s = source(conn)
    assert (s["interval_factor"], s["next_run_at"] - clock()) == (1.0, 60.0)


def test_jitter_spreads_the_next_run_within_its_bounds(conn, make_ledger, clock):
    led = make_ledger(daemon__jitter=0.1)
    add(led)
    seen = set()
    for _ in range(30):
        clock.advance(1)
        led.record_scrape(good(led))
        seen.add(round(source(conn)["next_run_at"] - clock(), 6))
    assert all(EVERY * 0.9 <= d <= EVERY * 1.1 for d in seen) and len(seen) > 20


def test_a_success_recovers_and_drops_the_queued_fix(conn, ledger, clock):
    add(ledger)
    ledger.record_scrape(bad(ledger))
    clock.advance(EVERY)
    fx = ledger.record_scrape(good(ledger))
    assert fx.result["state"] == ACTIVE and alert_events(fx) == ["RECOVERED"] and fx.alerts[0]["state"] == ACTIVE
    assert events(conn)[-1] == (DEGRADED, ACTIVE, "recover")
    [task] = fix_tasks(conn)
    assert (task["state"], task["error_message"]) == ("COMPLETED", "source recovered before the fix ran")
    h = health(conn)
    assert (h["consecutive_failures"], h["failing_since"], h["last_error"], h["last_fingerprint"]) == (0, None, None, None)


def test_a_fix_already_running_is_left_to_finish(conn, ledger, clock):
    add(ledger)
    ledger.record_scrape(bad(ledger))
    claimed = ledger.claim_fix("doctor")
    ledger.record_scrape(good(ledger))
    assert row(conn, "SELECT state FROM task_queue WHERE task_id = ?", (claimed["task_id"],))["state"] == "IN_PROGRESS"


def test_a_host_that_does_not_resolve_for_dead_after_is_dead(conn, make_ledger, clock):
    led = make_ledger(doctor__dead_after=3600.0)
    add(led)
    led.record_scrape(bad(led, error_type=errors.NETWORK, status=None, html=None, dns_failure=True))
    assert health(conn)["host_unresolved_since"] == T0
    clock.advance(1800)
    fx = led.record_scrape(bad(led, error_type=errors.NETWORK, status=None, html=None, dns_failure=True))
    assert fx.result["state"] == DEGRADED and fx.alerts == []
    clock.advance(1800)
    fx = led.record_scrape(bad(led, error_type=errors.NETWORK, status=None, html=None, dns_failure=True))
    assert fx.result["state"] == DEAD and alert_events(fx) == ["DEAD"] and fx.alerts[0]["level"] == "error"
    assert events(conn)[-1] == (DEGRADED, DEAD, "die")
    assert fix_tasks(conn) == []


def test_a_resolving_host_resets_the_dead_clock(conn, make_ledger, clock):
    led = make_ledger(doctor__dead_after=3600.0)
    add(led)
    led.record_scrape(bad(led, error_type=errors.NETWORK, status=None, html=None, dns_failure=True))
    clock.advance(1800)
    led.record_scrape(bad(led, error_type=errors.NETWORK, status=None, html=None))  # refused: it resolved
    assert health(conn)["host_unresolved_since"] is None
    clock.advance(1800)
    led.record_scrape(bad(led, error_type=errors.NETWORK, status=None, html=None, dns_failure=True))
    assert health(conn)["state"] == DEGRADED and health(conn)["host_unresolved_since"] == clock()


# -- the systemic breaker ----------------------------------------------------------------------

def fail_same(led: Ledger, name: str, error_type: str = errors.NETWORK, fingerprint: str = "NETWORK:shop.example"):
    return led.record_scrape(bad(led, name, error_type=error_type, status=None, html=None, fingerprint=fingerprint))


def test_the_same_failure_on_threshold_sources_halts_healing_once(conn, make_ledger, clock):
    led = make_ledger(doctor__systemic_threshold=3)
    for n in "abcd":
        add(led, n, host=f"{n}.example")
    assert "SYSTEMIC_HALT" not in alert_events(fail_same(led, "a"))
    clock.advance(10)
    assert "SYSTEMIC_HALT" not in alert_events(fail_same(led, "b"))
    clock.advance(10)
    fx = fail_same(led, "c")
    assert alert_events(fx) == ["DEGRADED", "SYSTEMIC_HALT"]
    halt_alert = fx.alerts[1]
    assert halt_alert["source"] is None and halt_alert["level"] == "error"
    assert halt_alert["details"] == {"sources": ["a", "b", "c"], "hosts": ["a.example", "b.example", "c.example"],
                                     "fingerprint": "NETWORK:shop.example"}
    halt = led.halt()
    assert (halt["sources"], halt["since"], halt["error_type"]) == (["a", "b", "c"], clock(), errors.NETWORK)
    # More of the same raise nothing new.
    clock.advance(10)
    assert "SYSTEMIC_HALT" not in alert_events(fail_same(led, "d"))
    assert "SYSTEMIC_HALT" not in alert_events(fail_same(led, "a"))
    assert led.halt()["sources"] == ["a", "b", "c"]
    assert scalar(conn, "SELECT count(*) FROM daemon_state WHERE key = ?", (HALT_KEY,)) == 1


def test_the_halt_lifts_when_one_of_its_sources_scrapes_again(conn, make_ledger, clock):
    led = make_ledger(doctor__systemic_threshold=3)
    for n in "abcd":
        add(led, n, host=f"{n}.example")
    for n in "abc":
        fail_same(led, n)
    fail_same(led, "d")
    led.record_scrape(good(led, "d"))  # d is not one of the halted sources
    assert led.halt() is not None
    led.record_scrape(good(led, "b"))
    assert led.halt() is None


def test_resume_healing_lifts_the_halt(make_ledger):
    led = make_ledger(doctor__systemic_threshold=2)
    for n in "ab":
        add(led, n, host=f"{n}.example")
        fail_same(led, n)
    assert led.halt() is not None
    assert led.resume_healing().result == {"systemic_halt": False}
    assert led.halt() is None


def test_failures_outside_the_window_or_with_other_fingerprints_do_not_halt(make_ledger, clock):
    led = make_ledger(doctor__systemic_threshold=3, doctor__systemic_window=3600.0)
    for n in "abcde":
        add(led, n, host=f"{n}.example")
    fail_same(led, "a")
    clock.advance(3700)                          # a's failure is out of the window now
    fail_same(led, "b")
    fail_same(led, "c")
    assert led.halt() is None
    fail_same(led, "d", fingerprint="TIMEOUT:shop.example")
    assert led.halt() is None
    fail_same(led, "e")
    assert led.halt()["sources"] == ["b", "c", "e"]


def test_one_host_failing_on_many_sources_never_halts(make_ledger):
    led = make_ledger(doctor__systemic_threshold=3)
    for n in "abcdef":
        add(led, n)                              # all on shop.example
        fail_same(led, n)
    assert led.halt() is None
    for n in "xy":
        add(led, n, host=f"{n}.example")
        fail_same(led, n)
    assert led.halt()["hosts"] == ["shop.example", "x.example", "y.example"]


def test_failed_fixes_on_one_host_never_halt(make_ledger):
    led = make_ledger(doctor__systemic_threshold=2, doctor__max_fix_attempts=5)
    for n in "abc":
        add(led, n)
        led.record_scrape(bad(led, n))
        led.record_fix(name=n, error_type=errors.PARSE_ERROR, strategy="builtin", outcome="rejected",
                       reason="no candidate", fingerprint="PARSE_ERROR:tmpl")
    assert led.halt() is None


def test_a_source_that_never_passed_is_degraded_with_the_reason_and_gets_no_fix_task(conn, make_ledger):
    led = make_ledger()
    add(led, "typo", good_past=False)
    fx = led.record_scrape(bad(led, "typo", error_type=errors.HTTP_ERROR, status=404))
    assert health(conn, "typo")["state"] == DEGRADED
    assert fix_tasks(conn, "typo") == []
    assert "never scraped successfully: check the URL and blueprint" in fx.alerts[0]["message"]
    assert "never scraped successfully" in json.loads(health(conn, "typo")["deferred_report"])["reason"]
    # Once it has passed, the same failure is healed.
    led.record_scrape(good(led, "typo"))
    led.record_scrape(bad(led, "typo", error_type=errors.HTTP_ERROR, status=404))
    assert len(fix_tasks(conn, "typo")) == 1


def test_structure_changes_never_halt_the_scrape_path(make_ledger):
    led = make_ledger(doctor__systemic_threshold=2)
    for n in "abc":
        add(led, n)
        fail_same(led, n, error_type=errors.PARSE_ERROR, fingerprint="PARSE_ERROR:shop.example")
    assert led.halt() is None


def test_failed_fixes_with_one_fingerprint_halt_too(conn, make_ledger):
    led = make_ledger(doctor__systemic_threshold=2, doctor__max_fix_attempts=5)
    for n in "ab":
        add(led, n, host=f"{n}.example")
        led.record_scrape(bad(led, n))
    fx = None
    for n in "ab":
        fx = led.record_fix(name=n, error_type=errors.PARSE_ERROR, strategy="builtin", outcome="rejected",
                            reason="no candidate", fingerprint="PARSE_ERROR:tmpl")
    assert alert_events(fx) == ["HEAL_FAILED", "SYSTEMIC_HALT"]
    assert led.halt()["sources"] == ["a", "b"]


# -- fix attempts, quarantine ------------------------------------------------------------------

def fail_fix(led: Ledger, name: str = "shop", outcome: str = "rejected", **kw):
    return led.record_fix(name=name, error_type=errors.PARSE_ERROR, strategy=kw.pop("strategy", "builtin"),
                          outcome=outcome, reason=kw.pop("reason", "the candidate fails validation"), **kw)


def degraded(led: Ledger, name: str = "shop") -> str:
    add(led, name)
    led.record_scrape(bad(led, name))
    return name


REPORT = {"source": "shop", "tried": ["memory: no known fix", "builtin: refused"], "last_error": "Empty field: price",
          "options": ["`healerctl unquarantine shop`"]}


def test_spending_the_attempt_budget_quarantines_with_the_deferred_report(conn, make_ledger, clock):
    led = make_ledger(doctor__max_fix_attempts=3, doctor__quarantine_for=3600.0)
    degraded(led)
    for i in (1, 2):
        clock.advance(10)
        fx = fail_fix(led)
        assert alert_events(fx) == ["HEAL_FAILED"]
        assert fx.alerts[0]["details"] == {"strategy": "builtin", "attempt": i, "budget": 3}
        assert fx.result == {"attempts_used": i, "state": DEGRADED}
        assert health(conn)["fix_attempts_today"] == i
    clock.advance(10)
    fx = fail_fix(led, deferred_report=REPORT, reason="third strike")
    assert fx.result == {"attempts_used": 3, "state": QUARANTINED}
    assert alert_events(fx) == ["QUARANTINED"]
    a = fx.alerts[0]
    assert a["level"] == "error" and a["state"] == QUARANTINED
    assert a["message"] == "3 fix attempts failed in 24h; next try 2023-11-14T23:13:50Z"
    assert a["details"]["deferred_report"] == {**REPORT, "attempts": 3}
    h = health(conn)
    assert h["state"] == QUARANTINED and h["quarantine_until"] == clock() + 3600.0
    assert json.loads(h["deferred_report"]) == {**REPORT, "attempts": 3}
    assert events(conn)[-1] == (DEGRADED, QUARANTINED, "quarantine")
    assert [t["state"] for t in fix_tasks(conn)] == ["QUARANTINED"]
    assert scalar(conn, "SELECT count(*) FROM fix_history WHERE source_name = 'shop'") == 3


def test_the_deferred_report_defaults_to_the_attempts_and_last_reason(conn, make_ledger):
    led = make_ledger(doctor__max_fix_attempts=1)
    degraded(led)
    fail_fix(led, reason="no candidate validated")
    assert json.loads(health(conn)["deferred_report"]) == {"attempts": 1, "last_error": "no candidate validated"}


def test_promotions_spend_no_budget_and_the_quarantine_words_agree(conn, make_ledger, clock):
    led = make_ledger(doctor__max_fix_attempts=3, doctor__attempt_window=86400.0)
    degraded(led)
    for v in (2, 3):
        clock.advance(1)
        assert alert_events(fail_fix(led, outcome="promoted", version=v)) == ["HEALED"]
    for i in (1, 2):
        clock.advance(1)
        fx = fail_fix(led)
        assert alert_events(fx) == ["HEAL_FAILED"] and f"{i} of 3 failed" in fx.alerts[0]["message"]
        assert fx.result["state"] == DEGRADED
    clock.advance(1)
    fx = fail_fix(led)
    assert alert_events(fx) == ["QUARANTINED"]
    assert fx.alerts[0]["message"].startswith("3 fix attempts failed in 24h; next try ")
    reason = rows(conn, "SELECT reason FROM source_events WHERE source_name = 'shop' ORDER BY id DESC LIMIT 1")[0]
    assert reason["reason"].startswith("3 fix attempts failed in 24h; last: ")


def test_declined_and_staged_attempts_do_not_quarantine(conn, make_ledger, clock):
    led = make_ledger(doctor__max_fix_attempts=2)
    degraded(led)
    for outcome in ("declined", "declined", "declined"):
        clock.advance(1)
        assert fail_fix(led, outcome=outcome).alerts == []
    assert led.attempts_used("shop") == 0
    for v in (2, 3, 4):
        clock.advance(1)
        fx = fail_fix(led, outcome="staged", version=v)
        assert fx.result["state"] == DEGRADED  # waits for a person, never quarantined
        assert alert_events(fx) == ["FLAGGED_FOR_REVIEW"]  # ... and the person is told which version
    assert led.attempts_used("shop") == 0   # the budget counts failed attempts only


def test_each_staged_version_says_how_to_approve_it(conn, make_ledger, clock):
    led = make_ledger(doctor__max_fix_attempts=3)
    degraded(led)
    clock.advance(1)
    fx = fail_fix(led, outcome="staged", version=2, strategy="external",
                  reason="the candidate drops score: a field change needs a person (healerctl approve)")
    assert len(fx.alerts) == 1
    a = fx.alerts[0]
    assert a["event"] == "FLAGGED_FOR_REVIEW" and a["source"] == "shop" and a["level"] == "warning"
    assert "awaits `healerctl approve shop 2`" in a["message"] and "drops score" in a["message"]
    assert a["details"] == {"strategy": "external", "version": 2}


def test_a_promoted_fix_clears_the_report_and_says_healed(conn, make_ledger, clock):
    led = make_ledger(doctor__max_fix_attempts=3)
    degraded(led)
    led.set_deferred_report("shop", {"tried": ["x"]})
    clock.advance(1)
    fx = fail_fix(led, outcome="promoted", version=2, reason="selectors repaired")
    assert alert_events(fx) == ["HEALED"] and fx.alerts[0]["level"] == "info"
    assert fx.alerts[0]["details"] == {"strategy": "builtin", "version": 2}
    assert health(conn)["deferred_report"] is None


def test_attempts_age_out_of_the_window(conn, make_ledger, clock):
    led = make_ledger(doctor__max_fix_attempts=2, doctor__attempt_window=3600.0)
    degraded(led)
    fail_fix(led)
    clock.advance(3601)
    fx = fail_fix(led)
    assert fx.result == {"attempts_used": 1, "state": DEGRADED}


def test_record_fix_for_an_unknown_source_does_nothing(conn, ledger):
    fx = fail_fix(ledger, name="ghost")
    assert fx.alerts == [] and fx.result is None
    assert scalar(conn, "SELECT count(*) FROM fix_history") == 0


def quarantined(led: Ledger, clock: Clock) -> None:
    degraded(led)
    for _ in range(led.config.doctor.max_fix_attempts):
        clock.advance(10)
        fail_fix(led)
    assert led.model("shop").state == QUARANTINED


def test_an_expired_quarantine_gets_one_retry(conn, make_ledger, clock):
    led = make_ledger(doctor__max_fix_attempts=3, doctor__quarantine_for=3600.0)
    quarantined(led, clock)
    clock.advance(3599)
    assert led.expire_quarantines().alerts == []
    assert health(conn)["state"] == QUARANTINED
    clock.advance(1)
    fx = led.expire_quarantines()
    assert alert_events(fx) == ["UNQUARANTINED"] and fx.alerts[0]["state"] == DEGRADED
    h = health(conn)
    assert (h["state"], h["retry_only"], h["attempts_since"], h["quarantine_until"]) == (DEGRADED, 1, clock(), None)
    assert source(conn)["next_run_at"] == clock()
    assert events(conn)[-1] == (QUARANTINED, DEGRADED, "quarantine_expired")
    assert led.expire_quarantines().alerts == []  # only once
    # One attempt only: the next failure quarantines again.
    clock.advance(10)
    fx = fail_fix(led)
    assert alert_events(fx) == ["QUARANTINED"] and fx.result == {"attempts_used": 1, "state": QUARANTINED}
    assert health(conn)["retry_only"] == 0


def test_unquarantine_gives_a_fresh_budget(conn, make_ledger, clock):
    led = make_ledger(doctor__max_fix_attempts=3, doctor__quarantine_for=3600.0)
    quarantined(led, clock)
    sources.set_paused(conn, "shop", True, now=clock())
    clock.advance(60)
    fx = led.unquarantine("shop", "the blueprint was fixed")
    assert alert_events(fx) == ["UNQUARANTINED"]
    assert fx.alerts[0]["message"] == "QUARANTINED -> DEGRADED with a fresh attempt budget: the blueprint was fixed"
    assert fx.result["state"] == DEGRADED and fx.result["fix_attempts_24h"] == 0
    h = health(conn)
    assert (h["quarantine_until"], h["retry_only"], h["fix_attempts_today"]) == (None, 0, 0)
    s = source(conn)
    assert (s["paused"], s["next_run_at"]) == (0, clock())
    assert led.attempts_used("shop") == 0
    for i in (1, 2):
        clock.advance(10)
        assert fail_fix(led).result == {"attempts_used": i, "state": DEGRADED}
    clock.advance(10)
    assert fail_fix(led).result["state"] == QUARANTINED


def test_unquarantine_revives_a_dead_source_and_refuses_a_healthy_one(conn, make_ledger, clock):
    led = make_ledger(doctor__dead_after=0.0)
    add(led)
    led.record_scrape(bad(led, error_type=errors.NETWORK, status=None, html=None, dns_failure=True))
    assert health(conn)["state"] == DEAD
    led.unquarantine("shop")
    assert health(conn)["state"] == DEGRADED and health(conn)["host_unresolved_since"] is None
    add(led, "fine")
    before = events(conn, "fine")
    with pytest.raises(IllegalTransition):
        led.unquarantine("fine")
    assert health(conn, "fine")["state"] == ACTIVE and events(conn, "fine") == before


# -- parser versions ---------------------------------------------------------------------------

def production_versions(conn, name: str = "shop") -> list[int]:
    return [r["version"] for r in rows(conn, "SELECT version FROM parser_versions WHERE source_name = ? "
                                             "AND status = 'production'", (name,))]


def statuses(conn, name: str = "shop") -> dict[int, str]:
    return {r["version"]: r["status"] for r in rows(conn, "SELECT version, status FROM parser_versions "
                                                          "WHERE source_name = ?", (name,))}


def assert_one_production(conn, version: int, name: str = "shop") -> None:
    assert production_versions(conn, name) == [version]
    assert source(conn, name)["current_version"] == version
    assert versions.production(conn, name)[0] == version


def candidate(led: Ledger, css: str = ".v2", url: str | None = None):
    _, prod = versions.production(led.conn, "shop")
    d = prod.to_dict()
    d["fields"]["price"]["css"] = css
    if url:
        d["url"] = url
    return from_dict(d)


def test_promote_and_rollback_keep_exactly_one_production_version(conn, ledger, clock):
    add(ledger)
    assert_one_production(conn, 1)
    v2 = ledger.stage_version("shop", candidate(ledger), "builtin", "price moved")
    assert v2 == 2 and statuses(conn) == {1: "production", 2: "staging"}
    assert_one_production(conn, 1)
    clock.advance(10)
    fx = ledger.promote("shop", v2, {"passed": True})
    assert fx.result == {"version": 2, "previous": 1}
    assert statuses(conn) == {1: "archived", 2: "production"}
    assert_one_production(conn, 2)
    assert source(conn)["next_run_at"] == clock()
    clock.advance(10)
    assert ledger.rollback("shop").result == {"version": 1, "previous": 2}
    assert statuses(conn) == {1: "production", 2: "archived"}
    assert_one_production(conn, 1)
    clock.advance(10)
    assert ledger.rollback("shop", to=2).result["version"] == 2
    assert_one_production(conn, 2)


def test_promote_clears_the_conditional_request_validators(conn, ledger):
    add(ledger)
    ledger.record_scrape(good(ledger))
    v = ledger.stage_version("shop", candidate(ledger), "builtin")
    ledger.promote("shop", v)
    s = source(conn)
    assert (s["etag"], s["last_modified"]) == (None, None)  # the new parser must see a full page


def test_rollback_refuses_what_cannot_be_rolled_back_to(conn, ledger):
    add(ledger)
    with pytest.raises(versions.VersionNotFound, match="no archived parser version"):
        ledger.rollback("shop")
    v2 = ledger.stage_version("shop", candidate(ledger), "builtin")
    with pytest.raises(versions.VersionNotFound, match="is staging"):
        ledger.rollback("shop", to=v2)
    with pytest.raises(versions.VersionNotFound):
        ledger.rollback("shop", to=99)
    with pytest.raises(sources.SourceNotFound):
        ledger.rollback("ghost")
    assert statuses(conn) == {1: "production", 2: "staging"}
    assert_one_production(conn, 1)


def test_a_rejected_version_stays_out_of_production(conn, ledger):
    add(ledger)
    v2 = ledger.stage_version("shop", candidate(ledger), "external")
    ledger.reject_version("shop", v2, "fails validation on the live page")
    assert statuses(conn) == {1: "production", 2: "rejected"}
    assert versions.get(conn, "shop", v2)["note"] == "fails validation on the live page"
    with pytest.raises(versions.VersionNotFound, match="not staged"):
        ledger.approve("shop", v2)
    with pytest.raises(versions.VersionNotFound, match="is rejected"):
        ledger.rollback("shop", to=v2)
    ledger.reject_version("shop", 1, "rejecting production does nothing")
    assert_one_production(conn, 1)


def test_at_start_up_a_staging_version_never_recorded_as_staged_is_rejected(conn, ledger, clock):
    degraded(ledger)
    add(ledger, "other")
    held = ledger.stage_version("shop", candidate(ledger), "external")          # v2: judged and held
    clock.advance(1)
    fail_fix(ledger, outcome="staged", version=held, strategy="external")
    cut = ledger.stage_version("shop", candidate(ledger, css=".v3"), "builtin")  # v3: a crash mid-deploy
    other = ledger.stage_version("other", candidate(ledger, css=".v4"), "memory")
    assert sorted(ledger.reject_interrupted_versions()) == [("other", other), ("shop", cut)]
    assert statuses(conn) == {1: "production", held: "staging", cut: "rejected"}
    assert statuses(conn, "other") == {1: "production", other: "rejected"}
    assert versions.get(conn, "shop", cut)["note"] == versions.INTERRUPTED == "interrupted before validation"
    assert ledger.reject_interrupted_versions() == []   # nothing left to recover
    ledger.approve("shop", held)                         # the held one still waits for its person
    assert_one_production(conn, held)


def test_history_shows_a_staged_attempt_in_the_contract_outcomes(conn, ledger, clock):
    degraded(ledger)
    clock.advance(1)
    fail_fix(ledger, outcome="staged", version=2, reason="the candidate drops score")
    clock.advance(1)
    fail_fix(ledger, outcome="rejected", reason="fails validation")
    got = sorted(fixes.history_entries(conn, "shop"), key=lambda e: e["_t"])
    assert [e["outcome"] for e in got] == ["declined", "rejected"]
    assert got[0]["staged"] is True and got[0]["version"] == 2
    assert got[0]["reason"] == "staged as version 2 for approval: the candidate drops score"
    assert "staged" not in got[1]
    # Stored as it was: the recovery context still sees a staged attempt; the budget counts the failed one.
    assert [r["outcome"] for r in fixes.recent(conn, "shop")] == ["rejected", "staged"]
    assert ledger.attempts_used("shop") == 1


def test_approve_promotes_a_staged_version_and_lifts_the_review_flag(conn, make_ledger, clock):
    led = make_ledger(doctor__review_window=7 * 86400.0)
    add(led)
    fx = led.flag_for_review("shop", "changed too often")
    # The flag alone raises nothing: the alert comes with the staged version it names (record_fix).
    assert fx.alerts == [] and health(conn)["flagged_for_review"] == 1
    v2 = led.stage_version("shop", candidate(led), "builtin")
    clock.advance(5)
    assert led.approve("shop", v2).result == {"version": v2}
    assert_one_production(conn, v2)
    assert statuses(conn) == {1: "archived", 2: "production"}
    assert health(conn)["flagged_for_review"] == 0
    assert source(conn)["review_approved_until"] == clock() + 7 * 86400.0
    with pytest.raises(versions.VersionNotFound, match="is production, not staged"):
        led.approve("shop", v2)
    with pytest.raises(versions.VersionNotFound, match="is archived, not staged"):
        led.approve("shop", 1)
    assert_one_production(conn, v2)


def test_approving_a_host_move_moves_the_source(conn, ledger):
    add(ledger)
    v2 = ledger.stage_version("shop", candidate(ledger, url="http://mirror.example/shop"), "builtin")
    ledger.approve("shop", v2)
    s = source(conn)
    assert (s["url"], s["host"]) == ("http://mirror.example/shop", "mirror.example")


def test_approving_a_quarantined_source_brings_it_back(conn, make_ledger, clock):
    led = make_ledger(doctor__max_fix_attempts=1)
    quarantined(led, clock)
    v = led.stage_version("shop", candidate(led), "external")
    clock.advance(10)
    led.approve("shop", v)
    h = health(conn)
    assert (h["state"], h["quarantine_until"], h["attempts_since"]) == (DEGRADED, None, clock())
    assert events(conn)[-1][:2] == (QUARANTINED, DEGRADED)
    assert_one_production(conn, v)


def test_the_one_production_rule_holds_in_the_schema_too(conn, ledger):
    add(ledger)
    ledger.stage_version("shop", candidate(ledger), "builtin")
    with pytest.raises(apsw.ConstraintError):
        conn.execute("UPDATE parser_versions SET status = 'production' WHERE source_name = 'shop' AND version = 2")
    assert_one_production(conn, 1)


def test_versions_of_two_sources_are_independent(conn, ledger):
    add(ledger, "shop")
    add(ledger, "news")
    v = ledger.stage_version("shop", candidate(ledger), "builtin")
    ledger.promote("shop", v)
    assert_one_production(conn, 2, "shop")
    assert_one_production(conn, 1, "news")
    assert tasks.list_tasks(conn) == []
