"""The pure parts of a new user's day one: the options a status shows, "did you mean", the
JavaScript-page hint, masking and exporting a blueprint, and a sources file's kind of change."""

from __future__ import annotations

from healerd.core.blueprint import from_dict
from healerd.core.blueprint_export import exportable, mask_blueprint
from healerd.core.blueprint_settings import SELECTORS, SETTINGS, UNCHANGED, file_change, with_settings
from healerd.core.js_page import script_rendered
from healerd.core.names_near import closest
from healerd.core.routing import fitting_options

REPORT = {"source": "s", "options": ["configure an external healer", "fix the blueprint: `healerctl update s --blueprint FILE`",
                                     "once the page may have come back: `healerctl unquarantine s`"]}


def test_status_options_leave_out_what_would_be_refused():
    degraded = fitting_options(REPORT, "DEGRADED", from_file=False)["options"]
    assert not any("unquarantine" in o for o in degraded) and len(degraded) == 2
    quarantined = fitting_options(REPORT, "QUARANTINED", from_file=True)["options"]
    assert any("unquarantine" in o for o in quarantined)
    assert not any("healerctl update" in o for o in quarantined)
    assert any("sources directory (s.toml or s.json), then `healerctl reload`" in o for o in quarantined)
    assert fitting_options(None, "ACTIVE", False) is None


def test_did_you_mean_finds_near_names_and_case_first():
    assert closest("scors", ["scores", "prices", "stats"])[0] == "scores"
    assert closest("Prices", ["prices", "price", "xyz"])[0] == "prices"
    assert closest("zzzzzz", ["scores", "prices"]) == []


def test_a_javascript_shell_is_told_apart_from_an_ordinary_page():
    assert script_rendered('<html><body><div id="app"></div><script src="/app.js"></script></body></html>')
    assert script_rendered('<html><body><noscript>You need to enable JavaScript to run this app.</noscript>'
                           '<script>boot()</script></body></html>')
    ordinary = "<html><body><table class='x'>" + "<tr><td>row text here</td></tr>" * 30 + "</table></body></html>"
    assert not script_rendered(ordinary)
    assert not script_rendered(ordinary.replace("</body>", "<script>track()</script></body>"))
    assert not script_rendered("")


SECRET = "s3cr3t-value-9876"


def test_masking_keeps_the_structure_and_export_names_what_it_leaves_out():
    bp = from_dict({"url": f"http://u:{SECRET}@h.example/p?api_key={SECRET}&page=2", "key": "code",
                    "headers": {"Authorization": f"Bearer {SECRET}", "Accept-Language": "en"},
                    "cookies": {"sid": SECRET},
                    "fields": {"code": {"css": "span.code"}, "key": {"css": "b.key", "attr": "data-key"}}})
    shown = mask_blueprint(bp.to_dict())
    assert shown["fields"] == {"code": {"css": "span.code", "type": "str"},
                               "key": {"css": "b.key", "type": "str", "attr": "data-key"}}
    assert shown["key"] == "code" and shown["headers"] == {"Authorization": "***", "Accept-Language": "en"}
    assert shown["cookies"] == {"sid": "***"} and SECRET not in str(shown)

    out, left = exportable(bp.to_dict())
    assert left == ["url", "headers.Authorization", "cookies.sid"]
    assert SECRET not in str(out) and "page=2" in out["url"]
    assert out["headers"] == {"Accept-Language": "en"} and "cookies" not in out
    assert out["fields"] == bp.to_dict()["fields"]


def test_a_sources_file_change_is_told_by_value_and_settings_keep_the_selectors():
    file_bp = from_dict({"url": "http://h.example/", "every": "1h", "items": "tr",
                         "fields": {"b": {"css": "td.b"}, "a": {"css": "td.a"}}})
    loaded = file_bp.to_json()
    assert file_change(loaded, file_bp) == UNCHANGED
    # The same blueprint stored with sorted keys (as before fields kept their order) is no change.
    import json

    assert file_change(json.dumps(json.loads(loaded), sort_keys=True), file_bp) == UNCHANGED
    every = from_dict({**file_bp.to_dict(), "every": "2h"})
    assert file_change(loaded, every) == SETTINGS
    moved = from_dict({**file_bp.to_dict(), "items": "li"})
    assert file_change(loaded, moved) == SELECTORS
    assert file_change(None, file_bp) == SELECTORS
    healed = from_dict({**file_bp.to_dict(), "items": "div.row", "fields": {"b": {"css": "span.b"},
                                                                             "a": {"css": "span.a"}}})
    merged = with_settings(healed, every)
    assert merged.every == 7200 and merged.items == "div.row" and merged.fields["a"].css == "span.a"


def test_no_items_or_an_empty_single_record_on_a_javascript_shell_hints_at_the_browser():
    from selectolax.lexbor import LexborHTMLParser

    from healerd.core.extract import extract
    from healerd.core.validate import validate

    shell = '<html><body><div id="root"></div><script src="/bundle.js"></script></body></html>'
    plain = "<html><body><p>" + "nothing to see here, an ordinary page " * 20 + "</p></body></html>"
    single = from_dict({"fields": {"price": {"css": "span.price"}}})
    listing = from_dict({"items": "li.row", "fields": {"price": {"css": "span.price"}}})
    browser = from_dict({"fetch": "browser", "items": "li.row", "fields": {"price": {"css": "span.price"}}})
    for bp in (single, listing):
        said = validate(extract(LexborHTMLParser(shell), bp), bp, html=shell).errors[0]
        assert said.endswith('try fetch = "browser" in the blueprint'), said
        assert "browser" not in validate(extract(LexborHTMLParser(plain), bp), bp, html=plain).errors[0]
    assert "try fetch" not in validate(extract(LexborHTMLParser(shell), browser), browser, html=shell).errors[0]
