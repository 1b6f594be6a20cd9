"""Numbers a person can trust: the metrics' definitions over real rows and a real SQLite file,
the data-gone check on real pages, the probation verdict against the layout a fix was proved on,
and what a person's rollback leaves behind (the daemon-level behaviour is in test_e2e_trusted.py)."""

from __future__ import annotations

import json

from healerd.core import errors
from healerd.core.blueprint import from_dict
from healerd.core.heal.checks.data_gone import gone_fields
from healerd.core.production import FALSE_POSITIVE, SITE_CHANGED, failure_verdict
from healerd.core.stats import compute
from healerd.demo.site import BLUEPRINTS, products_page, stats_page
from healerd.store import fixes, migrations, sources, tasks, versions
from healerd.store.db import open_db
from healerd.store.lifecycle import DEGRADED
from healerd.store.sql import rows, scalar
from healerd.store.stats import window_rows
from tests.support.ledger_kit import (
    V2,
    add,
    alert_events,
    bad,
    good,
    items,
    promote_fix,
    rollback_plan,
    verdicts,
)

# -- the data-gone check, on real pages ----------------------------------------------------------

STATS_BP = from_dict({**BLUEPRINTS["stats"], "url": "http://127.0.0.1:9/stats"})
PRODUCTS_BP = from_dict({**BLUEPRINTS["products"], "url": "http://127.0.0.1:9/products"})


def test_a_column_removed_from_the_page_is_data_gone():
    assert gone_fields(STATS_BP, stats_page(1), stats_page(2)) == ["score"]
    assert gone_fields(STATS_BP, stats_page(1), stats_page(2), ["games", "score"]) == ["score"]


def test_a_redesign_that_keeps_the_values_is_not_data_gone():
    assert gone_fields(PRODUCTS_BP, products_page(1), products_page(2)) == []


def test_a_label_still_on_the_page_means_the_data_may_be_there():
    bp = from_dict({"url": "http://shop.example/p", "fields": {"price": {"css": "dd.price"}}})
    before = "<html><body><dl><dt>Price</dt><dd class='price'>12.50 EUR</dd></dl></body></html>"
    changed = "<html><body><dl><dt>Price</dt><dd class='amount'>13.10 EUR</dd></dl></body></html>"
    removed = "<html><body><dl><dt>Colour</dt><dd class='c'>red</dd></dl></body></html>"
    assert gone_fields(bp, before, changed) == []          # the value changed, its label is still there
    assert gone_fields(bp, before, removed) == ["price"]


# -- the metrics' definitions ----------------------------------------------------------------------

def row(outcome, verdict=None, data_gone=0, strategy="builtin"):
    return {"outcome": outcome, "strategy": strategy, "created_at": 100.0, "failure_started_at": 90.0,
            "production_verdict": verdict, "data_gone": data_gone}


def test_refusals_that_found_the_data_gone_are_not_failed_fixes():
    got = compute(fixes=[row("promoted", "passed"), row("rejected", data_gone=1), row("rejected", data_gone=1),
                         row("rejected", data_gone=1)],
                  sources=3, quarantined=1, healer_calls=[], window_s=3600.0)
    assert got["fix_success_rate"] == 1.0 and got["data_gone_refusals"] == 3 and got["failed_attempts"] == 0
    assert got["targets"]["fix_success_rate"]["met"] is True
    got = compute(fixes=[row("promoted", "passed"), row("rejected"), row("error")], sources=1, quarantined=0,
                  healer_calls=[], window_s=3600.0)
    assert got["fix_success_rate"] == round(1 / 3, 4) and got["data_gone_refusals"] == 0


def test_a_fix_that_met_a_new_site_change_is_not_a_false_positive():
    got = compute(fixes=[row("promoted", "site_changed"), row("promoted", "passed")], sources=1, quarantined=0,
                  healer_calls=[], window_s=3600.0)
    assert got["false_positive_rate"] == 0.0 and got["fixes_judged"] == 2 and got["fix_success_rate"] == 1.0
    got = compute(fixes=[row("promoted", "false_positive"), row("promoted", "passed")], sources=1, quarantined=0,
                  healer_calls=[], window_s=3600.0)
    assert got["false_positive_rate"] == 0.5 and got["fix_success_rate"] == 0.5


