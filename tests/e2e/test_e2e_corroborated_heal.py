"""A built-in repair whose values changed with the layout, corroborated, promoted by the real daemon."""

from __future__ import annotations

from tests.support.daemon import db_rows
from tests.support.sitepages import write_blueprint

BP = {"every": "1s", "fields": {"price": {"css": "div.row input#id_price", "attr": "value", "type": "float"},
                                "stock": {"css": "input#id_stock", "attr": "value", "type": "int"}}}


def _form(rows: str) -> str:
    return f"<html><head><title>Product</title></head><body><h1>Chef Knife</h1><form>{rows}</form></body></html>"


OLD = _form('<div class="row"><label for="id_price">Price:</label><div><input id="id_price" value="59.00"></div></div>'
            '<div class="row"><label for="id_stock">Stock:</label><div><input id="id_stock" value="12"></div></div>')
# restyled, the price changed: found by its label, in its old place beside the stock found again
NEW = _form('<fieldset><p class="f"><label for="fld-price">Price:</label><input id="fld-price" class="inp" '
            'value="61.50"></p><p class="f"><label for="fld-stock">Stock:</label><input id="fld-stock" class="inp" '
            'value="12"></p></fieldset>')


def test_a_changed_value_corroborated_by_its_place_is_promoted_not_staged(site, daemon_factory, tmp_path):
    site.page("/knife", OLD)
    d = daemon_factory().start()
    r = d.ctl("add", "knife", "--blueprint", write_blueprint(tmp_path / "knife.json", site.url("/knife"), BP))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "knife")["ok"] is True
    site.page("/knife", NEW)
    fix = d.wait_for(lambda: next(iter(db_rows(d, "SELECT outcome, reason FROM fix_history WHERE source_name = 'knife' "
                                                  "AND strategy = 'builtin' ORDER BY fix_id LIMIT 1")), None),
                     what="the built-in fix attempt")
    assert fix["outcome"] == "promoted", fix
    versions = db_rows(d, "SELECT version, status, origin, note FROM parser_versions WHERE source_name = 'knife' "
                          "ORDER BY version")
    assert [(v["status"], v["origin"]) for v in versions][1:] == [("production", "builtin")], versions
    assert "price corroborated" in versions[1]["note"]
    d.wait_for(lambda: d.ctl_json("records", "knife")[0]["version"] == 2, what="a record from the repaired parser")
    assert d.ctl_json("records", "knife")[0]["data"] == {"price": 61.5, "stock": 12}
