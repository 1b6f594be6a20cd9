"""Fixes in production, end to end: probation verdicts, rollback before healing, and a site
serving two layouts at once — the real daemon, a real local site, the real healerctl."""

from __future__ import annotations

import re
import threading

from tests.support.daemon import FAST_CONFIG, db_rows
from tests.support.sitepages import LISTING_BP, ROWS, listing_v1, listing_v2, write_blueprint

EXPECTED = [{"name": n, "score": s} for n, s in ROWS]


def listing_v3(rows=ROWS) -> str:
    """A third redesign that neither earlier parser reads: every class renamed again."""
    body = "".join(f'<tr class="entry"><td class="who">{n}</td><td class="total">{s}</td></tr>' for n, s in rows)
    return (f'<html><head><title>Stats</title></head><body><nav><a href="/">home</a></nav><main>'
            f'<table class="board"><tr><th>Name</th><th>Score</th></tr>{body}</table></main></body></html>')


def alternate(site, path: str, first: str, second: str, script: str = "") -> list[str]:
    """`path` serves the layouts named in `script` ("A": `first`, "B": `second`), then `second`,
    `first`, `second` ... on every request; returns the list of layouts served, in order."""
    served: list[str] = []
    lock = threading.Lock()

    def body() -> bytes:
        with lock:
            n = len(served)
            name = script[n] if n < len(script) else ("B" if (n - len(script)) % 2 == 0 else "A")
            served.append(name)
        return (second if name == "B" else first).encode()

    with site.lock:
        site.pages[path] = (200, {"Content-Type": "text/html; charset=utf-8"}, body)
    return served


def add(d, tmp_path, name, url, bp=LISTING_BP):
    r = d.ctl("add", name, "--blueprint", write_blueprint(tmp_path / f"{name}.json", url, bp))
    assert r.returncode == 0, r.stderr


def version_count(d, name) -> int:
    return len([h for h in d.ctl_json("history", name) if h["kind"] == "version" and not h.get("event")])


def fix_rows(d, name) -> list[dict]:
    return db_rows(d, "SELECT fix_id, strategy, outcome, version, production_verdict FROM fix_history "
                      "WHERE source_name = ? ORDER BY fix_id", (name,))


