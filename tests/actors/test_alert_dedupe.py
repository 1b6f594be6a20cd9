"""The Alerter's dedupe core (AlertDeduper): no repeat within the window unless the state changed in between."""

from __future__ import annotations

from healerd.actors.alerter import AlertDeduper, format_line

WINDOW = 3600.0
T0 = 1_700_000_000.0


def test_the_same_event_for_the_same_source_is_suppressed_within_the_window():
    d = AlertDeduper(WINDOW)
    assert d.should_send("shop", "HEAL_FAILED", "DEGRADED", T0)
    assert not d.should_send("shop", "HEAL_FAILED", "DEGRADED", T0 + 1)
    assert not d.should_send("shop", "HEAL_FAILED", "DEGRADED", T0 + WINDOW - 0.001)


def test_after_the_window_it_fires_again_and_the_window_restarts():
    d = AlertDeduper(WINDOW)
    assert d.should_send("shop", "HEAL_FAILED", "DEGRADED", T0)
    assert not d.should_send("shop", "HEAL_FAILED", "DEGRADED", T0 + 1800)   # suppressed: does not restart it
    assert d.should_send("shop", "HEAL_FAILED", "DEGRADED", T0 + WINDOW)
    assert not d.should_send("shop", "HEAL_FAILED", "DEGRADED", T0 + WINDOW + 1)
    assert d.should_send("shop", "HEAL_FAILED", "DEGRADED", T0 + 2 * WINDOW + 5)


def test_a_state_change_in_between_lets_the_event_through():
    d = AlertDeduper(WINDOW)
    assert d.should_send("shop", "DEGRADED", "DEGRADED", T0)
    assert d.should_send("shop", "RECOVERED", "ACTIVE", T0 + 10)
    assert d.should_send("shop", "DEGRADED", "DEGRADED", T0 + 20)          # it flapped: say so again
    assert not d.should_send("shop", "DEGRADED", "DEGRADED", T0 + 30)      # but not twice for one episode


def test_a_state_change_seen_on_another_event_counts():
    d = AlertDeduper(WINDOW)
    assert d.should_send("shop", "UNQUARANTINED", "DEGRADED", T0)
    assert d.should_send("shop", "QUARANTINED", "QUARANTINED", T0 + 10)
    assert d.should_send("shop", "UNQUARANTINED", "DEGRADED", T0 + 20)


def test_the_same_state_again_is_no_change():
    d = AlertDeduper(WINDOW)
    assert d.should_send("shop", "HEAL_FAILED", "DEGRADED", T0)
    assert d.should_send("shop", "DEGRADED", "DEGRADED", T0 + 1)            # another event, same state
    assert not d.should_send("shop", "HEAL_FAILED", "DEGRADED", T0 + 2)


def test_an_alert_without_a_state_changes_nothing():
    d = AlertDeduper(WINDOW)
    assert d.should_send("shop", "HEAL_FAILED", "DEGRADED", T0)
    assert d.should_send("shop", "BUDGET_PAUSED", None, T0 + 1)
    assert not d.should_send("shop", "HEAL_FAILED", "DEGRADED", T0 + 2)
    assert not d.should_send("shop", "BUDGET_PAUSED", None, T0 + 3)


def test_sources_and_events_are_deduplicated_separately():
    d = AlertDeduper(WINDOW)
    assert d.should_send("shop", "DEGRADED", "DEGRADED", T0)
    assert d.should_send("news", "DEGRADED", "DEGRADED", T0)
    assert d.should_send("shop", "HEAL_FAILED", "DEGRADED", T0)
    # A state change of one source does not reopen another's.
    assert d.should_send("news", "RECOVERED", "ACTIVE", T0 + 1)
    assert not d.should_send("shop", "DEGRADED", "DEGRADED", T0 + 2)


def test_daemon_wide_alerts_dedupe_by_time():
    d = AlertDeduper(WINDOW)
    assert d.should_send(None, "SYSTEMIC_HALT", None, T0)
    assert not d.should_send(None, "SYSTEMIC_HALT", None, T0 + 60)
    assert d.should_send(None, "SYSTEMIC_HALT", None, T0 + WINDOW)


def test_a_zero_window_never_suppresses():
    d = AlertDeduper(0.0)
    assert all(d.should_send("shop", "HEAL_FAILED", "DEGRADED", T0) for _ in range(3))


def test_the_stderr_line():
    a = {"ts": "2023-11-14T22:13:20Z", "level": "warning", "source": None, "event": "SYSTEMIC_HALT", "message": "m"}
    assert format_line(a) == "ALERT 2023-11-14T22:13:20Z WARNING - SYSTEMIC_HALT: m"


def test_remembered_alerts_keep_the_window_across_a_new_deduper():
    d = AlertDeduper(WINDOW)
    d.remember("shop", "HEAL_FAILED", T0, "DEGRADED")
    assert not d.should_send("shop", "HEAL_FAILED", "DEGRADED", T0 + 60)       # same state: still a repeat
    assert d.should_send("shop", "HEAL_FAILED", "DEGRADED", T0 + WINDOW)        # the window ran out
    d = AlertDeduper(WINDOW)
    d.remember("shop", "DEGRADED", T0, "DEGRADED")
    assert d.should_send("shop", "QUARANTINED", "QUARANTINED", T0 + 60)
    assert d.should_send("shop", "DEGRADED", "DEGRADED", T0 + 120)             # the state changed in between


def test_the_store_gives_back_only_alerts_with_no_transition_since(tmp_path):
    from healerd.core.blueprint import Blueprint, FieldSpec
    from healerd.store import alerts, lifecycle, sources
    from healerd.store.db import open_db

    conn = open_db(str(tmp_path / "healerd.db"))
    bp = Blueprint(fields={"t": FieldSpec("t", "h1")}, url="http://127.0.0.1:9/p")
    for name in ("calm", "moved", "old"):
        sources.add(conn, name, bp, now=T0)
    for name in ("calm", "moved", "old"):
        lifecycle.fire(conn, lifecycle.make_model(name), "fail", reason="x", at=T0 + 10)
    with conn:
        alerts.insert(conn, {"level": "warning", "source": "calm", "event": "HEAL_FAILED", "message": "m"}, T0 + 20)
        alerts.insert(conn, {"level": "warning", "source": "calm", "event": "HEAL_FAILED", "message": "m"}, T0 + 30)
        alerts.insert(conn, {"level": "warning", "source": "moved", "event": "DEGRADED", "message": "m"}, T0 + 20)
        alerts.insert(conn, {"level": "warning", "source": "old", "event": "DEGRADED", "message": "m"}, T0 - 5000)
    lifecycle.fire(conn, lifecycle.make_model("moved", "DEGRADED"), "recover", reason="ok", at=T0 + 40)
    got = alerts.unchanged_since_sent(conn, T0 + 15 - WINDOW)
    assert [(r["source"], r["event"], r["ts"], r["state"]) for r in got] == [("calm", "HEAL_FAILED", T0 + 30, "DEGRADED")]
    conn.close()
