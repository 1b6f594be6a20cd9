"""What each way a fix attempt can end leaves behind, end to end.

The daemon runs as a subprocess against a real local site (and, where the external rung is
needed, a real code-healer server). Each test drives one outcome that is not a plain
promotion or rejection: a candidate held for a person, the external-call budget running out,
the Doctor failing on its own, and a restart in the middle of a deploy.
"""

from __future__ import annotations

import json
import threading

import apsw

from tests.support.daemon import FAST_CONFIG, db_rows
from tests.support.healer_server import HealerServer, healed
from tests.support.sitepages import LISTING_BP, listing_v1, listing_v2, write_blueprint

DOCUMENTED_OUTCOMES = {"promoted", "rejected", "declined", "error"}
# The healer's answer works on the redesigned page but drops the score field: it must wait for a person.
DROPS_SCORE = dict(LISTING_BP, items="table.league-table tr.row-player", fields={"name": {"css": "td.player-name"}})


def external_config(url: str, *, attempts: int = 3, extra: str = "") -> str:
    cfg = FAST_CONFIG.replace("[doctor]\nmax_fix_attempts = 3",
                              f'[doctor]\nladder = ["external"]\nmax_fix_attempts = {attempts}')
    assert 'ladder = ["external"]' in cfg
    return cfg + f'[healer]\nurl = "{url}"\ntimeouts = [5]\ncycles = 1\n{extra}'



def db_write(d, sql, params=()):
    conn = apsw.Connection(str(d.state / "healerd.db"))
    try:
        conn.setbusytimeout(5000)
        conn.execute(sql, params)
    finally:
        conn.close()


def fix_rows(d, name="stats"):
    return db_rows(d, "SELECT strategy, outcome, reason, version FROM fix_history WHERE source_name = ? "
                      "ORDER BY fix_id", (name,))


def version_statuses(d, name="stats"):
    return {r["version"]: (r["status"], r["note"]) for r in
            db_rows(d, "SELECT version, status, note FROM parser_versions WHERE source_name = ?", (name,))}


def add_and_scrape(d, site, tmp_path, name="stats", bp=LISTING_BP):
    site.page("/stats", listing_v1())
    r = d.ctl("add", name, "--blueprint", write_blueprint(tmp_path / f"{name}.json", site.url("/stats"), bp))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", name)["ok"] is True


def source_alerts(d, event, name="stats"):
    return [a for a in d.alerts() if a["source"] == name and a["event"] == event]


# ------------------------------------------------------------------------- held for a person


def test_a_staged_candidate_is_announced_once_and_not_staged_again(site, daemon_factory, tmp_path):
    healer = HealerServer(lambda req: healed(DROPS_SCORE, "score column gone"))
    try:
        d = daemon_factory(external_config(healer.url)).start()
        add_and_scrape(d, site, tmp_path)
        site.page("/stats", listing_v2())
        d.wait_for(lambda: len(fix_rows(d)) >= 1, timeout=60, what="the first fix attempt")
        d.wait_for(lambda: not db_rows(d, "SELECT 1 FROM task_queue WHERE type = 'FIX_SOURCE' AND state IN "
                                          "('PENDING', 'IN_PROGRESS')"), what="the fix tasks queued meanwhile")
        # While version 2 waits for a person, the same failure runs no fix attempt again (it
        # would only decline the same candidate on every scrape).
        seen = len(fix_rows(d))
        for _ in range(3):
            assert d.ctl("run", "stats").returncode == 1
        fixes = fix_rows(d)
        assert len(fixes) == seen, fixes
        assert (fixes[0]["strategy"], fixes[0]["outcome"], fixes[0]["version"]) == ("external", "staged", 2)
        for later in fixes[1:]:   # a task queued while the first attempt ran
            assert later["outcome"] == "declined" and "already staged as version 2" in later["reason"], fixes
        # One staged version, not a pile of identical ones; a candidate held for a person spends no
        # budget (the attempt budget counts failed attempts), so FIX/24H does not count it.
        statuses = version_statuses(d)
        assert {v: s for v, (s, _) in statuses.items()} == {1: "production", 2: "staging"}
        st = d.ctl_json("status", "stats")
        assert st["state"] == "DEGRADED" and st["fix_attempts_24h"] == 0
        # The person is told, once, which version waits and how to approve it.
        flagged = source_alerts(d, "FLAGGED_FOR_REVIEW")
        assert len(flagged) == 1, d.alerts()
        assert "healerctl approve stats 2" in flagged[0]["message"]
        assert "drops score" in flagged[0]["message"]
        assert source_alerts(d, "QUARANTINED") == []
        # history --json speaks its documented outcomes; the staged attempt says what it is.
        hist = [h for h in d.ctl_json("history", "stats") if h["kind"] == "fix"]
        assert {h["outcome"] for h in hist} <= DOCUMENTED_OUTCOMES, hist
        staged = [h for h in hist if h.get("staged")]
        assert len(staged) == 1 and staged[0]["outcome"] == "declined" and staged[0]["version"] == 2
        assert staged[0]["reason"].startswith("staged as version 2 for approval")
        # The approval the alert asked for ends it.
        assert d.ctl("approve", "stats", "2").returncode == 0
        d.wait_for(lambda: d.ctl_json("status", "stats")["state"] == "ACTIVE", what="the approved version to pass")
        assert d.ctl_json("records", "stats")[0]["data"][0] == {"name": "Ada"}
    finally:
        healer.stop()


