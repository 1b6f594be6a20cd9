"""The small things a new user meets, through the real daemon: "did you mean" for a mistyped
name, `alerts NAME --since`, an approval that history and the lifecycle say a person made, a
best guess that waits for approval without the Doctor running again on every scrape, and a
timeout that says how long it waited."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from tests.support.bestguess_pages import AMBIGUOUS, BEFORE, RECIPE_BP
from tests.support.daemon import FAST_CONFIG, db_rows
from tests.support.sitepages import LISTING_BP, listing_empty, listing_v1, write_blueprint

HOURLY = {**LISTING_BP, "every": "1h"}


def add(d, tmp_path, name, url, bp=HOURLY):
    r = d.ctl("add", name, "--blueprint", write_blueprint(tmp_path / f"{name}.json", url, bp))
    assert r.returncode == 0, r.stderr


def test_a_mistyped_name_gets_a_did_you_mean_and_alerts_filter_by_source_and_time(site, daemon_factory, tmp_path):
    site.page("/a", listing_v1())
    site.page("/b", listing_v1())
    d = daemon_factory().start()
    add(d, tmp_path, "scores", site.url("/a"))
    add(d, tmp_path, "prices", site.url("/b"))

    r = d.ctl("status", "scors")
    assert r.returncode == 1 and "no source named 'scors'; did you mean 'scores'?" in r.stderr, r.stderr
    r = d.ctl("records", "Prices")
    assert r.returncode == 1 and "did you mean 'prices'?" in r.stderr
    r = d.ctl("status", "zzzzzz")
    assert r.returncode == 1 and "did you mean" not in r.stderr

    site.page("/a", listing_empty())
    site.page("/b", listing_empty())
    assert d.ctl("run", "scores").returncode == 1
    assert d.ctl("run", "prices").returncode == 1
    d.wait_for(lambda: {a["source"] for a in d.alerts() if a["event"] == "DEGRADED"} >= {"scores", "prices"},
               what="both DEGRADED alerts")
    only = json.loads(d.ctl("alerts", "scores", "--json").stdout)
    assert only and {a["source"] for a in only} == {"scores"}
    assert {a["source"] for a in json.loads(d.ctl("alerts", "--json").stdout)} >= {"scores", "prices"}
    later = (datetime.now(UTC) + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert json.loads(d.ctl("alerts", "--since", later, "--json").stdout) == []
    recent = json.loads(d.ctl("alerts", "scores", "--since", "1h", "--json").stdout)
    assert {a["id"] for a in recent} >= {a["id"] for a in only} and {a["source"] for a in recent} == {"scores"}
    r = d.ctl("alerts", "--since", "yesterday-ish")
    assert r.returncode == 2 and "--since" in r.stderr


def test_a_waiting_best_guess_stops_the_doctor_rerunning_and_its_approval_is_audited(site, daemon_factory, tmp_path):
    site.page("/soup", BEFORE)
    d = daemon_factory(FAST_CONFIG).start()
    add(d, tmp_path, "soup", site.url("/soup"), RECIPE_BP)
    site.page("/soup", AMBIGUOUS)
    assert d.ctl_json("run", "soup")["ok"] is False

    def proposal():
        rep = d.ctl_json("status", "soup").get("deferred_report") or {}
        return rep.get("proposal")

    v = d.wait_for(proposal, timeout=60, what="the staged best guess")["version"]
    d.wait_for(lambda: not db_rows(d, "SELECT 1 FROM task_queue WHERE type = 'FIX_SOURCE' AND state IN "
                                      "('PENDING', 'IN_PROGRESS')"), what="the fix task to finish")
    fixes = len(db_rows(d, "SELECT fix_id FROM fix_history WHERE source_name = 'soup'"))
    for _ in range(3):                                        # the same failure again and again
        assert d.ctl_json("run", "soup")["ok"] is False
    assert not db_rows(d, "SELECT 1 FROM task_queue WHERE type = 'FIX_SOURCE' AND state = 'PENDING'")
    assert len(db_rows(d, "SELECT fix_id FROM fix_history WHERE source_name = 'soup'")) == fixes

    r = d.ctl("approve", "soup", str(v))
    assert r.returncode == 0, r.stderr
    approved = [h for h in d.ctl_json("history", "soup") if h.get("event") == "approve"]
    assert approved and approved[0]["by"] == "person" and approved[0]["version"] == v
    assert "a person approved version" in approved[0]["note"]
    events = d.ctl_json("status", "soup")["events"]
    assert any(e.get("trigger") == "approve" for e in events), events


def test_a_timeout_says_how_long_it_waited(site, daemon_factory, tmp_path):
    site.slow("/slow", 6.0, listing_v1())
    d = daemon_factory().start()
    r = d.ctl("add", "slow", "--blueprint", write_blueprint(tmp_path / "slow.json", site.url("/slow"), HOURLY),
              "--no-wait")
    assert r.returncode == 0
    got = d.ctl_json("run", "slow")
    assert got["error_type"] == "TIMEOUT" and "gave up after" in got["error"] and "s)" in got["error"], got
