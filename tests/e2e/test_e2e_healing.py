"""The healing loop end to end: the daemon as a subprocess, a real local site, real healers."""

from __future__ import annotations

import json
from http.server import ThreadingHTTPServer

from tests.support.daemon import FAST_CONFIG, db_rows
from tests.support.healer_server import HealerServer, healed
from tests.support.sitepages import LISTING_BP, listing_no_score, listing_v1, listing_v2, write_blueprint


def add(d, tmp_path, name, url, bp=LISTING_BP):
    r = d.ctl("add", name, "--blueprint", write_blueprint(tmp_path / f"{name}.json", url, bp))
    assert r.returncode == 0, r.stderr


def healed_version(d, name):
    s = d.ctl_json("status", name)
    return s["version"] if s["state"] == "ACTIVE" and s["version"] > 1 else None


def test_layout_change_is_healed_promoted_and_records_keep_flowing(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    d = daemon_factory().start()
    add(d, tmp_path, "stats", site.url("/stats"))
    assert d.ctl_json("run", "stats")["ok"] is True
    site.page("/stats", listing_v2())
    v = d.wait_for(lambda: healed_version(d, "stats"), what="the heal to be promoted")
    d.wait_for(lambda: d.ctl_json("records", "stats")[0]["version"] == v, what="records from the new version")
    assert d.ctl_json("records", "stats")[0]["data"][0] == {"name": "Ada", "score": 31}
    hist = d.ctl_json("history", "stats")
    fixes = [h for h in hist if h["kind"] == "fix"]
    assert fixes and fixes[0]["outcome"] == "promoted" and fixes[0]["strategy"] == "builtin"
    versions = {h["version"]: h for h in hist if h["kind"] == "version"}
    assert versions[v]["status"] == "production" and versions[v]["origin"] == "builtin"
    assert versions[1]["status"] == "archived"
    assert any(a["event"] == "HEALED" and a["source"] == "stats" for a in d.alerts())
    assert "fix attempt stats" in d.log()  # the WARNING line per attempt
    # Not failing now: the diff shows what the fix attempt worked from, the old table and the new one.
    diff = d.ctl("diff", "stats")
    assert diff.returncode == 0, diff.stderr
    lines = diff.stdout.splitlines()
    assert lines[0].startswith("stats is not failing now; the diff its last fix attempt")
    assert "-table.stats > tbody > tr.player > td.name: Ada" in lines
    assert "+div.wrap > table.league-table" in lines


def test_a_bad_candidate_is_rejected_and_production_untouched(site, daemon_factory, tmp_path):
    # The healer answers a blueprint whose items include the header row: its score is null.
    bad = dict(LISTING_BP, items="tr", fields={"name": {"css": "td, th"}, "score": {"css": "td.pts", "type": "int"}})
    healer = HealerServer(lambda req: healed(bad))
    cfg = FAST_CONFIG.replace("[doctor]", '[doctor]\nladder = ["external"]') + \
        f'[healer]\nurl = "{healer.url}"\ntimeouts = [5]\ncycles = 1\n'
    site.page("/stats", listing_v1())
    d = daemon_factory(cfg).start()
    add(d, tmp_path, "stats", site.url("/stats"))
    d.ctl("run", "stats")
    site.page("/stats", listing_v2())
    d.wait_for(lambda: any(h["kind"] == "fix" for h in d.ctl_json("history", "stats")), what="a fix attempt")
    hist = d.ctl_json("history", "stats")
    fix = [h for h in hist if h["kind"] == "fix"][0]
    assert fix["outcome"] == "rejected" and fix["strategy"] == "external"
    assert any(h["kind"] == "version" and h["status"] == "rejected" and h["origin"] == "external" for h in hist)
    assert d.ctl_json("status", "stats")["version"] == 1
    prod = db_rows(d, "SELECT version FROM parser_versions WHERE source_name = 'stats' AND status = 'production'")
    assert [r["version"] for r in prod] == [1]
    healer.stop()


def test_three_failed_attempts_quarantine_then_unquarantine_retries(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    d = daemon_factory().start()
    add(d, tmp_path, "stats", site.url("/stats"))
    d.ctl("run", "stats")
    site.page("/stats", listing_no_score())
    st = d.wait_for(lambda: (s := d.ctl_json("status", "stats"))["state"] == "QUARANTINED" and s, timeout=60,
                    what="QUARANTINED")
    assert st["fix_attempts_24h"] == 3 and st["quarantine_until"]
    assert st["deferred_report"] and st["deferred_report"]["options"]
    q = [a for a in d.alerts() if a["event"] == "QUARANTINED"]
    # The score column is gone: the refusals were right, and the alert says what they found.
    assert len(q) == 1 and q[0]["source"] == "stats" and \
        "3 fix attempts in 1h found the data for score gone from the page" in q[0]["message"], q
    assert q[0]["details"]["deferred_report"]["last_error"]
    fixes = [h for h in d.ctl_json("history", "stats") if h["kind"] == "fix"]
    assert len(fixes) == 3 and all(f["outcome"] == "rejected" for f in fixes)
    # The production parser was never touched: a refusal is the right answer.
    assert st["version"] == 1
    # The site puts the score back; unquarantine retries at once and the source recovers.
    site.page("/stats", listing_v1())
    r = d.ctl("unquarantine", "stats", "--reason", "score column restored")
    assert r.returncode == 0, r.stderr
    d.wait_for(lambda: d.ctl_json("status", "stats")["state"] == "ACTIVE", what="recovery after unquarantine")
    events = [a["event"] for a in d.alerts() if a["source"] == "stats"]
    assert "UNQUARANTINED" in events


def test_kill9_in_the_middle_of_a_heal_resumes_after_restart(site, daemon_factory, tmp_path):
    fixed = dict(LISTING_BP, items="table.league-table tr.row-player",
                 fields={"name": {"css": "td.player-name"}, "score": {"css": "td.pts", "type": "int"}})
    healer = HealerServer(lambda req: healed(fixed), delay=30.0)
    cfg = FAST_CONFIG.replace("[doctor]", '[doctor]\nladder = ["external"]') + \
        f'[healer]\nurl = "{healer.url}"\ntimeouts = [60]\ncycles = 1\n'
    site.page("/stats", listing_v1())
    d = daemon_factory(cfg).start()
    add(d, tmp_path, "stats", site.url("/stats"))
    d.ctl("run", "stats")
    site.page("/stats", listing_v2())
    d.wait_for(lambda: len(healer.requests) >= 1, what="the healer to be asked")
    d.kill9()
    tasks = db_rows(d, "SELECT state FROM task_queue WHERE type = 'FIX_SOURCE' AND target = 'stats'")
    assert [t["state"] for t in tasks] == ["IN_PROGRESS"]
    healer.delay = 0.0
    d2 = daemon_factory(cfg, sub="d").start()
    v = d2.wait_for(lambda: healed_version(d2, "stats"), what="the resumed heal")
    prod = db_rows(d2, "SELECT version FROM parser_versions WHERE source_name = 'stats' AND status = 'production'")
    assert [r["version"] for r in prod] == [v]
    # The version is promoted before the Doctor marks the task done: wait for its final state.
    fix_task = "SELECT state, retry_count FROM task_queue WHERE type = 'FIX_SOURCE' AND target = 'stats' ORDER BY task_id"
    d2.wait_for(lambda: db_rows(d2, fix_task)[0]["state"] == "COMPLETED", what="the resumed fix task to complete")
    assert db_rows(d2, fix_task) == [{"state": "COMPLETED", "retry_count": 1}]
    healer.stop()


def test_our_side_down_on_every_host_is_one_systemic_halt_and_no_heal_attempts(site, daemon_factory, tmp_path):
    # Three hosts (127.0.0.1-3, one server on all of them) failing the same way: that is our side.
    # (One site down, however many sources it hosts, never halts: test_e2e_edges.)
    pages = {f"/s{i}": (200, {"Content-Type": "text/html"}, listing_v1().encode()) for i in range(3)}
    srv = _serve_on(pages, host="0.0.0.0")
    port = srv.server_address[1]
    d = daemon_factory().start()
    for i in range(3):
        add(d, tmp_path, f"s{i}", f"http://127.0.0.{i + 1}:{port}/s{i}")
        assert d.ctl("run", f"s{i}").returncode == 0
    from tests.support.ports import hold_port

    srv.shutdown()
    srv.server_close()
    held = hold_port(port, host="0.0.0.0")   # the address stays ours while the hosts are down (refused)
    d.wait_for(lambda: any(a["event"] == "SYSTEMIC_HALT" for a in d.alerts()), what="SYSTEMIC_HALT")
    assert d.ctl_json("status")[0]["state"] == "DEGRADED"
    summary_cmd = d.ctl("status")
    assert "halt" in summary_cmd.stdout.lower()
    # More failing scrapes of every source, recorded after the halt: still one alert, no heal attempt.
    failures = "SELECT min(failure_count) AS n FROM source_health"
    after_halt = db_rows(d, failures)[0]["n"]
    d.wait_for(lambda: db_rows(d, failures)[0]["n"] >= after_halt + 2, what="two more failed scrapes of each source")
    d.wait_for(lambda: len(d.ctl_json("alerts")) == len(d.alerts()), what="the Alerter to catch up")
    assert sum(a["event"] == "SYSTEMIC_HALT" for a in d.alerts()) == 1
    assert db_rows(d, "SELECT count(*) AS n FROM fix_history WHERE outcome != 'declined'")[0]["n"] == 0
    assert db_rows(d, "SELECT count(*) AS n FROM task_queue WHERE type = 'FIX_SOURCE'")[0]["n"] == 0
    # The hosts come back on the same address: the sources recover and the halt lifts by itself.
    revived = _serve_on(pages, held=held)
    try:
        d.wait_for(lambda: all(s["state"] == "ACTIVE" for s in d.ctl_json("status")), timeout=30, what="recovery")
        status = json.loads(d.ctl("status", "--json").stdout)
        assert all(s["state"] == "ACTIVE" for s in status)
        from healerd.control.client import call

        assert call(d.socket, "status", {}, timeout=10)["summary"]["systemic_halt"] is False
    finally:
        revived.shutdown()
        revived.server_close()


def _serve_on(pages, host="127.0.0.1", held=None):
    """Serve `pages` on (host, a free port), or on the socket `held` (bound, not yet listening)."""
    import threading
    from http.server import BaseHTTPRequestHandler

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            status, headers, body = pages.get(self.path, (404, {}, b"gone"))
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Connection", "close")   # a server that stops leaves no kept-alive connection
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    if held is None:
        srv = ThreadingHTTPServer((host, 0), H)
    else:
        srv = ThreadingHTTPServer(held.getsockname(), H, bind_and_activate=False)
        srv.socket.close()
        srv.socket = held
        srv.server_activate()   # listen(): the hosts are back on the same address
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def _form(rows: str) -> str:
    return f"<html><head><title>Product</title></head><body><h1>Chef Knife</h1><form>{rows}</form></body></html>"


def test_a_low_confidence_builtin_heal_waits_in_staging_for_approval(site, daemon_factory, tmp_path):
    # the price changed along with the layout and now comes after the stock: only its label still
    # names it (nothing places it as before beside the stock found again), so the built-in
    # healer's candidate is low-confidence and must not reach production unseen
    bp = {"every": "1s", "fields": {"price": {"css": "div.row input#id_price", "attr": "value", "type": "float"},
                                    "stock": {"css": "input#id_stock", "attr": "value", "type": "int"}}}
    site.page("/knife", _form('<div class="row"><label for="id_price">Price:</label><div><input id="id_price" '
                              'value="59.00"></div></div><div class="row"><label for="id_stock">Stock:</label><div>'
                              '<input id="id_stock" value="12"></div></div>'))
    d = daemon_factory().start()
    r = d.ctl("add", "knife", "--blueprint", write_blueprint(tmp_path / "knife.json", site.url("/knife"), bp))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "knife")["ok"] is True
    site.page("/knife", _form('<fieldset><p class="f"><label for="fld-stock">Stock:</label><input id="fld-stock" '
                              'class="inp" value="12"></p><p class="f"><label for="fld-price">Price:</label>'
                              '<input id="fld-price" class="inp" value="61.50"></p></fieldset>'))
    # the first built-in attempt (later ones are declined: the same candidate already waits)
    fix = d.wait_for(lambda: next(iter(db_rows(d, "SELECT outcome, reason FROM fix_history WHERE source_name = 'knife' "
                                                  "AND strategy = 'builtin' ORDER BY fix_id LIMIT 1")), None),
                     what="the built-in fix attempt")
    assert fix["outcome"] == "staged", fix
    assert "low-confidence repair (0." in fix["reason"] and "healerctl approve" in fix["reason"]
    versions = db_rows(d, "SELECT version, status, origin, note FROM parser_versions WHERE source_name = 'knife' "
                          "ORDER BY version")
    assert [(v["status"], v["origin"]) for v in versions][1:] == [("staging", "builtin")], versions
    assert "(confidence 0." in versions[1]["note"]   # the healer's fix note says how confident it was
    assert d.ctl_json("status", "knife")["version"] == 1   # production untouched until approved
