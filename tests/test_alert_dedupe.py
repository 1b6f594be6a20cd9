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