def test_a_fix_still_on_probation_is_neither_success_nor_failure():
    got = compute(fixes=[row("promoted")], sources=1, quarantined=0, healer_calls=[], window_s=3600.0)
    assert got["fix_success_rate"] is None and got["fixes_on_probation"] == 1


def test_the_status_summary_uses_the_same_definition(tmp_path):
    conn = open_db(tmp_path / "healerd.db")
    add_plain(conn, "a")
    for outcome, verdict, gone in (("promoted", "passed", 0), ("promoted", None, 0), ("rejected", None, 1),
                                   ("rejected", None, 1), ("rejected", None, 0)):
        fid = fixes.record(conn, source_name="a", error_type="PARSE_ERROR", strategy="builtin", outcome=outcome,
                           reason="", data_gone=bool(gone), now=1000.0)
        if verdict:
            conn.execute("UPDATE fix_history SET production_verdict = ? WHERE fix_id = ?", (verdict, fid))
    m = fixes.metrics(conn)
    got = compute(**window_rows(conn, 0.0), window_s=1.0)
    assert m["fix_success_rate"] == got["fix_success_rate"] == 0.5          # 1 passed / (1 + 1 failed)
    assert m["data_gone_refusals"] == got["data_gone_refusals"] == 2
    conn.close()


def add_plain(conn, name: str, now: float = 10.0) -> None:
    sources.add(conn, name, from_dict({"url": f"http://127.0.0.1:9/{name}", "fields": {"t": {"css": "h1"}}}), now=now)


def event(conn, name: str, trigger: str, at: float, to_state: str | None = None) -> None:
    state = scalar(conn, "SELECT state FROM source_health WHERE source_name = ?", (name,)) or "ACTIVE"
    conn.execute("INSERT INTO source_events (source_name, from_state, to_state, trigger, reason, at) "
                 "VALUES (?, ?, ?, ?, '', ?)", (name, state, to_state or state, trigger, at))


def test_rollbacks_are_automatic_only_and_a_persons_are_counted_apart(tmp_path):
    conn = open_db(tmp_path / "healerd.db")
    add_plain(conn, "a")
    event(conn, "a", "manual_rollback", 100.0)
    event(conn, "a", "manual_rollback", 110.0)
    event(conn, "a", "rollback", 120.0)
    got = window_rows(conn, 0.0)
    assert got["rollbacks"] == 1 and got["manual_rollbacks"] == 2
    conn.close()


def test_a_removed_sources_history_leaves_the_fleets_metrics(tmp_path):
    conn = open_db(tmp_path / "healerd.db")
    add_plain(conn, "a")
    add_plain(conn, "b")
    event(conn, "a", "rollback", 100.0)
    event(conn, "a", "quarantine", 110.0, to_state="QUARANTINED")
    conn.execute("INSERT INTO healer_calls (source_name, cycle, backend, started_at, duration_ms, outcome) "
                 "VALUES ('a', 1, 'code-healer', 105.0, 500.0, 'healed')")
    assert (lambda g: (g["rollbacks"], g["quarantined"], len(g["healer_calls"])))(window_rows(conn, 0.0)) == (1, 1, 1)
    sources.remove(conn, "a")
    got = window_rows(conn, 0.0)
    assert (got["rollbacks"], got["quarantined"], got["healer_calls"], got["sources"]) == (0, 0, [], 1)
    # Added again under the same name: the earlier life's rows still do not count.
    add_plain(conn, "a", now=200.0)
    got = window_rows(conn, 0.0)
    assert (got["rollbacks"], got["quarantined"], got["healer_calls"], got["sources"]) == (0, 0, [], 2)
    event(conn, "a", "rollback", 300.0)
    assert window_rows(conn, 0.0)["rollbacks"] == 1
    conn.close()