def test_a_site_serving_two_layouts_gets_one_parser_for_both(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    d = daemon_factory().start()
    add(d, tmp_path, "ab", site.url("/stats"))
    assert d.ctl_json("run", "ab")["ok"] is True
    served = alternate(site, "/stats", listing_v1(), listing_v2())

    def merged():
        s = d.ctl_json("status", "ab")
        css = s["blueprint"]["fields"]["name"]["css"]
        return s["state"] == "ACTIVE" and isinstance(css, list) and s

    st = d.wait_for(merged, timeout=90, what="one parser for both layouts")
    before = version_count(d, "ab")
    # From here on every scrape passes, whichever layout it gets, and no version is added.
    outcomes = [d.ctl_json("run", "ab") for _ in range(6)]
    assert all(o["ok"] for o in outcomes), outcomes
    assert {o["version"] for o in outcomes} == {st["version"]}
    assert {"A", "B"} <= set(served[-6:])
    recs = d.ctl_json("records", "ab", "--limit", str(6 * len(EXPECTED)))
    assert all(r["data"] == EXPECTED for r in recs), recs
    assert version_count(d, "ab") == before
    assert d.ctl_json("status", "ab")["state"] == "ACTIVE"
    # At most two heals got it there (a merge is one of them).
    fixes = fix_rows(d, "ab")
    assert 1 <= len(fixes) <= 2, fixes
    assert fixes[-1]["outcome"] == "promoted" and fixes[-1]["version"] == st["version"]
    # What it went through shows in stats: every promoted fix that failed in production.
    fps = [f for f in fixes if f["production_verdict"] == "false_positive"]
    stats = d.ctl_json("stats")
    assert stats["false_positives"] == len(fps)
    judged = [f for f in fixes if f["production_verdict"] in ("passed", "false_positive", "site_changed")]
    assert stats["false_positive_rate"] == (round(len(fps) / len(judged), 4) if judged else None)
    assert stats["window_s"] == 7 * 86400
    hist = d.ctl_json("history", "ab")
    if any(h.get("event") == "rollback" for h in hist):
        # A rollback undoes a fix that failed in production; here the site served the other layout,
        # so it failed on a layout it was not proved on: `site_changed`, not a false positive.
        assert [f for f in fixes if f["production_verdict"] in ("false_positive", "site_changed")], fixes
    for f in fps:
        entry = next(h for h in hist if h["kind"] == "fix" and h.get("version") == f["version"])
        assert entry["false_positive"] is True and entry["production"] == "false_positive"


def test_a_fix_failing_on_the_next_scrape_is_rolled_back_without_an_attempt(site, daemon_factory, tmp_path):
    cfg = FAST_CONFIG.replace("[doctor]", '[doctor]\nladder = ["builtin"]')
    site.page("/stats", listing_v1())
    d = daemon_factory(cfg).start()
    add(d, tmp_path, "rb", site.url("/stats"), dict(LISTING_BP, every="1h"))
    assert d.ctl_json("run", "rb")["ok"] is True
    site.page("/stats", listing_v2())
    assert d.ctl_json("run", "rb")["ok"] is False
    d.wait_for(lambda: d.ctl_json("status", "rb")["version"] == 2, timeout=60, what="the fix promoted as v2")
    d.wait_for(lambda: d.ctl_json("status", "rb")["state"] == "ACTIVE", timeout=60, what="ACTIVE on v2")
    attempts = len(fix_rows(d, "rb"))
    # The site goes back to its old layout: v2 fails on it, v1 passes -> v1 comes back at once.
    site.page("/stats", listing_v1())
    out = d.ctl_json("run", "rb")
    assert out["ok"] is True and out["version"] == 1 and out["state"] == "ACTIVE", out
    assert d.ctl_json("records", "rb", "--limit", str(len(EXPECTED)))[0]["data"] == EXPECTED
    fixes = fix_rows(d, "rb")
    assert len(fixes) == attempts, fixes                         # no attempt spent
    # v2 read the layout it was proved on; the site went back to another one: not v2's fault.
    assert fixes[-1]["version"] == 2 and fixes[-1]["production_verdict"] == "site_changed"
    st = d.ctl_json("status", "rb")
    assert st["version"] == 1 and st["fix_attempts_24h"] == len([f for f in fixes if f["outcome"] in ("rejected", "error")])
    rb = [e for e in st["events"] if e["trigger"] == "rollback"]
    assert len(rb) == 1 and "from version 2 to 1" in rb[0]["reason"]
    hist = d.ctl_json("history", "rb")
    assert any(h.get("event") == "rollback" and h["version"] == 1 for h in hist), hist
    versions = db_rows(d, "SELECT version, origin, status FROM parser_versions WHERE source_name = 'rb' ORDER BY version")
    assert versions == [{"version": 1, "origin": "human", "status": "production"},
                        {"version": 2, "origin": "builtin", "status": "archived"}]
    healed = d.wait_for(lambda: [a for a in d.alerts() if a["event"] == "HEALED" and a["details"].get("rollback")],
                        what="the rollback alert")
    assert len(healed) == 1 and healed[0]["source"] == "rb"
    after = d.alerts()[d.alerts().index(healed[0]):]
    assert not [a for a in after if a["event"] == "DEGRADED"], after    # the source never went DEGRADED for it
    assert d.ctl_json("stats")["rollbacks"] == 1


def test_a_fix_failing_where_the_previous_fails_too_is_healed_and_counted(site, daemon_factory, tmp_path):
    cfg = FAST_CONFIG.replace("[doctor]", '[doctor]\nladder = ["builtin"]')
    site.page("/stats", listing_v1())
    d = daemon_factory(cfg).start()
    add(d, tmp_path, "fp", site.url("/stats"), dict(LISTING_BP, every="1h"))
    assert d.ctl_json("run", "fp")["ok"] is True
    site.page("/stats", listing_v2())
    assert d.ctl_json("run", "fp")["ok"] is False
    d.wait_for(lambda: (s := d.ctl_json("status", "fp"))["version"] == 2 and s["state"] == "ACTIVE", timeout=60,
               what="the fix promoted as v2")
    # A third layout: neither v2 nor v1 reads it -> ordinary healing; v2 read its own layout until
    # the site changed again, so it is not a false positive.
    site.page("/stats", listing_v3())
    assert d.ctl_json("run", "fp")["ok"] is False
    d.wait_for(lambda: (s := d.ctl_json("status", "fp"))["version"] == 3 and s["state"] == "ACTIVE", timeout=60,
               what="the third layout healed as v3")
    fixes = fix_rows(d, "fp")
    assert [(f["version"], f["outcome"]) for f in fixes] == [(2, "promoted"), (3, "promoted")]
    assert fixes[0]["production_verdict"] == "site_changed"
    assert not [e for e in d.ctl_json("status", "fp")["events"] if e["trigger"] == "rollback"]
    hist = [h for h in d.ctl_json("history", "fp") if h["kind"] == "fix"]
    assert hist[-1]["version"] == 2 and hist[-1]["false_positive"] is False and hist[-1]["production"] == "site_changed"
    stats = d.ctl_json("stats")
    assert stats["false_positives"] == 0 and stats["heals_by_rung"]["builtin"] == 2
    # v3 passes its probation: three good scrapes.
    for _ in range(3):
        assert d.ctl_json("run", "fp")["ok"] is True
    assert fix_rows(d, "fp")[1]["production_verdict"] == "passed"
    stats = d.ctl_json("stats")
    assert stats["false_positive_rate"] == 0.0 and stats["fix_success_rate"] == 1.0
    r = d.ctl("history", "fp")
    assert "false positive" not in r.stdout and "the site changed since" in r.stdout, r.stdout
    r = d.ctl("stats", "--window", "1h")
    assert r.returncode == 0 and "false positive rate" in r.stdout and "< 5.0 %" in r.stdout, r.stdout
    assert re.search(r"false positive rate\s+0\.0 %\s+0/2\s", r.stdout), r.stdout
    assert re.search(r"fix success rate\s+100\.0 %\s+2/2\s", r.stdout), r.stdout
    for bad in ("soon", "0", "-5m"):
        r = d.ctl("stats", "--window", bad)
        assert r.returncode == 2 and "Invalid value for '--window'" in r.stderr, r.stderr


def test_a_heal_whose_live_check_gets_the_other_layout_is_merged_before_promotion(site, daemon_factory, tmp_path):
    """The scrape and the Doctor get layout B, the Deployer's live check gets A: the candidate
    reads B only and production reads A only, so one parser for both is proved on both pages and
    promoted in the candidate's place; nothing fails in production."""
    cfg = FAST_CONFIG.replace("[doctor]", '[doctor]\nladder = ["builtin"]')
    site.page("/stats", listing_v1())
    d = daemon_factory(cfg).start()
    add(d, tmp_path, "dm", site.url("/stats"), dict(LISTING_BP, every="1h"))
    assert d.ctl_json("run", "dm")["ok"] is True
    served = alternate(site, "/stats", listing_v1(), listing_v2(), script="BBA")
    assert d.ctl_json("run", "dm")["ok"] is False
    st = d.wait_for(lambda: (s := d.ctl_json("status", "dm"))["state"] == "ACTIVE" and s, timeout=60,
                    what="ACTIVE again")
    assert served[:3] == ["B", "B", "A"]
    assert st["version"] == 3 and isinstance(st["blueprint"]["fields"]["score"]["css"], list), st
    versions = db_rows(d, "SELECT version, status, note FROM parser_versions WHERE source_name = 'dm' ORDER BY version")
    assert [(v["version"], v["status"]) for v in versions] == [(1, "archived"), (2, "rejected"), (3, "production")]
    assert "merged" in versions[1]["note"]
    fixes = fix_rows(d, "dm")
    assert [(f["outcome"], f["version"]) for f in fixes] == [("promoted", 3)]
    for _ in range(4):
        out = d.ctl_json("run", "dm")
        assert out["ok"] is True and out["version"] == 3, out
    assert fix_rows(d, "dm")[0]["production_verdict"] == "passed"
    assert d.ctl_json("records", "dm", "--limit", str(len(EXPECTED)))[0]["data"] == EXPECTED


def test_the_doctor_heals_the_failing_layout_even_when_its_own_fetch_gets_the_good_one(site, daemon_factory,
                                                                                       tmp_path):
    """Scripted turns, one request each: the scrape gets B (fails), the Doctor's fetch gets A
    (passes), so it heals from the page the scrape kept; the Deployer gets B and promotes v2.
    Then v2 fails on A and v1 comes back (one turn); v1 fails on B where v2 passes: the two took
    turns, so they are merged, and every later scrape passes on either layout."""
    cfg = FAST_CONFIG.replace("[doctor]", '[doctor]\nladder = ["builtin"]')
    site.page("/stats", listing_v1())
    d = daemon_factory(cfg).start()
    add(d, tmp_path, "dl", site.url("/stats"), dict(LISTING_BP, every="1h"))
    assert d.ctl_json("run", "dl")["ok"] is True
    served = alternate(site, "/stats", listing_v1(), listing_v2(), script="BAB")
    assert d.ctl_json("run", "dl")["ok"] is False
    d.wait_for(lambda: (s := d.ctl_json("status", "dl"))["version"] == 2 and s, timeout=60, what="v2 promoted")
    assert served[:3] == ["B", "A", "B"]
    fixes = fix_rows(d, "dl")
    assert [(f["strategy"], f["outcome"], f["version"]) for f in fixes] == [("builtin", "promoted", 2)]
    # From here the site keeps alternating: within two more scrapes the two versions took turns
    # (one rollback) and were merged; then every scrape passes on either layout.
    def merged():
        d.ctl_json("run", "dl")
        s = d.ctl_json("status", "dl")
        return s["state"] == "ACTIVE" and isinstance(s["blueprint"]["fields"]["score"]["css"], list) and s

    st = d.wait_for(merged, timeout=60, what="the merge")
    assert st["version"] == 3
    for _ in range(4):
        again = d.ctl_json("run", "dl")
        assert again["ok"] is True and again["version"] == 3, again
    assert {"A", "B"} <= set(served[-4:])
    assert [e["trigger"] for e in d.ctl_json("status", "dl")["events"] if e["trigger"] in ("rollback", "merge")] \
        == ["merge", "rollback"]
    assert d.ctl_json("records", "dl", "--limit", str(len(EXPECTED)))[0]["data"] == EXPECTED
