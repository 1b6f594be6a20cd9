"""Reordered fields under positional selectors, end to end: every tag stays where it was, only the
headings move. A real daemon scraping a real local site must refuse the scrape as drift and never
store the neighbouring field's values; a value change on the same page still stores."""

from __future__ import annotations

from tests.support.daemon import FAST_CONFIG
from tests.support.driftpages import PLAYERS, POSITIONAL_BP, SPECS_BP, league, league_swapped, specs
from tests.support.sitepages import write_blueprint

TRUE_SPECS = {"brand": "Northpeak", "model": "Trail Kettle", "weight": "1.2 kg"}


def test_reordered_fields_are_drift_and_never_stored(site, daemon_factory, tmp_path):
    d = daemon_factory(FAST_CONFIG).start()
    for name, bp, page in (("specs", SPECS_BP, specs()), ("league", POSITIONAL_BP, league())):
        site.page(f"/{name}", page)
        r = d.ctl("add", name, "--blueprint", write_blueprint(tmp_path / f"{name}.json", site.url(f"/{name}"), bp))
        assert r.returncode == 0, r.stderr
        assert d.ctl_json("run", name)["ok"] is True
    site.page("/specs", specs(order=("Model", "Brand", "Weight")))
    site.page("/league", league_swapped())
    for name in ("specs", "league"):
        out = d.ctl_json("run", name)
        assert out["ok"] is False, (name, out)
        assert out["error_type"] == "SCHEMA_MISMATCH", (name, out)
        assert out["error"].startswith("drift: "), (name, out)
    assert all(rec["data"] == TRUE_SPECS for rec in d.ctl_json("records", "specs"))
    truth = {(n, s, g) for n, _t, s, g, _r in PLAYERS}
    rows = {(r["name"], r["score"], r["games"]) for rec in d.ctl_json("records", "league") for r in rec["data"]}
    assert rows <= truth, rows


def test_a_value_change_on_a_positional_page_still_stores(site, daemon_factory, tmp_path):
    d = daemon_factory(FAST_CONFIG).start()
    site.page("/specs", specs())
    r = d.ctl("add", "specs", "--blueprint", write_blueprint(tmp_path / "specs.json", site.url("/specs"), SPECS_BP))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "specs")["ok"] is True
    site.page("/specs", specs(weight="1.4 kg"))
    assert d.ctl_json("run", "specs")["ok"] is True
    assert d.ctl_json("records", "specs")[0]["data"] == dict(TRUE_SPECS, weight="1.4 kg")
    assert "drifted" not in d.log()
