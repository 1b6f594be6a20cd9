"""A positional column removed, end to end: the refusal is data gone, and the advice the report
gives was tried on the live page — the field after the removed one, which moved into its place,
is placed again — so doing what it says works at once."""

from __future__ import annotations

from tests.support.daemon import FAST_CONFIG
from tests.support.decoypages import PLIST_BP, SIX, plist, plist_without_price
from tests.support.sitepages import write_blueprint

BUILTIN = FAST_CONFIG.replace("[doctor]", '[doctor]\nladder = ["builtin"]')


def test_the_advice_for_a_removed_positional_column_works_on_the_live_page(site, daemon_factory, tmp_path):
    d = daemon_factory(BUILTIN).start()
    site.page("/plist", plist())
    r = d.ctl("add", "plist", "--blueprint", write_blueprint(tmp_path / "plist.json", site.url("/plist"), PLIST_BP))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "plist")["ok"] is True
    site.page("/plist", plist_without_price())

    def quarantined():
        d.ctl("run", "plist")
        return d.state_of("plist") == "QUARANTINED"

    d.wait_for(quarantined, timeout=120, what="the refusals to quarantine the source")
    fixes = [h for h in d.ctl_json("history", "plist") if h["kind"] == "fix"]
    assert fixes and all(f.get("data_gone") is True for f in fixes), fixes
    report = d.ctl_json("status", "plist")["deferred_report"]
    assert report["data_gone"] == ["price"], report
    assert any("price deleted" in o for o in report["options"]), report["options"]
    toml = tmp_path / "plist.toml"
    toml.write_text(report["blueprint_toml"])
    r = d.ctl("update", "plist", "--blueprint", str(toml))
    assert r.returncode == 0 and "plist: ok, 6 record(s)" in r.stdout, r.stdout + r.stderr
    assert d.ctl_json("records", "plist")[0]["data"] == [{"name": n, "brand": b, "sku": s} for n, b, _p, s in SIX]
    assert d.state_of("plist") == "ACTIVE"
