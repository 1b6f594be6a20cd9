"""What healerd tells a person, end to end: the real daemon, a real local site, the installed
healerctl. The metrics read as their definitions say, alerts survive a remove and add, a
person's rollback is theirs, the quarantine report says what works, and `add` says whether
the source works."""

from __future__ import annotations

import re
import socket

from tests.support.daemon import FAST_CONFIG, db_rows
from tests.support.healer_server import HealerServer, healed
from tests.support.sitepages import LISTING_BP, listing_no_score, listing_v1, listing_v2, write_blueprint

BUILTIN = FAST_CONFIG.replace("[doctor]", '[doctor]\nladder = ["builtin"]')
HOURLY = dict(LISTING_BP, every="1h")   # scraped only when the test says (and when a fix asks)


def add(d, tmp_path, name, url, bp=HOURLY):
    r = d.ctl("add", name, "--blueprint", write_blueprint(tmp_path / f"{name}.json", url, bp))
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def fixes(d, name):
    return [h for h in d.ctl_json("history", name) if h["kind"] == "fix"]


def healed_to_v2(d, site, name):
    site.page("/stats", listing_v2())
    assert d.ctl_json("run", name)["ok"] is False
    d.wait_for(lambda: (s := d.ctl_json("status", name))["version"] == 2 and s["state"] == "ACTIVE", timeout=60,
               what="the redesign healed as v2")


# -- 1. metrics a person can check -----------------------------------------------------------------

