"""Values that leave their profile, end to end: a real daemon learns each field's value profile
from a real local shop's good scrapes, then the shop puts teasers, placeholders in other
languages and a wall in the fields' nodes. None of it is stored; a field wall is BLOCKED (no fix
attempt spent, one alert) and the source stores again by itself when the values return."""

from __future__ import annotations

from tests.support.daemon import FAST_CONFIG, db_rows
from tests.support.sitepages import write_blueprint
from tests.support.wallpages import ITEM_BP, PRODUCTS, SHOP_BP, item, shop

LEARN = 3   # good scrapes the profiles learn from (value_profile.MIN_SCRAPES)


def add_and_learn(d, site, tmp_path, name, bp, page) -> int:
    """Add the source and run it through LEARN ordinary days; the number of stored scrapes."""
    site.page(f"/{name}", page(0))
    r = d.ctl("add", name, "--blueprint", write_blueprint(tmp_path / f"{name}.json", site.url(f"/{name}"), bp))
    assert r.returncode == 0, r.stderr
    for day in range(LEARN):
        site.page(f"/{name}", page(day))
        out = d.ctl_json("run", name)
        assert out["ok"] is True, (name, day, out)
    return len(d.ctl_json("records", name, "--limit", "100"))


def all_values(d, name) -> list:
    out = []
    for rec in d.ctl_json("records", name, "--limit", "100"):
        rows = rec["data"] if isinstance(rec["data"], list) else [rec["data"]]
        out += [v for r in rows for v in r.values()]
    return out


def test_teasers_and_placeholders_in_any_language_are_never_stored(site, daemon_factory, tmp_path):
    d = daemon_factory(FAST_CONFIG).start()
    walls = {
        "teaser": dict(price_text="Sign in to see your price (save 15%)"),
        "german": dict(price_text="Anmelden, um diesen Wert zu sehen"),
        "spanish": dict(name_text="Inicia sesión para ver este valor"),
        "japanese": dict(stock_text="ログインして在庫状況を表示"),
    }
    stored = {name: add_and_learn(d, site, tmp_path, name, SHOP_BP, shop) for name in walls}
    stored["single"] = add_and_learn(d, site, tmp_path, "single", ITEM_BP, item)
    # An ordinary day first: new prices and a new product stay in profile.
    site.page("/teaser", shop(7, PRODUCTS + [("Stove Windshield", 19.0, "in stock")]))
    assert d.ctl_json("run", "teaser")["ok"] is True
    stored["teaser"] += 1
    for name, kw in walls.items():
        site.page(f"/{name}", shop(LEARN, **kw))
    site.page("/single", item(LEARN, price_text="Sign in to see your price (save 15%)"))
    for name in [*walls, "single"]:
        out = d.ctl_json("run", name)
        assert out["ok"] is False, (name, out)
        assert out["error_type"] == "BLOCKED", (name, out)
        assert "left its value profile" in out["error"], (name, out)
        assert len(d.ctl_json("records", name, "--limit", "100")) == stored[name], name
    values = {name: all_values(d, name) for name in [*walls, "single"]}
    assert 15.0 not in values["teaser"] and 15.0 not in values["single"]
    assert "Inicia sesión para ver este valor" not in values["spanish"]
    assert "ログインして在庫状況を表示" not in values["japanese"]
    assert not db_rows(d, "SELECT * FROM fix_history")   # a wall is not a broken selector
    # `profile = false`: a free-form field is not judged by its profile.
    free = {**SHOP_BP, "fields": {**SHOP_BP["fields"], "stock": {"css": "span.stock", "profile": False}}}
    add_and_learn(d, site, tmp_path, "free", free, shop)
    site.page("/free", shop(LEARN, stock_text="ログインして在庫状況を表示"))
    out = d.ctl_json("run", "free")
    assert out["ok"] is True, out
    assert d.ctl_json("records", "free")[0]["data"][0]["stock"] == "ログインして在庫状況を表示"


def test_a_field_wall_spends_no_attempt_and_lifts_by_itself(site, daemon_factory, tmp_path):
    d = daemon_factory(FAST_CONFIG).start()
    bp = {**SHOP_BP, "every": "1s"}
    stored = add_and_learn(d, site, tmp_path, "walled", bp, shop)
    site.page("/walled", shop(LEARN, price_text="Anmelden, um diesen Wert zu sehen"))
    out = d.ctl_json("run", "walled")
    assert (out["ok"], out["error_type"]) == (False, "BLOCKED"), out
    # The schedule goes on (scrape after scrape is refused); no fix is attempted, one alert is raised.
    hits = site.hits["/walled"]
    d.wait_for(lambda: site.hits["/walled"] >= hits + 3, timeout=60, what="scheduled scrapes behind the wall")
    assert len(d.ctl_json("records", "walled", "--limit", "100")) == stored
    assert not [h for h in d.ctl_json("history", "walled") if h["kind"] == "fix"]
    assert not db_rows(d, "SELECT * FROM fix_history WHERE source_name = 'walled'")
    degraded = [a for a in d.alerts() if a["source"] == "walled" and a["event"] == "DEGRADED"]
    assert len(degraded) == 1, degraded
    assert d.ctl_json("status", "walled")["state"] != "QUARANTINED"
    # The wall lifts: the next scheduled scrape stores the values, without a command.
    site.page("/walled", shop(LEARN + 1))
    d.wait_for(lambda: len(d.ctl_json("records", "walled", "--limit", "100")) > stored, timeout=60,
               what="a stored scrape after the wall lifted")
    assert d.ctl_json("records", "walled")[0]["data"][0]["price"] == 24.0   # day 4: the first price as on day 0
    assert "Anmelden, um diesen Wert zu sehen" not in all_values(d, "walled")
    d.wait_for(lambda: d.ctl_json("status", "walled")["state"] == "ACTIVE", timeout=30, what="ACTIVE again")
    assert any(a["event"] == "RECOVERED" for a in d.alerts() if a["source"] == "walled")


def test_values_out_of_profile_that_vary_are_a_breakage_the_doctor_sees(site, daemon_factory, tmp_path):
    """Each record's price now inside a sentence (not one placeholder text): SCHEMA_MISMATCH, and
    the Doctor's diagnosis sees the same departure — a fix attempt, never "nothing to heal" with
    the scrape retried at once, over and over."""
    d = daemon_factory(FAST_CONFIG).start()
    stored = add_and_learn(d, site, tmp_path, "sentences", SHOP_BP, shop)
    site.page("/sentences", shop(LEARN).replace('<span class="price">$',
                                                '<span class="price">Our price today, VAT included: $'))
    out = d.ctl_json("run", "sentences")
    assert (out["ok"], out["error_type"]) == (False, "SCHEMA_MISMATCH"), out
    d.wait_for(lambda: [h for h in d.ctl_json("history", "sentences") if h["kind"] == "fix"], timeout=60,
               what="a fix attempt on the values out of profile")
    assert len(d.ctl_json("records", "sentences", "--limit", "100")) == stored
