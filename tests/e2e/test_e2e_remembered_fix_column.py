"""A fix remembered from one source, applied to another whose page changed another way, end to end.

Two price lists read by position. The first loses its Category column: the scrape fails, the
Doctor heals it (price is now the third cell) and the fix memory keeps the fix. The second then
loses its Brand column: the same failure, and the remembered fix passes every shape check
on its page, but its brand would read the categories. A real daemon must not promote it: the
second source never stores a category as a brand."""

from __future__ import annotations

from tests.support.daemon import FAST_CONFIG
from tests.support.driftpages import GEAR, PRICES_BP, pricelist
from tests.support.sitepages import write_blueprint

CATEGORIES = {g[2] for g in GEAR}


def brands(d, name) -> set:
    return {r["brand"] for rec in d.ctl_json("records", name) for r in rec["data"]}


def test_a_remembered_fix_never_stores_another_column(site, daemon_factory, tmp_path):
    d = daemon_factory(FAST_CONFIG).start()
    for name in ("first", "second"):
        site.page(f"/{name}", pricelist())
        r = d.ctl("add", name, "--blueprint", write_blueprint(tmp_path / f"{name}.json", site.url(f"/{name}"),
                                                              PRICES_BP))
        assert r.returncode == 0, r.stderr
        assert d.ctl_json("run", name)["ok"] is True
    site.page("/first", pricelist(drop="Category"))
    out = d.ctl_json("run", "first")
    assert out["ok"] is False, out   # price's fourth cell is gone
    d.wait_for(lambda: any(h["kind"] == "fix" and h["outcome"] == "promoted" for h in d.ctl_json("history", "first")),
               timeout=60, what="the first source's fix promoted")
    assert d.ctl_json("run", "first")["ok"] is True
    assert brands(d, "first") == {g[1] for g in GEAR}

    site.page("/second", pricelist(drop="Brand"))
    d.ctl_json("run", "second")
    d.wait_for(lambda: any(h["kind"] == "fix" and h["strategy"] == "memory" for h in d.ctl_json("history", "second")),
               timeout=60, what="the remembered fix tried on the second source")
    d.ctl_json("run", "second")
    assert not brands(d, "second") & CATEGORIES, brands(d, "second")
    promoted = [h for h in d.ctl_json("history", "second") if h["kind"] == "fix" and h["outcome"] == "promoted"]
    assert not promoted, promoted
