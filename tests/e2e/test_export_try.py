"""Taking a blueprint back out and trying one, through the real daemon: `export` gives the healed
production blueprint as a file that `add` accepts and that reads the same records (secrets left
out and named); `try` reads a page once and registers nothing; a sources-directory edit of
settings only keeps the healed selectors, and an unchanged file is never "changed"."""

from __future__ import annotations

import json
import signal
import tomllib

from tests.support.daemon import FAST_CONFIG
from tests.support.jssite import serve_js_site
from tests.support.sitepages import LISTING_BP, listing_v1, listing_v2, write_blueprint

SECRET_TOKEN = "tok-9f8e7d6c5b4a"
SECRET_SID = "sid-0a1b2c3d4e5f"
UNCHANGED = "reloaded: added none; changed none; removed none"


def healed_version(d, name):
    s = d.ctl_json("status", name)
    return s["version"] if s["state"] == "ACTIVE" and s["version"] > 1 else None


def test_export_of_a_healed_source_adds_as_a_new_source_with_the_same_records(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    d = daemon_factory().start()
    bp = {**LISTING_BP, "every": "1h", "key": "name",
          "headers": {"Authorization": f"Bearer {SECRET_TOKEN}", "X-Client": "prices"},
          "cookies": {"sid": SECRET_SID}}
    r = d.ctl("add", "stats", "--blueprint", write_blueprint(tmp_path / "stats.json", site.url("/stats"), bp))
    assert r.returncode == 0, r.stderr
    site.page("/stats", listing_v2())
    d.ctl("run", "stats")
    v = d.wait_for(lambda: healed_version(d, "stats"), what="the heal to be promoted")

    out = d.ctl("export", "stats")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert SECRET_TOKEN not in text and SECRET_SID not in text
    assert "# headers.Authorization: a secret value, left out" in text
    assert "# cookies.sid: a secret value, left out" in text
    exported = tomllib.loads(text)
    assert exported["headers"] == {"X-Client": "prices"} and "cookies" not in exported
    assert exported["items"] != LISTING_BP["items"]            # the healed selectors, not the file's
    assert exported["key"] == "name"
    assert f"production version {v}" in text

    (tmp_path / "again.toml").write_text(text)
    r = d.ctl("add", "again", "--blueprint", str(tmp_path / "again.toml"))
    assert r.returncode == 0, r.stderr + d.log()[-2000:]
    assert d.ctl_json("records", "again")[0]["data"] == d.ctl_json("records", "stats")[0]["data"]

    as_json = d.ctl("export", "stats", "--json")
    assert json.loads(as_json.stdout) == exported and "cookies.sid" in as_json.stderr
    assert d.ctl("export", "nope").returncode == 1


def test_status_masks_secret_values_never_the_blueprint_structure(site, daemon_factory, tmp_path):
    site.page("/p", '<html><body><h1 class="t">Widget</h1><span class="code">W-12</span></body></html>')
    d = daemon_factory().start()
    bp = {"every": "1h", "key": "code", "headers": {"X-Api-Key": SECRET_TOKEN},
          "fields": {"title": {"css": "h1.t"}, "code": {"css": "span.code"}}}
    r = d.ctl("add", "one", "--blueprint", write_blueprint(tmp_path / "one.json", site.url("/p"), bp))
    assert r.returncode == 0, r.stderr
    shown = d.ctl_json("status", "one")["blueprint"]
    assert shown["fields"]["code"] == {"css": "span.code", "type": "str"}
    assert shown["key"] == "code"
    assert shown["headers"] == {"X-Api-Key": "***"}
    assert SECRET_TOKEN not in json.dumps(d.ctl_json("status", "one"))


def test_try_prints_records_and_registers_nothing_and_a_broken_blueprint_exits_1(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    serve_js_site(site, path="/app")
    d = daemon_factory().start()
    good = write_blueprint(tmp_path / "good.json", site.url("/stats"), LISTING_BP)
    r = d.ctl("try", "--blueprint", good, "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["ok"] is True and got["error"] is None and got["records"][0] == {"name": "Ada", "score": 31}
    text = d.ctl("try", "--blueprint", good)
    assert text.returncode == 0 and text.stdout.splitlines()[0] == '{"name":"Ada","score":31}'

    broken = write_blueprint(tmp_path / "broken.json", site.url("/stats"),
                             {**LISTING_BP, "items": "table.gone tr"})
    r = d.ctl("try", "--blueprint", broken)
    assert r.returncode == 1 and "it would fail: PARSE_ERROR: No items" in r.stderr
    assert "browser" not in r.stderr                             # an ordinary page: no JavaScript hint
    r = d.ctl("try", "--blueprint", broken, "--url", site.url("/app"), "--json")
    assert r.returncode == 1
    got = json.loads(r.stdout)
    assert got["ok"] is False and 'try fetch = "browser"' in got["error"]
    r = d.ctl("try", "--blueprint", good, "--url", "http://127.0.0.1:9/nothing")
    assert r.returncode == 1 and "it would fail" in r.stderr
    assert d.ctl_json("status") == []                           # nothing registered


def _file(folder, every: str, url: str) -> None:
    (folder / "s.json").write_text(json.dumps({**LISTING_BP, "every": every, "url": url}))


def test_a_settings_edit_keeps_the_healed_selectors_and_an_unchanged_file_is_never_changed(site, daemon_factory,
                                                                                           tmp_path):
    folder = tmp_path / "sources.d"
    folder.mkdir()
    site.page("/stats", listing_v1())
    _file(folder, "1h", site.url("/stats"))
    d = daemon_factory(FAST_CONFIG.replace("[daemon]\n", f'[daemon]\nsources_dir = "{folder}"\n')).start()
    d.wait_for(lambda: d.ctl("run", "s").returncode == 0, what="the first scrape")
    site.page("/stats", listing_v2())
    d.ctl("run", "s")
    v = d.wait_for(lambda: healed_version(d, "s"), what="the heal to be promoted")
    assert d.ctl("reload").stdout.strip() == UNCHANGED

    _file(folder, "2h", site.url("/stats"))                    # only `every`
    assert d.ctl("reload").stdout.strip() == "reloaded: added none; changed s; removed none"
    s = d.ctl_json("status", "s")
    assert s["every_s"] == 7200 and s["version"] == v and s["blueprint"]["every"] == 7200
    assert d.ctl_json("run", "s")["ok"] is True                 # the healed selectors still read the page
    assert d.ctl("reload").stdout.strip() == UNCHANGED

    site.page("/stats", listing_v1())                            # the old layout is back: version 1 reads it
    r = d.ctl("rollback", "s", "--to", "1")
    assert r.returncode == 0, r.stderr
    assert d.ctl("reload").stdout.strip() == UNCHANGED
    assert d.ctl_json("status", "s")["version"] == 1

    site.page("/other", listing_v1())
    _file(folder, "2h", site.url("/other"))                    # a new URL: a setting too
    d.proc.send_signal(signal.SIGHUP)
    d.wait_for(lambda: d.ctl_json("status", "s")["url"].endswith("/other"), what="the new url")
    assert d.ctl_json("status", "s")["version"] == 1


def test_suggest_writes_a_blueprint_from_one_rows_examples_that_add_accepts(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    site.page("/one", '<html><head><title>Widget - Shop</title></head><body><nav>Shop</nav><div class="product">'
                      '<h1 class="name">Widget</h1><p class="price">$1,299.00</p><p>In stock</p></div></body></html>')
    d = daemon_factory().start()
    r = d.ctl("suggest", site.url("/stats"), "--example", "name=Ada", "--example", "score=31")
    assert r.returncode == 0, r.stderr
    assert "reads 5 record(s) (a listing)" in r.stdout
    bp = tomllib.loads(r.stdout)
    assert bp["fields"]["score"]["type"] == "int" and "items" in bp
    (tmp_path / "suggested.toml").write_text(r.stdout)
    r = d.ctl("add", "suggested", "--blueprint", str(tmp_path / "suggested.toml"))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("records", "suggested")[0]["data"] == [
        {"name": n, "score": s} for n, s in [("Ada", 31), ("Grace", 27), ("Linus", 24), ("Margaret", 22), ("Ken", 19)]]

    r = d.ctl("suggest", site.url("/one"), "--example", "name=Widget", "--example", "price=$1,299.00", "--json")
    assert r.returncode == 0, r.stderr
    one = json.loads(r.stdout)
    assert "items" not in one and one["fields"]["price"]["type"] == "float" and "a single record" in r.stderr
    got = json.loads(d.ctl("try", "--blueprint", str(_write(tmp_path / "one.json", one)), "--json").stdout)
    assert got["records"] == {"name": "Widget", "price": 1299.0}

    r = d.ctl("suggest", site.url("/one"), "--example", "name=Gadget")
    assert r.returncode == 1 and "none of the example values is on the page (name)" in r.stderr
    r = d.ctl("suggest", site.url("/stats"), "--example", "name")
    assert r.returncode == 2
    assert [s["name"] for s in d.ctl_json("status")] == ["suggested"]   # suggest registered nothing


def _write(path, data):
    path.write_text(json.dumps(data))
    return path
