"""Drift that validation passes, end to end: a real daemon scraping a real local site whose pages
change into each silent-wrong-data shape. No wrong record is stored, the scrape says why, and a
redesign whose values also changed still stores."""

from __future__ import annotations

import json

from tests.support.daemon import FAST_CONFIG
from tests.support.driftpages import PLAYERS, POSITIONAL_BP, PRODUCT_BP, TABLE_BP, league, product, table
from tests.support.sitepages import write_blueprint

# Only `healerctl run` scrapes (the blueprints say every 1h); the Doctor still heals what fails.
CASES = {
    # name: (blueprint, last good page, changed page, values that must never be stored)
    "promoted": (TABLE_BP, table(), table(promoted=("Zed", 99)), ["Zed", 99]),
    "positional": (POSITIONAL_BP, league(), league(drop_team=True), []),
    "decoy": (PRODUCT_BP, product(), product(decoy_before=True), ["Camp Mug", 9.0, 40]),
    "recommended": (PRODUCT_BP, product(), product(stock_removed=True), [40]),
}


def stored_values(d, name) -> list:
    out = []
    for rec in d.ctl_json("records", name):
        rows = rec["data"] if isinstance(rec["data"], list) else [rec["data"]]
        out += [v for r in rows for v in r.values()]
    return out


def positional_rows(d, name) -> list[tuple]:
    return [(r["name"], r["score"], r["games"]) for rec in d.ctl_json("records", name) for r in rec["data"]]


def test_silent_wrong_data_is_a_breakage_and_never_stored(site, daemon_factory, tmp_path):
    d = daemon_factory(FAST_CONFIG).start()
    for name, (bp, before, _after, _wrong) in CASES.items():
        site.page(f"/{name}", before)
        r = d.ctl("add", name, "--blueprint", write_blueprint(tmp_path / f"{name}.json", site.url(f"/{name}"), bp))
        assert r.returncode == 0, r.stderr
        assert d.ctl_json("run", name)["ok"] is True
    for name, (_bp, _before, after, _wrong) in CASES.items():
        site.page(f"/{name}", after)
        out = d.ctl_json("run", name)
        assert out["ok"] is False, (name, out)
        assert out["error_type"] == "SCHEMA_MISMATCH", (name, out)
        assert out["error"].startswith("drift: "), (name, out)
    log = d.log()
    assert "the scrape passed validation but drifted" in log
    why = {name: d.ctl_json("run", name) for name in CASES}   # again, while the Doctor works on them
    for name, (_bp, _before, _after, wrong) in CASES.items():
        values = stored_values(d, name)
        assert not any(w in values for w in wrong), (name, values, why[name])
    # Positional selectors: every stored row is a true (name, score, games) row of the table.
    truth = {(n, s, g) for n, _t, s, g, _r in PLAYERS}
    assert set(positional_rows(d, "positional")) <= truth, positional_rows(d, "positional")
    # The Doctor saw a breakage to heal, never "nothing to heal" on a page that drifted.
    d.wait_for(lambda: all(any(h["kind"] == "fix" for h in d.ctl_json("history", n)) for n in CASES),
               timeout=60, what="a fix attempt per source")
    for name in CASES:
        fixes = [h for h in d.ctl_json("history", name) if h["kind"] == "fix"]
        assert all(f["outcome"] != "unchanged" for f in fixes), (name, fixes)
        assert not any(w in stored_values(d, name) for w in CASES[name][3]), name
    assert set(positional_rows(d, "positional")) <= truth


def test_a_redesign_whose_values_changed_still_stores(site, daemon_factory, tmp_path):
    d = daemon_factory(FAST_CONFIG).start()
    site.page("/board", table())
    site.page("/kettle", product())
    for name, bp, path in (("board", TABLE_BP, "/board"), ("kettle", PRODUCT_BP, "/kettle")):
        r = d.ctl("add", name, "--blueprint", write_blueprint(tmp_path / f"{name}.json", site.url(path), bp))
        assert r.returncode == 0, r.stderr
        assert d.ctl_json("run", name)["ok"] is True
    moved = [(n, t, s + 3, g, r) for n, t, s, g, r in PLAYERS] + [("Barbara", "Lynx", 18, 7, 6)]
    site.page("/board", table(moved, wrap=True, teams=True))
    site.page("/kettle", product(price="$26.50", redesign=True))
    for name in ("board", "kettle"):
        out = d.ctl_json("run", name)
        assert out["ok"] is True, (name, out)
    assert d.ctl_json("records", "board")[0]["data"][0] == {"name": "Ada", "score": 34}
    assert len(d.ctl_json("records", "board")[0]["data"]) == 6
    assert d.ctl_json("records", "kettle")[0]["data"] == {"title": "Trail Kettle", "price": 26.5, "stock": 12}
    assert "drifted" not in d.log()
    print(json.dumps(d.ctl_json("status", "board"))[:200])