def test_a_heal_then_a_real_removal_reads_as_one_success_and_refusals_that_were_right(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    d = daemon_factory(BUILTIN).start()
    add(d, tmp_path, "shop", site.url("/stats"))
    healed_to_v2(d, site, "shop")
    # Within v2's probation the site really removes the score column.
    site.page("/stats", listing_no_score())

    def quarantined():
        d.ctl("run", "shop")
        return d.state_of("shop") == "QUARANTINED"

    d.wait_for(quarantined, timeout=90, what="the refusals to quarantine the source")

    got = fixes(d, "shop")
    promoted = [f for f in got if f["outcome"] == "promoted"]
    refused = [f for f in got if f["outcome"] == "rejected"]
    assert len(promoted) == 1 and promoted[0]["version"] == 2
    # v2 read the layout it was proved on; the site then changed: not a false positive.
    assert promoted[0]["production"] == "site_changed" and promoted[0]["false_positive"] is False
    assert refused and all(f.get("data_gone") is True for f in refused), refused
    text = d.ctl("history", "shop").stdout
    assert "false positive" not in text and "(data gone)" in text and "the site changed since" in text, text

    stats = d.ctl_json("stats")
    assert stats["false_positive_rate"] == 0.0 and stats["false_positives"] == 0 and stats["fixes_judged"] == 1
    assert stats["fix_success_rate"] == 1.0 and stats["failed_attempts"] == 0
    assert stats["data_gone_refusals"] == len(refused)
    assert stats["targets"]["fix_success_rate"]["met"] is True
    out = d.ctl("stats").stdout
    assert re.search(r"fix success rate\s+100\.0 %\s+1/1\s", out), out
    assert re.search(r"false positive rate\s+0\.0 %\s+0/1\s", out), out
    assert f"refusals that found the data gone (not failures): {len(refused)}" in out, out
    st = d.ctl_json("status", "shop")
    assert st["metrics"]["fix_success_rate"] == 1.0 and st["metrics"]["data_gone_refusals"] == len(refused)

    # The alerts say what was found, not that healing failed.
    alerts = [a for a in d.alerts() if a["source"] == "shop"]
    q = [a for a in alerts if a["event"] == "QUARANTINED"][-1]
    assert "found the data for score gone from the page" in q["message"], q
    hf = [a for a in alerts if a["event"] == "HEAL_FAILED"]
    assert hf and "the data for score is gone from the page" in hf[0]["message"], hf

    # 4. the report a person acts on: oldest first, the update that works, no unquarantine.
    report = st["deferred_report"]
    ats = [a["at"] for a in report["attempts"]]
    assert ats == sorted(ats) and len(ats) >= 2, report["attempts"]
    assert report["data_gone"] == ["score"]
    assert any("`healerctl update shop --blueprint shop.toml`" in o for o in report["options"]), report["options"]
    assert "or stop scraping it: `healerctl remove shop`" in report["options"]
    assert not any("unquarantine" in o or "external healer" in o for o in report["options"]), report["options"]
    shown = d.ctl("status", "shop").stdout
    assert "healerctl update shop --blueprint shop.toml" in shown and "required = false" in shown, shown
    # Doing what it says works.
    toml = tmp_path / "shop.toml"
    toml.write_text(report["blueprint_toml"])
    r = d.ctl("update", "shop", "--blueprint", str(toml))
    assert r.returncode == 0 and "shop: ok, 5 record(s), 5 item(s)" in r.stdout, r.stdout + r.stderr
    assert d.state_of("shop") == "ACTIVE"
    # A successful fix is good news: logged at INFO, a failed one at WARNING.
    lines = [ln for ln in d.log().splitlines() if "fix attempt shop:" in ln]
    assert any("outcome=promoted" in ln and " INFO " in ln for ln in lines), lines
    assert not any("outcome=promoted" in ln and "WARNING" in ln for ln in lines), lines
    assert any("outcome=rejected" in ln and "WARNING" in ln for ln in lines), lines


def test_a_removed_sources_history_leaves_the_metrics_and_fix_24h_counts_spent_budget(site, daemon_factory,
                                                                                      tmp_path):
    site.page("/stats", listing_v1())
    d = daemon_factory(BUILTIN).start()
    add(d, tmp_path, "a", site.url("/stats"))
    healed_to_v2(d, site, "a")
    st = d.ctl_json("status", "a")
    assert st["fix_attempts_24h"] == 0                       # a promotion spends no budget
    site.page("/stats", listing_v1())
    assert d.ctl("rollback", "a", "--to", "1").returncode == 0
    site.page("/stats", listing_v2())
    assert d.ctl("rollback", "a", "--to", "2").returncode == 0
    stats = d.ctl_json("stats")
    assert (stats["rollbacks"], stats["manual_rollbacks"], stats["fixes_promoted"]) == (0, 2, 1), stats
    out = d.ctl("stats").stdout
    assert "automatic rollbacks: 0; manual rollbacks: 2" in out, out
    assert d.ctl("remove", "a").returncode == 0
    site.page("/stats", listing_v1())
    add(d, tmp_path, "a", site.url("/stats"))
    stats = d.ctl_json("stats")
    assert (stats["rollbacks"], stats["manual_rollbacks"], stats["fix_attempts"], stats["sources"]) == (0, 0, 0, 1)
    assert stats["quarantine_rate"] == 0.0


# -- 2. alerts belong to a source's life -----------------------------------------------------------

def test_a_source_removed_and_added_again_alerts_again(site, daemon_factory, tmp_path):
    site.page("/prices", listing_v1())
    d = daemon_factory(FAST_CONFIG.replace("[doctor]", "[doctor]\nenabled = false")).start()

    def degraded_alerts():
        return [a for a in d.alerts() if a["source"] == "prices" and a["event"] == "DEGRADED"]

    add(d, tmp_path, "prices", site.url("/prices"), LISTING_BP)
    site.page("/prices", listing_no_score())
    d.wait_for(lambda: len(degraded_alerts()) == 1, what="the first DEGRADED alert")
    assert d.ctl("remove", "prices").returncode == 0
    site.page("/prices", listing_v1())
    add(d, tmp_path, "prices", site.url("/prices"), LISTING_BP)
    site.page("/prices", listing_no_score())
    d.wait_for(lambda: len(degraded_alerts()) == 2, timeout=15, what="a DEGRADED alert for the new source")


# -- 3. a manual rollback is a person's act --------------------------------------------------------

def test_a_rollback_to_a_version_that_fails_the_page_is_refused_unless_forced(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    d = daemon_factory(BUILTIN).start()
    add(d, tmp_path, "rb", site.url("/stats"))
    healed_to_v2(d, site, "rb")
    attempts = len(fixes(d, "rb"))

    refused = d.ctl("rollback", "rb", "--to", "1")
    assert refused.returncode == 1 and refused.stdout == "", refused.stdout
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "version 1 fails the current page (PARSE_ERROR" in refused.stderr
    assert "version 2 stays in production" in refused.stderr and "--force" in refused.stderr
    assert d.ctl_json("status", "rb")["version"] == 2

    forced = d.ctl("rollback", "rb", "--to", "1", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "rb: version 1 is in production (was 2)" in forced.stdout
    assert "forced: it fails the current page" in forced.stdout
    d.wait_for(lambda: d.state_of("rb") == "DEGRADED", what="the forced version's failing scrape")
    d.ctl("run", "rb")
    degraded = d.wait_for(lambda: [a for a in d.alerts() if a["source"] == "rb" and a["event"] == "DEGRADED"
                                   and a["details"].get("forced_rollback")], what="the rollback's DEGRADED alert")
    assert "rolled back to by a person with --force" in degraded[0]["message"]
    # No fix attempt was spent on the person's choice, and no healer was said to have failed.
    assert len(fixes(d, "rb")) == attempts
    assert d.ctl_json("status", "rb")["fix_attempts_24h"] == 0
    assert not [a for a in d.alerts() if a["source"] == "rb" and a["event"] == "HEAL_FAILED"]
    shown = d.ctl("status", "rb").stdout
    assert "--force" in shown and "healerctl rollback rb --to VERSION" in shown, shown
    stats = d.ctl_json("stats")
    assert (stats["rollbacks"], stats["manual_rollbacks"]) == (0, 1)
    # Back to the version that reads the page: the person's rollback passes and the source recovers.
    back = d.ctl("rollback", "rb", "--to", "2")
    assert back.returncode == 0 and "version 2 is in production (was 1)" in back.stdout, back.stderr
    d.wait_for(lambda: d.state_of("rb") == "ACTIVE", what="the source back to ACTIVE")
    hist = [h for h in d.ctl_json("history", "rb") if h.get("event") == "rollback"]
    assert [(h["by"], h["version"]) for h in hist] == [("person", 2), ("person", 1)], hist


# -- 5. `add` says how it went ---------------------------------------------------------------------

def _dead_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_add_scrapes_once_and_says_whether_the_source_works(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    d = daemon_factory().start()
    ok = d.ctl("add", "good", "--blueprint", write_blueprint(tmp_path / "good.json", site.url("/stats")))
    assert ok.returncode == 0 and "added good:" in ok.stdout and "good: ok, 5 record(s), 5 item(s)" in ok.stdout
    cases = {
        "missing": (site.url("/nothing-here"), "HTTP_ERROR"),
        "refused": (f"http://127.0.0.1:{_dead_port()}/stats", "NETWORK"),
        "nohost": ("http://no-such-host.invalid/stats", "NETWORK"),
        "noitems": (site.url("/stats"), "PARSE_ERROR"),
    }
    for name, (url, etype) in cases.items():
        bp = dict(LISTING_BP, items="ul.nothing li") if name == "noitems" else LISTING_BP
        r = d.ctl("add", name, "--blueprint", write_blueprint(tmp_path / f"{name}.json", url, bp))
        assert r.returncode == 1, (name, r.stdout, r.stderr)
        assert f"added {name}:" in r.stdout and f"{name}: failed, {etype}" in r.stdout, (name, r.stdout)
        assert "the first scrape of" in r.stderr and "the source stays added" in r.stderr, r.stderr
        assert d.ctl_json("status", name)["name"] == name          # it is registered all the same
    j = d.ctl("add", "j", "--blueprint", write_blueprint(tmp_path / "j.json", site.url("/nothing")), "--json")
    assert j.returncode == 1 and '"scrape"' in j.stdout and '"ok": false' in j.stdout, j.stdout
    quiet = d.ctl("add", "later", "--blueprint", write_blueprint(tmp_path / "later.json", site.url("/nothing")),
                  "--no-wait")
    assert quiet.returncode == 0 and "next run" in quiet.stdout and "failed" not in quiet.stdout, quiet.stdout


# -- smaller points ------------------------------------------------------------------------------

def test_a_healer_answering_the_same_blueprint_again_is_not_staged_or_called_again(site, daemon_factory, tmp_path):
    wrong = dict(LISTING_BP, items="table.league-table tr.row-player",
                 fields={"name": {"css": "td.nope"}, "score": {"css": "td.pts", "type": "int"}})
    healer = HealerServer(lambda req: healed(wrong, "the same answer"))
    try:
        cfg = FAST_CONFIG.replace("[doctor]\nmax_fix_attempts = 3", '[doctor]\nladder = ["external"]\nmax_fix_attempts = 1')
        cfg += f'[healer]\nurl = "{healer.url}"\ntimeouts = [5, 5, 5, 5, 5]\ncycles = 5\n'
        site.page("/stats", listing_v1())
        d = daemon_factory(cfg).start()
        add(d, tmp_path, "ext", site.url("/stats"))
        site.page("/stats", listing_v2())
        d.ctl("run", "ext")
        d.wait_for(lambda: d.state_of("ext") == "QUARANTINED", timeout=60, what="the one attempt")
        calls = db_rows(d, "SELECT cycle FROM healer_calls WHERE source_name = 'ext' ORDER BY id")
        assert [c["cycle"] for c in calls] == [1, 2], calls        # the repeat ends the cycles
        staged = db_rows(d, "SELECT version, status FROM parser_versions WHERE source_name = 'ext' AND version > 1")
        assert staged == [{"version": 2, "status": "rejected"}], staged
        fix = fixes(d, "ext")[0]
        assert "the same candidate as a rejected one" in fix["reason"] and fix["strategy"] == "external"
    finally:
        healer.stop()


def test_a_relocation_shows_as_one_in_history(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    d = daemon_factory().start()
    add(d, tmp_path, "moved", site.url("/stats"))
    site.remove("/stats")
    site.page("/league/stats", listing_v1())
    site.page("/", '<html><body><a href="/league/stats">stats</a></body></html>')
    assert d.ctl_json("run", "moved")["error_type"] == "HTTP_ERROR"
    d.wait_for(lambda: (s := d.ctl_json("status", "moved"))["version"] == 2 and s["state"] == "ACTIVE", timeout=60,
               what="the page followed to its new address")
    assert d.ctl_json("status", "moved")["url"] == site.url("/league/stats")
    v2 = [h for h in d.ctl_json("history", "moved") if h["kind"] == "version" and h["version"] == 2 and "event" not in h]
    assert v2[0]["origin"] == "relocate", v2
    assert re.search(r"v2 \(relocate\)", d.ctl("history", "moved").stdout)
