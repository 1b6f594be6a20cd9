"""The real daemon as a subprocess, driven by the real healerctl over the real socket."""

from __future__ import annotations

import time

import apsw

from tests.support.daemon import FAST_CONFIG
from tests.support.sitepages import CHALLENGE, LISTING_BP, listing_empty, listing_v1, write_blueprint

STATUS_KEYS = {"name", "url", "state", "version", "last_success_at", "last_failure_at", "failure_count",
               "fix_attempts_24h", "quarantine_until", "paused", "next_run_at", "last_error"}


def db_rows(d, sql, params=()):
    conn = apsw.Connection(str(d.state / "healerd.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        cur = conn.execute(sql, params)
        desc = None
        out = []
        for r in cur:
            desc = desc or [x[0] for x in cur.getdescription()]
            out.append(dict(zip(desc, r)))
        return out
    finally:
        conn.close()


def test_the_commands_of_the_contract(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    d = daemon_factory().start()
    bp = write_blueprint(tmp_path / "stats.json", site.url("/stats"))

    r = d.ctl("add", "scores", "--blueprint", bp)
    assert r.returncode == 0, r.stderr
    r = d.ctl("run", "scores")
    assert r.returncode == 0, r.stderr
    assert "scores" in r.stdout

    rows = d.ctl_json("status")
    assert isinstance(rows, list) and len(rows) == 1
    assert STATUS_KEYS <= set(rows[0])
    assert rows[0]["state"] == "ACTIVE" and rows[0]["version"] == 1
    assert rows[0]["last_success_at"].endswith("Z")
    one = d.ctl_json("status", "scores")
    assert one["name"] == "scores" and STATUS_KEYS <= set(one)
    table = d.ctl("status")
    assert table.returncode == 0 and "scores" in table.stdout and "ACTIVE" in table.stdout

    recs = d.ctl_json("records", "scores")
    assert recs[0]["version"] == 1
    assert recs[0]["data"][0] == {"name": "Ada", "score": 31}
    csv_out = d.ctl("records", "scores", "--csv")
    assert csv_out.returncode == 0 and "name" in csv_out.stdout.splitlines()[0] and "Ada" in csv_out.stdout

    assert d.ctl("pause", "scores").returncode == 0
    assert d.ctl_json("status", "scores")["paused"] is True
    assert d.ctl("resume", "scores").returncode == 0
    assert d.ctl_json("status", "scores")["paused"] is False

    hist = d.ctl_json("history", "scores")
    assert hist[0]["kind"] == "version" and hist[0]["origin"] == "human" and hist[0]["status"] == "production"
    diff = d.ctl("diff", "scores")
    assert diff.returncode == 0, diff.stderr
    assert diff.stdout.startswith("scores: no structural difference between the last good page (")

    bad = d.ctl("unquarantine", "scores")
    assert bad.returncode == 1 and "ACTIVE" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    assert d.ctl("rollback", "scores").returncode == 1
    assert d.ctl("status", "nope").returncode == 1
    assert isinstance(d.ctl_json("alerts"), list)

    assert d.ctl("remove", "scores").returncode == 0
    assert d.ctl("status", "scores").returncode == 1


def test_invalid_blueprint_is_refused_naming_the_key(site, daemon_factory, tmp_path):
    d = daemon_factory().start()
    f = tmp_path / "bad.toml"
    f.write_text('url = "http://127.0.0.1:9/x"\n[fields.price]\ncss = "td..price"\n')
    r = d.ctl("add", "bad", "--blueprint", str(f))
    assert r.returncode == 1
    assert "fields.price.css" in r.stderr


def test_daemon_down_is_exit_3_naming_the_socket(tmp_path):
    import subprocess

    from tests.support.daemon import bin_cmd

    sock = str(tmp_path / "nothing.sock")
    r = subprocess.run(bin_cmd("healerctl") + ["--socket", sock, "status"], capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 3 and sock in r.stderr


def test_each_failure_is_classified_and_moves_the_lifecycle(site, daemon_factory, tmp_path):
    from tests.support.daemon import FAST_CONFIG

    d = daemon_factory(FAST_CONFIG.replace("[doctor]", "[doctor]\nenabled = false")).start()
    from tests.support.ports import refusing_socket

    closed = refusing_socket()   # bound, never listening: connections refused until the test ends
    dead_port = closed.getsockname()[1]

    site.page("/good", listing_v1())
    site.page("/e500", "oops", status=500)
    site.page("/e429", "slow down", status=429, headers={"Retry-After": "120"})
    site.page("/challenge", CHALLENGE, status=503)
    site.page("/empty", listing_empty())
    site.slow("/slow", 6.0, listing_v1())
    site.redirect("/loop", "/loop")
    site.page("/latin", "<html><body><table class='stats'><tr class='player'><td class='name'>Jos\xe9</td>"
                        "<td class='score'>7</td></tr></table></body></html>".encode("latin-1"),
              headers={"Content-Type": "text/html; charset=iso-8859-1"})
    cases = {
        "good": (site.url("/good"), None),
        "missing": (site.url("/missing"), "HTTP_ERROR"),
        "e500": (site.url("/e500"), "HTTP_ERROR"),
        "e429": (site.url("/e429"), "RATE_LIMIT"),
        "challenge": (site.url("/challenge"), "BLOCKED"),
        "empty": (site.url("/empty"), "PARSE_ERROR"),
        "slow": (site.url("/slow"), "TIMEOUT"),
        "loop": (site.url("/loop"), "HTTP_ERROR"),
        "refused": (f"http://127.0.0.1:{dead_port}/x", "NETWORK"),
        "latin": (site.url("/latin"), None),
    }
    for name, (url, _) in cases.items():   # registered only: each is scraped by the `run` below
        bp = write_blueprint(tmp_path / f"{name}.json", url)
        assert d.ctl("add", name, "--blueprint", bp, "--no-wait").returncode == 0
    for name, (_url, expected) in cases.items():
        out = d.ctl_json("run", name)
        if expected is None:
            assert out["ok"] is True, (name, out)
        else:
            assert out["ok"] is False and out["error_type"] == expected, (name, out)
            assert d.state_of(name) == "DEGRADED", name
    assert d.ctl_json("records", "latin")[0]["data"][0]["name"] == "José"
    # None of these ever scraped successfully: nothing to heal towards, so no FIX task is queued
    # (a 404 or an empty page after a good past is healed: test_ledger, test_e2e_healing).
    fix = {r["target"] for r in db_rows(d, "SELECT target FROM task_queue WHERE type = 'FIX_SOURCE'")}
    assert not fix
    assert "never scraped successfully" in (d.ctl_json("status", "missing")["deferred_report"] or {}).get("reason", "")
    # RATE_LIMIT stretched the schedule past Retry-After.
    nxt = db_rows(d, "SELECT next_run_at FROM sources WHERE name = 'e429'")[0]["next_run_at"]
    assert nxt - time.time() > 100
    # Nothing crashed and the good source is still served promptly.
    assert d.proc.poll() is None
    assert d.ctl_json("run", "good")["ok"] is True
    events = {a["event"] for a in d.alerts()}
    assert "DEGRADED" in events


def test_kill9_and_restart_shows_the_same_state(site, daemon_factory, tmp_path):
    site.page("/a", listing_v1())
    site.page("/b", listing_empty())
    # Nothing runs by itself (hourly schedule, no healing): the state is what the commands made it.
    cfg = FAST_CONFIG.replace("[doctor]", "[doctor]\nenabled = false")
    d = daemon_factory(cfg).start()
    hourly = {**LISTING_BP, "every": "1h"}
    for name, path in (("a", "/a"), ("b", "/b")):
        bp = write_blueprint(tmp_path / f"{name}.json", site.url(path), hourly)
        assert d.ctl("add", name, "--blueprint", bp, "--no-wait").returncode == 0
        d.ctl("run", name)
    d.ctl("pause", "a")
    before = {s["name"]: s for s in d.ctl_json("status")}
    d.kill9()
    d2 = daemon_factory(cfg, sub="d")
    d2.start()
    after = {s["name"]: s for s in d2.ctl_json("status")}
    for name in before:
        for key in ("state", "version", "paused", "failure_count", "last_success_at", "url"):
            assert before[name][key] == after[name][key], (name, key)
    assert d2.ctl_json("records", "a")[0]["data"][0]["name"] == "Ada"
