"""A decoy that comes and goes, end to end: a "Sponsored" row appears on top of a class-less
product table and is removed again. Every scrape the real daemon stores is the six products:
a selector that leaves out records the page still shows is drift, never a smaller listing."""

from __future__ import annotations

import json

from tests.support.daemon import FAST_CONFIG, db_rows
from tests.support.decoypages import PLIST_BP, SIX, plist
from tests.support.sitepages import write_blueprint

BUILTIN = FAST_CONFIG.replace("[doctor]", '[doctor]\nladder = ["builtin"]')
TRUTH = [{"name": n, "brand": b, "price": float(p), "sku": s} for n, b, p, s in SIX]


def stored(d) -> list:
    return [rec["data"] for rec in d.ctl_json("records", "plist", "--limit", "100")]


def test_every_stored_scrape_is_the_six_products(site, daemon_factory, tmp_path):
    d = daemon_factory(BUILTIN).start()
    site.page("/plist", plist())
    r = d.ctl("add", "plist", "--blueprint", write_blueprint(tmp_path / "plist.json", site.url("/plist"), PLIST_BP))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "plist")["ok"] is True
    site.page("/plist", plist(sponsored=True))
    d.ctl_json("run", "plist")
    d.wait_for(lambda: d.ctl_json("status", "plist")["state"] in ("ACTIVE", "QUARANTINED")
               and [h for h in d.ctl_json("history", "plist") if h["kind"] == "fix"], timeout=90,
               what="the sponsored row dealt with")
    assert all(data == TRUTH for data in stored(d)), stored(d)
    # The repair leaves the row out by what tells it apart, not by its position.
    body = json.loads(db_rows(d, "SELECT body FROM parser_versions WHERE source_name = 'plist' "
                                 "AND status = 'production'")[0]["body"])
    assert body["items"] == "tbody > tr:not(.sponsored)", body
    site.page("/plist", plist())   # the sponsored row goes again
    assert d.ctl_json("run", "plist")["ok"] is True   # the six products, with no repair needed
    for _ in range(3):
        d.ctl_json("run", "plist")
        assert all(data == TRUTH for data in stored(d)), stored(d)
    d.wait_for(lambda: d.ctl_json("run", "plist")["ok"] is True, timeout=90, what="the six products stored again")
    assert all(data == TRUTH for data in stored(d)), stored(d)
    assert len(stored(d)) >= 2
    fixes = [h for h in d.ctl_json("history", "plist") if h["kind"] == "fix"]
    assert len(fixes) == 1 and fixes[0]["outcome"] == "promoted", fixes


def test_a_positional_blueprint_that_outlived_its_decoy_never_stores_a_short_listing(site, daemon_factory, tmp_path):
    d = daemon_factory(BUILTIN).start()
    site.page("/plist", plist(sponsored=True))
    skip_first = dict(PLIST_BP, items="#plist tbody tr:nth-child(n+2)")
    r = d.ctl("add", "plist", "--blueprint", write_blueprint(tmp_path / "plist.json", site.url("/plist"), skip_first))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "plist")["ok"] is True
    site.page("/plist", plist())   # the sponsored row goes: the first product is left out by position
    out = d.ctl_json("run", "plist")
    assert out["ok"] is False and out["error_type"] == "SCHEMA_MISMATCH", out
    assert "leaves out 1 record(s)" in out["error"] and "Trail Kettle" in out["error"], out
    assert all(data == TRUTH for data in stored(d)), stored(d)
    d.wait_for(lambda: d.ctl_json("run", "plist")["ok"] is True, timeout=90, what="the listing healed")
    assert all(data == TRUTH for data in stored(d)), stored(d)


def test_an_external_repair_excluding_the_decoy_by_position_waits_for_a_person(site, daemon_factory, tmp_path):
    from tests.support.external_heal import fix_rows, healer_config, production_versions
    from tests.support.healer_server import HealerServer, healed

    answer = dict(PLIST_BP, items="#plist tbody tr:nth-child(n+2)")
    healer = HealerServer(lambda req: healed(answer, "skip the sponsored first row"))
    try:
        d = daemon_factory(healer_config(healer.url)).start()
        site.page("/plist", plist())
        r = d.ctl("add", "plist", "--blueprint", write_blueprint(tmp_path / "plist.json", site.url("/plist"),
                                                                   PLIST_BP))
        assert r.returncode == 0, r.stderr
        assert d.ctl_json("run", "plist")["ok"] is True
        site.page("/plist", plist(sponsored=True))
        assert d.ctl_json("run", "plist")["ok"] is False
        d.wait_for(lambda: fix_rows(d, "plist"), timeout=60, what="the external fix attempt")
        fix = fix_rows(d, "plist")[0]
        assert fix["outcome"] == "staged" and "by position" in fix["reason"], fix
        assert "#plist tbody tr:not(.sponsored)" in fix["reason"], fix
        assert production_versions(d, "plist") == [1]
        assert all(data == TRUTH for data in stored(d)), stored(d)
    finally:
        healer.stop()
