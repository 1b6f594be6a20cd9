"""Cards that lose a field entirely, end to end: the built-in healer's refusal is a data-gone
refusal (counted apart), never a failed fix that lowers the fix success rate."""

from __future__ import annotations

from tests.support.daemon import FAST_CONFIG
from tests.support.sitepages import write_blueprint
from tests.support.wallpages import SHOP_BP, shop

BUILTIN = FAST_CONFIG.replace("[doctor]", '[doctor]\nladder = ["builtin"]')


def test_cards_losing_their_price_are_data_gone_not_a_failed_fix(site, daemon_factory, tmp_path):
    d = daemon_factory(BUILTIN).start()
    site.page("/cards", shop(0))
    r = d.ctl("add", "cards", "--blueprint", write_blueprint(tmp_path / "cards.json", site.url("/cards"), SHOP_BP))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "cards")["ok"] is True
    stored = d.ctl_json("records", "cards", "--limit", "100")
    site.page("/cards", shop(1, prices=False))
    assert d.ctl_json("run", "cards")["ok"] is False
    d.wait_for(lambda: [h for h in d.ctl_json("history", "cards") if h["kind"] == "fix"], timeout=60,
               what="a fix attempt")
    fixes = [h for h in d.ctl_json("history", "cards") if h["kind"] == "fix"]
    assert fixes and all(f["outcome"] != "promoted" and f.get("data_gone") is True for f in fixes), fixes
    stats = d.ctl_json("stats")
    assert stats["data_gone_refusals"] >= 1 and stats["failed_attempts"] == 0, stats
    assert stats["fix_success_rate"] in (None, 1.0), stats
    assert d.ctl_json("records", "cards", "--limit", "100") == stored