# ------------------------------------------------------------------------- the external budget


def test_the_external_budget_pauses_healing_without_spending_attempts(site, daemon_factory, tmp_path):
    healer = HealerServer(lambda req: (500, json.dumps({"status": "error", "message": "model crashed"}).encode()))
    try:
        cfg = external_config(healer.url, attempts=2, extra="daily_budget_per_source = 1\n")
        d = daemon_factory(cfg).start()
        add_and_scrape(d, site, tmp_path)
        site.page("/stats", listing_v2())
        # Attempt 1 spends the one external call of the day and fails; attempt 2 finds the budget spent.
        d.wait_for(lambda: len(fix_rows(d)) >= 2, timeout=60, what="the attempt the budget paused")
        fixes = fix_rows(d)
        assert [(f["strategy"], f["outcome"]) for f in fixes[:2]] == [("external", "rejected"),
                                                                      ("external", "declined")], fixes
        assert "external: paused: the daily budget of external healer calls for stats is spent" in fixes[1]["reason"]
        assert len(healer.requests) == 1
        # Not quarantined: the pause spent no attempt, and the task waits for the budget.
        st = d.ctl_json("status", "stats")
        assert st["state"] == "DEGRADED" and st["fix_attempts_24h"] == 1
        waiting = db_rows(d, "SELECT state, not_before FROM task_queue WHERE type = 'FIX_SOURCE' "
                             "AND target = 'stats' AND state = 'PENDING'")
        assert len(waiting) == 1 and waiting[0]["not_before"] is not None
        # Asking again during the pause: still paused, still no attempt spent, no second alert.
        again = d.ctl_json("heal", "stats")
        assert again["outcome"] == "declined" and "external: paused" in again["reason"], again
        assert len(healer.requests) == 1
        assert d.ctl_json("status", "stats")["state"] == "DEGRADED"
        assert [f["outcome"] for f in fix_rows(d)].count("rejected") == 1
        d.wait_for(lambda: source_alerts(d, "BUDGET_PAUSED"), what="the BUDGET_PAUSED alert")
        assert len(source_alerts(d, "BUDGET_PAUSED")) == 1
        assert source_alerts(d, "QUARANTINED") == []
    finally:
        healer.stop()


# ------------------------------------------------------------------------- the Doctor fails


def test_an_internal_error_is_a_recorded_attempt_and_ends_in_quarantine(site, daemon_factory, tmp_path):
    d = daemon_factory().start()
    add_and_scrape(d, site, tmp_path, bp=dict(LISTING_BP, every="1h"))
    # A damaged row the Doctor reads while diagnosing: every treatment of this source raises.
    db_write(d, "UPDATE source_health SET item_counts = '{not json' WHERE source_name = 'stats'")
    site.page("/stats", listing_v2())
    d.ctl("run", "stats")
    d.wait_for(lambda: d.ctl_json("status", "stats")["state"] == "QUARANTINED", timeout=60,
               what="three failed attempts to quarantine the source")
    fixes = fix_rows(d)
    assert [(f["strategy"], f["outcome"]) for f in fixes] == [("none", "error")] * 3, fixes
    for f in fixes:
        assert f["reason"].startswith("internal error: JSONDecodeError: ")
        assert "\n" not in f["reason"]
    hist = [h for h in d.ctl_json("history", "stats") if h["kind"] == "fix"]
    assert [h["outcome"] for h in hist] == ["error"] * 3
    assert hist[0]["error_type"] in ("PARSE_ERROR", "SCHEMA_MISMATCH")
    assert len(source_alerts(d, "QUARANTINED")) == 1


# ------------------------------------------------------------------------- a crash mid-deploy


def test_a_version_a_crash_left_unvalidated_is_rejected_at_start_up(site, daemon_factory, tmp_path):
    d = daemon_factory().start()
    add_and_scrape(d, site, tmp_path, bp=dict(LISTING_BP, every="1h"))
    # The redesigned page; the third request for it (the Deployer validating the first
    # candidate) hangs until the test lets it go, so the daemon dies with that version staged.
    hits = []
    release = threading.Event()

    def page():
        hits.append(1)
        if len(hits) == 3:
            release.wait(60)
        return listing_v2().encode()

    with site.lock:
        site.pages["/stats"] = (200, {"Content-Type": "text/html; charset=utf-8"}, page)
    try:
        d.ctl("run", "stats", "--no-wait")
        d.wait_for(lambda: 2 in version_statuses(d), what="the candidate to be staged")
        d.wait_for(lambda: len(hits) >= 3, what="the Deployer to fetch the page")
        d.kill9()
        assert version_statuses(d)[2][0] == "staging"
    finally:
        release.set()
    d.start()
    assert version_statuses(d)[2] == ("rejected", "interrupted before validation")
    assert "interrupted" in d.log()
    # The task resumes; the same candidate is tried again (it was never judged) and promoted.
    d.wait_for(lambda: d.ctl_json("status", "stats")["state"] == "ACTIVE", timeout=60, what="the resumed heal")
    statuses = version_statuses(d)
    assert statuses[2][0] == "rejected" and statuses[3][0] == "production"
    assert [s for s, _ in statuses.values()].count("staging") == 0
    assert d.ctl_json("status", "stats")["version"] == 3