def test_fix_attempts_24h_counts_only_attempts_that_spent_budget(tmp_path):
    conn = open_db(tmp_path / "healerd.db")
    add_plain(conn, "a")
    for outcome in ("promoted", "staged", "declined", "rejected"):
        fixes.record(conn, source_name="a", error_type="PARSE_ERROR", strategy="builtin", outcome=outcome,
                     reason="", now=1000.0)
    assert sources.status_one(conn, "a", now=1100.0)["fix_attempts_24h"] == 1
    assert {o["name"]: o for o in sources.status_all(conn, now=1100.0)}["a"]["fix_attempts_24h"] == 1
    conn.close()


# -- probation: the layout a fix was proved on ------------------------------------------------------

def listing(cls: str, n: int = 3, wrapper: str = "ul") -> str:
    return f"<html><body><{wrapper} class='l'>{''.join(f'<li class={cls}>x{i}</li>' for i in range(n))}</{wrapper}>" \
           "</body></html>"


def test_failure_verdict_compares_the_layouts():
    assert failure_verdict("aaaa", "aaaa") == FALSE_POSITIVE
    assert failure_verdict("aaaa", "bbbb") == SITE_CHANGED
    assert failure_verdict(None, "bbbb") == FALSE_POSITIVE and failure_verdict("aaaa", "") == FALSE_POSITIVE


def test_a_fix_failing_on_its_own_layout_is_a_false_positive(conn, ledger):
    add(ledger)
    ledger.record_scrape(good(ledger))
    v = stage_and_promote(ledger, listing("q"))
    ledger.record_scrape(bad(ledger, version=v, html=listing("q", n=4)))      # same template, other records
    assert verdicts(conn) == [(v, "false_positive")]


def test_a_fix_failing_after_the_site_changed_again_is_not_a_false_positive(conn, ledger):
    add(ledger)
    ledger.record_scrape(good(ledger))
    v = stage_and_promote(ledger, listing("q"))
    ledger.record_scrape(good(ledger, version=v, html=listing("q")))
    ledger.record_scrape(bad(ledger, version=v, html=listing("gone", wrapper="ol")))   # a new redesign
    assert verdicts(conn) == [(v, "site_changed")]
    hist = [e for e in fixes.history_entries(conn, "shop") if e["outcome"] == "promoted"]
    assert hist[0]["production"] == "site_changed" and hist[0]["false_positive"] is False


def stage_and_promote(led, html: str) -> int:
    v = led.stage_version("shop", V2, "builtin")
    led.promote("shop", v, page={"url": "http://shop.example/shop", "html": html, "records": items(3)})
    led.record_fix(name="shop", error_type=errors.PARSE_ERROR, strategy="builtin", outcome="promoted", reason="r",
                   version=v)
    return v


# -- the Validator's automatic rollback ------------------------------------------------------------

def test_an_automatic_rollback_to_a_version_that_is_no_longer_archived_is_dropped(conn, ledger):
    add(ledger)
    ledger.record_scrape(good(ledger))
    v2 = promote_fix(ledger)
    v3 = ledger.stage_version("shop", V2.with_url("http://shop.example/other"), "builtin")
    ledger.reject_version("shop", v3, "judged and refused")
    # The plan names version 3, which exists but was rejected: it must not come into production.
    fx = ledger.record_scrape(bad(ledger, version=v2, plan=rollback_plan(to=v3)))
    assert fx.result["ok"] is False and fx.result["state"] == DEGRADED
    assert scalar(conn, "SELECT current_version FROM sources WHERE name = 'shop'") == v2
    assert scalar(conn, "SELECT status FROM parser_versions WHERE source_name = 'shop' AND version = ?", (v3,)) \
        == "rejected"


# -- a person's rollback ---------------------------------------------------------------------------

