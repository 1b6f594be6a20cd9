"""A text field hidden behind a placeholder in every record, end to end: the page keeps its
structure and validation passes ("N/A" is a string), but no name was ever "N/A" on the last good
page. A real daemon must refuse the scrape as drift and store no "N/A"; one record saying "N/A"
among real names is data and still stores."""

from __future__ import annotations

from tests.support.daemon import FAST_CONFIG
from tests.support.driftpages import PLAYERS, TABLE_BP, table
from tests.support.sitepages import write_blueprint


def names(d, source) -> list:
    return [r["name"] for rec in d.ctl_json("records", source) for r in rec["data"]]


def test_a_text_field_hidden_in_every_record_is_never_stored(site, daemon_factory, tmp_path):
    d = daemon_factory(FAST_CONFIG).start()
    site.page("/board", table())
    r = d.ctl("add", "board", "--blueprint", write_blueprint(tmp_path / "board.json", site.url("/board"), TABLE_BP))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "board")["ok"] is True
    site.page("/board", table([("N/A", t, s, g, rk) for _n, t, s, g, rk in PLAYERS]))
    out = d.ctl_json("run", "board")
    assert out["ok"] is False, out
    assert out["error_type"] == "SCHEMA_MISMATCH", out
    assert out["error"].startswith("drift: name shows a placeholder 'N/A' in every record"), out
    assert "N/A" not in names(d, "board")


def test_one_record_saying_n_a_still_stores(site, daemon_factory, tmp_path):
    d = daemon_factory(FAST_CONFIG).start()
    site.page("/board", table())
    r = d.ctl("add", "board", "--blueprint", write_blueprint(tmp_path / "board.json", site.url("/board"), TABLE_BP))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "board")["ok"] is True
    site.page("/board", table([("N/A" if i == 2 else n, t, s, g, rk) for i, (n, t, s, g, rk) in enumerate(PLAYERS)]))
    assert d.ctl_json("run", "board")["ok"] is True
    assert names(d, "board")[:5] == ["Ada", "Grace", "N/A", "Margaret", "Ken"]
