"""Prices kept only in a data attribute behind a login wall, found again by the real daemon's built-in healer."""

from __future__ import annotations

from tests.support.daemon import db_rows
from tests.support.sitepages import write_blueprint

BP = {"every": "1s", "items": "ul.products li.item",
      "fields": {"name": {"css": "a.name", "type": "str"}, "price": {"css": "span.price", "type": "float"}}}
PRODUCTS = [("Blue Kettle", "14.99"), ("Red Toaster", "39.50"), ("Steel Pan", "22.75"), ("Oak Board", "18.20")]


def _shop(price) -> str:
    return ("<html><head><title>Shop</title></head><body><main><ul class='products'>" + "".join(
        f"<li class='item'><a class='name' href='/p/{k}'>{name}</a> {price(value)}</li>"
        for k, (name, value) in enumerate(PRODUCTS)) + "</ul></main></body></html>")


OLD = _shop(lambda v: f"<span class='price'>{v}</span>")
NEW = _shop(lambda v: f"<span class='price' data-value='{v}'>Sign in to view</span>")


def test_prices_moved_into_a_data_attribute_are_promoted_read_from_it(site, daemon_factory, tmp_path):
    site.page("/shop", OLD)
    d = daemon_factory().start()
    r = d.ctl("add", "shop", "--blueprint", write_blueprint(tmp_path / "shop.json", site.url("/shop"), BP))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "shop")["ok"] is True
    site.page("/shop", NEW)
    fix = d.wait_for(lambda: next(iter(db_rows(d, "SELECT outcome, reason FROM fix_history WHERE source_name = 'shop' "
                                                  "AND strategy = 'builtin' ORDER BY fix_id LIMIT 1")), None),
                     what="the built-in fix attempt")
    assert fix["outcome"] == "promoted", fix
    d.wait_for(lambda: any(rec["version"] == 2 for rec in d.ctl_json("records", "shop")),
               what="records from the repaired parser")
    got = next(rec["data"] for rec in d.ctl_json("records", "shop") if rec["version"] == 2)
    assert got == [{"name": n, "price": float(v)} for n, v in PRODUCTS]
