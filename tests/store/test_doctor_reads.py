"""What the healing ladder reads between its decisions (healerd/store/doctor_reads.py), on a real
SQLite file with the daemon's schema."""

from __future__ import annotations

import pytest

from healerd.core.blueprint import from_dict
from healerd.store import alerts, doctor_reads, sources, versions
from healerd.store.db import open_db

T0 = 1_700_000_000.0
BP = {"url": "http://shop.test/stats", "items": "tr.player", "fields": {"name": {"css": "td.name"}}}
NOT_JUDGED = ("could not fetch the live page to validate",)


@pytest.fixture
def conn(tmp_path):
    c = open_db(tmp_path / "healerd.db")
    sources.add(c, "stats", from_dict(dict(BP)), now=T0)
    sources.add(c, "other", from_dict(dict(BP, url="http://other.test/")), now=T0)
    yield c
    c.close()


def test_a_source_s_state_and_last_error_class(conn):
    assert doctor_reads.source_state(conn, "stats") == "ACTIVE"
    assert doctor_reads.source_state(conn, "nobody") is None
    assert doctor_reads.last_error_type(conn, "stats") is None
    conn.execute("UPDATE source_health SET last_error_type = 'PARSE_ERROR' WHERE source_name = 'stats'")
    assert doctor_reads.last_error_type(conn, "stats") == "PARSE_ERROR"


def test_a_candidate_rejected_after_being_judged_since_the_episode_began(conn):
    cand = from_dict(dict(BP, items="tr.row-player"))
    body = cand.to_json()
    v = versions.create(conn, "stats", cand, origin="builtin", now=T0 + 100)
    assert not doctor_reads.rejected_since(conn, "stats", body, T0, not_judged=NOT_JUDGED), "still staging"
    versions.reject(conn, "stats", v, "No items: the items selector matched nothing")
    assert doctor_reads.rejected_since(conn, "stats", body, T0, not_judged=NOT_JUDGED)
    assert doctor_reads.rejected_since(conn, "stats", body, None, not_judged=NOT_JUDGED)
    assert not doctor_reads.rejected_since(conn, "stats", body, T0 + 101, not_judged=NOT_JUDGED), "an earlier episode"
    assert not doctor_reads.rejected_since(conn, "other", body, T0, not_judged=NOT_JUDGED), "another source"
    assert not doctor_reads.rejected_since(conn, "stats", cand.with_url("http://shop.test/x").to_json(), T0)


@pytest.mark.parametrize("note", [versions.INTERRUPTED, NOT_JUDGED[0] + " (HTTP 503)"])
def test_a_rejection_that_judged_nothing_does_not_count(conn, note):
    cand = from_dict(dict(BP, items="tr.row-player"))
    v = versions.create(conn, "stats", cand, origin="external", now=T0 + 100)
    versions.reject(conn, "stats", v, note)
    assert not doctor_reads.rejected_since(conn, "stats", cand.to_json(), T0, not_judged=NOT_JUDGED)
    if note != versions.INTERRUPTED:   # without the prefix it is a judged rejection like any other
        assert doctor_reads.rejected_since(conn, "stats", cand.to_json(), T0)


def test_external_healer_calls_of_a_window(conn):
    assert doctor_reads.healer_calls_since(conn, T0) == (0, None, None)
    for name, at in (("stats", T0 + 10), ("stats", T0 + 50), ("other", T0 + 30), ("stats", T0)):
        conn.execute("INSERT INTO healer_calls (source_name, cycle, backend, started_at, duration_ms, http_status, "
                     "outcome, reason) VALUES (?, 1, 'code-healer', ?, 5, 200, 'healed', '')", (name, at))
    assert doctor_reads.healer_calls_since(conn, T0, "stats") == (2, T0 + 10, T0 + 50), "strictly after"
    assert doctor_reads.healer_calls_since(conn, T0) == (3, T0 + 10, T0 + 50)
    assert doctor_reads.healer_calls_since(conn, T0 + 20, "other") == (1, T0 + 30, T0 + 30)
    # A call refused as untrusted sent nothing: it spends no budget.
    conn.execute("INSERT INTO healer_calls (source_name, cycle, backend, started_at, duration_ms, http_status, "
                 "outcome, reason) VALUES ('stats', 1, 'code-healer', ?, 0, NULL, 'untrusted', 'nobody')", (T0 + 60,))
    assert doctor_reads.healer_calls_since(conn, T0, "stats") == (2, T0 + 10, T0 + 50)
    assert doctor_reads.healer_calls_since(conn, T0) == (3, T0 + 10, T0 + 50)


def test_the_newest_budget_pause_alert(conn):
    assert doctor_reads.budget_paused_at(conn, "stats") is None
    for event, source, ts in (("BUDGET_PAUSED", "stats", T0 + 5), ("BUDGET_PAUSED", "stats", T0 + 9),
                              ("HEAL_FAILED", "stats", T0 + 20), ("BUDGET_PAUSED", "other", T0 + 30)):
        alerts.insert(conn, {"level": "warning", "source": source, "event": event, "message": "m"}, ts)
    assert doctor_reads.budget_paused_at(conn, "stats") == T0 + 9
    # A pause for an untrusted healer listener is not the budget's.
    alerts.insert(conn, {"level": "error", "source": "stats", "event": "BUDGET_PAUSED", "message": "m",
                         "details": {"cause": "untrusted_healer"}}, T0 + 40)
    assert doctor_reads.budget_paused_at(conn, "stats") == T0 + 9
