"""Columns reordered under positional selectors, through a real daemon: the cells keep their
shape, so the structure the selectors land on does not move and validation passes (two whole
numbers swapped are still whole numbers). The Validator still sees a field giving another
field's last good values: the scrape is a breakage, no swapped record is stored, and the
Doctor, seeing the same drift on its own fetch, heals the source instead of finding "nothing
to heal"."""

from __future__ import annotations

from tests.support.daemon import FAST_CONFIG
from tests.support.sitepages import write_blueprint

ROWS = [("Ada", 31, 12), ("Grace", 27, 11), ("Linus", 24, 10), ("Margaret", 22, 9), ("Ken", 19, 8)]
BP = {"every": "1h", "items": "table.league tbody tr",
      "fields": {"name": {"css": "td:nth-child(1)"}, "score": {"css": "td:nth-child(2)", "type": "int"},
                 "games": {"css": "td:nth-child(3)", "type": "int"}}}


def league(swapped: bool = False) -> str:
    head = "<th>Name</th>" + ("<th>Games</th><th>Score</th>" if swapped else "<th>Score</th><th>Games</th>")
    body = "".join(f"<tr><td>{n}</td>" + (f"<td>{g}</td><td>{s}</td>" if swapped else f"<td>{s}</td><td>{g}</td>")
                   + "</tr>" for n, s, g in ROWS)
    return (f'<html><head><title>League</title></head><body><table class="league"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></body></html>")


def test_swapped_columns_store_nothing_wrong_and_are_healed(site, daemon_factory, tmp_path):
    d = daemon_factory(FAST_CONFIG).start()
    site.page("/league", league())
    r = d.ctl("add", "league", "--blueprint", write_blueprint(tmp_path / "league.json", site.url("/league"), BP))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "league")["ok"] is True
    truth = [{"name": n, "score": s, "games": g} for n, s, g in ROWS]
    assert d.ctl_json("records", "league")[0]["data"] == truth

    site.page("/league", league(swapped=True))
    out = d.ctl_json("run", "league")
    assert out["ok"] is False, out
    assert out["error_type"] == "SCHEMA_MISMATCH", out
    assert "holds what" in out["error"], out
    # The Doctor heals it: a promoted fix, never "unchanged" on a page that drifted.
    d.wait_for(lambda: any(h["kind"] == "fix" and h["outcome"] == "promoted" for h in d.ctl_json("history", "league")),
               timeout=60, what="a promoted fix")
    assert d.ctl_json("run", "league")["ok"] is True
    for rec in d.ctl_json("records", "league"):
        assert rec["data"] == truth, rec
