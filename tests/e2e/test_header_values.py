"""A header or cookie with a CR, LF or other control character is an invalid blueprint: refused
by `add` and `update` (checked by healerctl, and by the daemon for a client that skips that),
naming the key; a tab in a value and ordinary values are accepted."""

from __future__ import annotations

import pytest

from healerd.control.client import call
from healerd.control.protocol import ControlError
from healerd.core.blueprint import BlueprintError, from_dict
from tests.support.sitepages import LISTING_BP, listing_v1, write_blueprint

BASE = dict(LISTING_BP, url="https://example.com/stats")


@pytest.mark.parametrize(("section", "name", "value", "key", "shown"), [
    ("headers", "X-Api-Key", "abc\r\nX-Injected: 1", "headers.X-Api-Key", "\\r"),
    ("headers", "X-Trace", "a\nb", "headers.X-Trace", "\\n"),
    ("headers", "X-Trace", "a\x00b", "headers.X-Trace", "\\x00"),
    ("headers", "X-Trace", "a\x1b[2Jb", "headers.X-Trace", "\\x1b"),
    ("headers", "X-Trace", "a\x7fb", "headers.X-Trace", "\\x7f"),
    ("headers", "X-Bad\r\nName", "v", "headers.X-Bad\\r\\nName", None),
    ("headers", "X Bad", "v", "headers.X Bad", None),
    ("headers", "", "v", "headers.", None),
    ("cookies", "session", "abc\r\nSet-Cookie: x=1", "cookies.session", "\\r"),
    ("cookies", "se;ssion", "v", "cookies.se;ssion", None),
])
def test_controls_in_headers_and_cookies_are_refused_naming_the_key(section, name, value, key, shown):
    with pytest.raises(BlueprintError) as exc:
        from_dict(dict(BASE, **{section: {name: value}}))
    assert exc.value.key == key
    text = str(exc.value)
    assert "\r" not in text and "\n" not in text and "\x1b" not in text
    if shown:
        assert f"control character ({shown})" in text
    else:
        assert "not a valid name" in text


def test_ordinary_headers_and_cookies_and_a_tab_are_accepted():
    bp = from_dict(dict(BASE, headers={"User-Agent": "healerd/1 (+https://x.example)", "X-List": "a,\tb; q=0.5",
                                       "Accept-Language": "fr-CH, fr;q=0.9, *;q=0.5"},
                        cookies={"session_id": "Zm9v=YmFy", "lang": "ünicode-ok"}))
    assert bp.headers["X-List"] == "a,\tb; q=0.5" and bp.cookies["lang"] == "ünicode-ok"


def test_add_and_update_refuse_a_header_with_crlf(site, daemon_factory, tmp_path):
    d = daemon_factory().start()
    site.page("/stats", listing_v1())
    url = site.url("/stats")
    bad = write_blueprint(tmp_path / "bad.json", url, dict(LISTING_BP, headers={"X-Api-Key": "k\r\nHost: evil"}))
    r = d.ctl("add", "stats", "--blueprint", bad)
    assert r.returncode == 1 and "headers.X-Api-Key" in r.stderr and "control character (\\r)" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert d.ctl_json("status") == []

    good = write_blueprint(tmp_path / "good.json", url, LISTING_BP)
    assert d.ctl("add", "stats", "--blueprint", good).returncode == 0
    r = d.ctl("update", "stats", "--blueprint", bad)
    assert r.returncode == 1 and "headers.X-Api-Key" in r.stderr, r.stderr
    # A client that skips healerctl's own check meets the daemon's: the same refusal.
    for op, name in (("add", "other"), ("update", "stats")):
        with pytest.raises(ControlError) as exc:
            call(d.socket, op, {"name": name, "blueprint": dict(LISTING_BP, url=url,
                                                               headers={"X-Api-Key": "k\r\nHost: evil"})})
        assert exc.value.code == "invalid_blueprint" and exc.value.details == {"key": "headers.X-Api-Key"}
    assert [s["name"] for s in d.ctl_json("status")] == ["stats"]
    assert d.ctl_json("history", "stats")[0]["version"] == 1   # no new version from the refused updates
    assert d.proc.poll() is None


def test_a_blueprint_stored_before_the_check_still_loads_from_the_store():
    import json

    from healerd.core.blueprint import from_json

    stored = json.dumps(dict(BASE, headers={"X-Api-Key": "k\r\nHost: evil"}))
    assert from_json(stored).headers == {"X-Api-Key": "k\r\nHost: evil"}   # readers of the store keep working
    with pytest.raises(BlueprintError):
        from_dict(json.loads(stored))                                      # anything coming in is checked