def test_a_forced_manual_rollback_that_fails_is_the_rollbacks_not_healed(conn, ledger):
    add(ledger)
    ledger.record_scrape(good(ledger))
    v2 = promote_fix(ledger)
    ledger.clock.advance(5)
    ledger.rollback("shop", 1, fails="PARSE_ERROR: No items")
    ev = rows(conn, "SELECT trigger, reason FROM source_events WHERE source_name = 'shop' ORDER BY id DESC LIMIT 1")[0]
    assert ev["trigger"] == "manual_rollback" and "--force" in ev["reason"]
    attempts = ledger.attempts_used("shop")
    fx = ledger.record_scrape(bad(ledger, version=1))
    assert alert_events(fx) == ["DEGRADED"]
    assert "rolled back to by a person with --force" in fx.alerts[0]["message"]
    assert fx.alerts[0]["details"]["forced_rollback"] is True
    assert not tasks_pending(conn)                 # no fix attempt is queued for it
    ledger.record_scrape(bad(ledger, version=1))
    assert not tasks_pending(conn) and ledger.attempts_used("shop") == attempts
    report = json.loads(scalar(conn, "SELECT deferred_report FROM source_health WHERE source_name = 'shop'"))
    assert "--force" in report["reason"] and any("rollback" in o for o in report["options"])
    # A later version (the daemon's or a person's) is healed as usual again.
    ledger.clock.advance(5)
    ledger.rollback("shop", v2)
    ledger.record_scrape(bad(ledger, version=v2))
    assert tasks_pending(conn)


def test_an_unforced_manual_rollback_is_healed_as_usual_when_the_site_changes_later(conn, ledger):
    add(ledger)
    ledger.record_scrape(good(ledger))
    promote_fix(ledger)
    ledger.rollback("shop", 1)
    fx = ledger.record_scrape(bad(ledger, version=1))
    assert "by a person" not in fx.alerts[0]["message"] and tasks_pending(conn)


def tasks_pending(conn) -> list:
    return rows(conn, "SELECT task_id FROM task_queue WHERE type = ? AND state = 'PENDING'", (tasks.FIX_SOURCE,))


def test_the_history_shows_a_persons_rollback_as_a_rollback_by_a_person(conn, ledger):
    from healerd.store import probation

    add(ledger)
    ledger.record_scrape(good(ledger))
    promote_fix(ledger)
    ledger.clock.advance(5)
    ledger.rollback("shop", 1)
    entries = probation.history_entries(conn, "shop")
    assert [(e["event"], e["by"], e["version"]) for e in entries] == [("rollback", "person", 1)]
    assert versions.get(conn, "shop", 1)["promoted_by"] == versions.PERSON


# -- the schema step -------------------------------------------------------------------------------

def test_version_4_gains_the_data_gone_column(tmp_path):
    path = tmp_path / "healerd.db"
    conn = open_db(path)
    add_plain(conn, "a")
    fixes.record(conn, source_name="a", error_type="PARSE_ERROR", strategy="builtin", outcome="rejected", reason="")
    # Back to what a version-4 database has: fix_history without the column.
    conn.execute("ALTER TABLE fix_history DROP COLUMN data_gone")
    conn.execute("PRAGMA user_version = 4")
    conn.close()
    conn = open_db(path)
    assert scalar(conn, "PRAGMA user_version") == migrations.SCHEMA_VERSION == 6
    assert rows(conn, "SELECT outcome, data_gone FROM fix_history") == [{"outcome": "rejected", "data_gone": 0}]
    conn.close()


def test_a_rung_that_is_not_configured_names_no_attempt():
    from healerd.actors.doctor import last_rung

    assert last_rung(["memory: no known fix for this change", "builtin: the old selectors still work on the current page",
                      "external: not configured"]) == "builtin"
    assert last_rung(["external: not configured"]) == "none" and last_rung([]) == "none"
    assert last_rung(["builtin: refused: x", "external cycle 1: timeout: slow"]) == "external"
