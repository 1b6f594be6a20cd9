"""The Doctor's routing and reporting (healerd/core/routing.py): route, relocation, recovery context, deferred report."""

from __future__ import annotations

import pytest

from healerd.core import errors
from healerd.core.blueprint import from_dict
from healerd.core.routing import (
    DECLINE,
    RELOCATE,
    SELECTORS,
    broken_selectors,
    deferred_report,
    recovery_context,
    relocation_candidates,
    route,
)

# -- route --------------------------------------------------------------------------------------


@pytest.mark.parametrize("error_type", [errors.PARSE_ERROR, errors.SCHEMA_MISMATCH])
def test_structure_changes_go_to_the_selector_ladder(error_type):
    kind, why = route(error_type)
    assert kind == SELECTORS and "selectors" in why
    assert route(error_type, 200)[0] == SELECTORS


@pytest.mark.parametrize("status", [404, 410, 301, 308])
def test_a_page_gone_or_moved_is_looked_for_on_the_same_site(status):
    kind, why = route(errors.HTTP_ERROR, status)
    assert kind == RELOCATE and "same site" in why


def test_a_permanent_redirect_relocates_whatever_the_status():
    assert route(errors.HTTP_ERROR, None, permanent_redirect="http://shop.example/new")[0] == RELOCATE


@pytest.mark.parametrize("status", [500, 502, 503, 504, 400, 403, 418, None])
def test_other_http_errors_are_declined_as_the_servers_problem(status):
    kind, why = route(errors.HTTP_ERROR, status)
    assert kind == DECLINE
    assert f"HTTP {status or 'error'}" in why and "no healing" in why


@pytest.mark.parametrize("error_type, words", [
    (errors.TIMEOUT, "backs off"),
    (errors.RATE_LIMIT, "rate-limits"),
    (errors.NETWORK, "network failure"),
    (errors.BLOCKED, "bot challenge or login wall"),
])
def test_never_healed_classes_are_declined_with_a_reason(error_type, words):
    kind, why = route(error_type, 503)  # a status never turns them into something healable
    assert kind == DECLINE and words in why


def test_every_error_class_has_a_route_and_a_reason():
    for error_type in errors.ALL:
        kind, why = route(error_type, 404)
        assert kind in (SELECTORS, RELOCATE, DECLINE) and why
    assert {route(e, 500)[0] for e in errors.NEVER_HEAL} == {DECLINE}


def test_an_unknown_class_is_declined():
    assert route("SOMETHING_NEW") == (DECLINE, "SOMETHING_NEW is not healed")
    assert route(None)[0] == DECLINE


# -- relocation_candidates --------------------------------------------------------------------

OLD = "http://shop.example/products/blue-kettle"


def test_candidates_never_leave_the_sites_host():
    sitemap = """<?xml version="1.0"?><urlset>
      <url><loc>http://evil.example/products/blue-kettle</loc></url>
      <url><loc>https://shop.example.evil.example/products/blue-kettle</loc></url>
      <url><loc>http://cdn.shop.example/products/blue-kettle</loc></url>
      <url><loc>http://shop.example/shop/products/blue-kettle-2</loc></url>
    </urlset>"""
    home = ('<a href="https://other.example/products/blue-kettle">elsewhere</a>'
            '<a href="//mirror.example/products/blue-kettle">protocol-relative</a>'
            '<a href="/about">about</a>')
    got = relocation_candidates(OLD, sitemap, [("http://shop.example/", home)])
    assert got == ["http://shop.example/shop/products/blue-kettle-2", "http://shop.example/about"]


def test_links_are_resolved_against_their_page_and_junk_is_ignored():
    html = ('<a href="kettles/blue">rel</a><a href="javascript:void(0)">js</a><a href="mailto:a@shop.example">m</a>'
            '<a href="#top">frag</a><a href="">empty</a><a href="ftp://shop.example/products/blue-kettle">ftp</a>'
            '<a href="/products/blue-kettle#reviews">the old page itself</a>'
            '<a href="http://shop.example/products/blue-kettle/">the old page, with a slash</a>')
    got = relocation_candidates(OLD, None, [("http://shop.example/products/", html)])
    assert got == ["http://shop.example/products/kettles/blue"]


def test_likely_pages_come_first():
    sitemap = "".join(f"<url><loc>{u}</loc></url>" for u in [
        "http://shop.example/contact",
        "http://shop.example/kettles/blue-kettle",                 # 2 words shared
        "http://shop.example/catalog/products/blue-kettle-v2",     # 3 words shared
        "http://shop.example/blue",                                # 1 word shared
    ])
    got = relocation_candidates(OLD, f"<urlset>{sitemap}</urlset>", [])
    assert got == ["http://shop.example/catalog/products/blue-kettle-v2", "http://shop.example/kettles/blue-kettle",
                   "http://shop.example/blue", "http://shop.example/contact"]


def test_numbers_alone_do_not_make_a_page_likely():
    sitemap = ("<urlset><url><loc>http://shop.example/archive/2024/05/x</loc></url>"
               "<url><loc>http://shop.example/kettle-shop/items</loc></url></urlset>")
    got = relocation_candidates("http://shop.example/products/2024/05/kettle", sitemap, [])
    assert got == ["http://shop.example/kettle-shop/items", "http://shop.example/archive/2024/05/x"]


def test_sitemap_and_links_are_merged_without_duplicates_and_limited():
    sitemap = "<urlset>" + "".join(f"<url><loc> http://shop.example/p/{i} </loc></url>" for i in range(30)) + "</urlset>"
    html = "".join(f'<a href="/p/{i}">{i}</a>' for i in range(10))
    got = relocation_candidates(OLD, sitemap, [("http://shop.example/", html)])
    assert len(got) == 15 and len(set(got)) == 15
    assert relocation_candidates(OLD, sitemap, [], limit=3) == [
        "http://shop.example/p/0", "http://shop.example/p/1", "http://shop.example/p/2"]


def test_sitemap_entities_are_decoded():
    sitemap = "<urlset><url><loc>http://shop.example/products?id=7&amp;view=blue-kettle</loc></url></urlset>"
    assert relocation_candidates(OLD, sitemap, []) == ["http://shop.example/products?id=7&view=blue-kettle"]


def test_nothing_to_offer():
    assert relocation_candidates(OLD, None, []) == []
    assert relocation_candidates(OLD, "not xml at all", [("http://shop.example/", ""), ("http://shop.example/", None)]) == []


# -- broken_selectors ---------------------------------------------------------------------------

def test_broken_selectors_are_those_of_the_failed_fields_else_the_items_selector():
    bp = from_dict({"items": "li.product", "fields": {"name": {"css": ".name"}, "price": {"css": ".price"},
                                                      "sku": {"css": ".sku"}}})
    assert broken_selectors(bp, ["price", "name", "price"]) == [".name", ".price"]
    assert broken_selectors(bp, []) == ["li.product"]
    assert broken_selectors(bp, ["gone"]) == ["li.product"]


# -- recovery_context ---------------------------------------------------------------------------

def attempt(i: int, outcome: str, strategy: str = "builtin") -> dict:
    return {"at": f"2024-01-01T00:0{i}:00Z", "strategy": strategy, "outcome": outcome, "reason": f"reason {i}"}


def test_recovery_context_summarises_the_failed_attempts():
    previous = [attempt(1, "rejected", "external"), attempt(2, "declined"), attempt(3, "error"),
                attempt(4, "promoted"), attempt(5, "staged", "memory")]
    ctx = recovery_context(previous)
    assert [p["outcome"] for p in ctx["previous_attempts"]] == ["rejected", "error", "staged"]
    hint = ctx["recovery_hint"]
    assert hint.startswith("Previous attempts failed; do not repeat them:")
    assert "- attempt at 2024-01-01T00:01:00Z: external -> rejected: reason 1" in hint
    assert "error: reason 3" in hint and "memory -> staged: reason 5" in hint
    assert "declined" not in hint and "promoted" not in hint


def test_recovery_context_is_empty_without_failed_attempts():
    assert recovery_context([]) == {"previous_attempts": [], "recovery_hint": ""}
    assert recovery_context([attempt(1, "declined"), attempt(2, "promoted")]) == {
        "previous_attempts": [], "recovery_hint": ""}


def test_recovery_context_is_bounded():
    previous = [attempt(i % 10, "rejected") | {"reason": f"r{i}"} for i in range(25)]
    ctx = recovery_context(previous)
    assert len(ctx["previous_attempts"]) == 10
    assert ctx["recovery_hint"].count("\n- attempt at") == 5
    assert "r4" in ctx["recovery_hint"] and "r5" not in ctx["recovery_hint"]


# -- deferred_report ----------------------------------------------------------------------------

def report(**kw) -> dict:
    args = dict(name="shop", error_type=errors.PARSE_ERROR, last_error="Empty field: price (null in all 20 items)",
                attempts=[attempt(1, "rejected"), attempt(2, "rejected", "external")],
                tried=["memory: no known fix for this change", "builtin: refused: the data is gone"],
                missing_fields=[], staged_versions=[], external_configured=False)
    args.update(kw)
    return deferred_report(**args)


def test_deferred_report_says_what_was_tried_the_last_error_and_the_options():
    r = report()
    assert r["source"] == "shop" and r["error_type"] == errors.PARSE_ERROR
    assert r["last_error"] == "Empty field: price (null in all 20 items)"
    assert r["tried"] == ["memory: no known fix for this change", "builtin: refused: the data is gone"]
    assert [a["strategy"] for a in r["attempts"]] == ["builtin", "external"]
    assert any("configure an external healer" in o and "CODE_HEALER_URL" in o for o in r["options"])
    assert r["options"][-1] == "once the page may have come back: `healerctl unquarantine shop`"


def test_the_external_healer_is_suggested_only_when_not_configured():
    r = report(external_configured=True)
    assert not any("external healer" in o for o in r["options"])
    assert r["options"] == ["fix the blueprint: `healerctl update shop --blueprint FILE`",
                            "once the page may have come back: `healerctl unquarantine shop`"]


def test_fields_whose_data_is_gone_get_the_update_that_works_not_unquarantine():
    from healerd.core.blueprint import from_dict, parse_text

    bp = from_dict({"url": "http://shop.example/p", "items": "li.p", "headers": {"Authorization": "Bearer s3cr3t-token"},
                    "fields": {"name": {"css": ".n"}, "price": {"css": ".v", "type": "float"},
                               "sku": {"css": "a.sku", "attr": "href"}}})
    r = report(missing_fields=["price", "sku"], staged_versions=[4, 6], external_configured=False, blueprint=bp)
    opts = r["options"]
    assert opts[0] == "review staged version 4: `healerctl history shop`, then `healerctl approve shop 4`"
    assert opts[1] == "review staged version 6: `healerctl history shop`, then `healerctl approve shop 6`"
    assert "the data for price, sku is gone from the page" in opts[2]
    assert "`healerctl update shop --blueprint shop.toml`" in opts[2] and "required = false" in opts[2]
    assert opts[3] == "or stop scraping it: `healerctl remove shop`" and len(opts) == 4
    assert not any("unquarantine" in o or "external healer" in o for o in opts)
    assert r["data_gone"] == ["price", "sku"]
    # The blueprint to save is a valid blueprint: the gone fields optional, the rest as they were,
    # and no secret header in the text a person is shown.
    text = r["blueprint_toml"]
    assert "s3cr3t" not in text and "[headers]" in text
    again = parse_text(text, "toml")
    assert again.fields["price"].required is False and again.fields["sku"].required is False
    assert again.fields["name"].required is True and again.fields["sku"].attr == "href"
    assert again.items == "li.p" and again.url == bp.url


def test_attempts_are_listed_oldest_first():
    r = report(attempts=[attempt(3, "rejected"), attempt(1, "rejected"), attempt(2, "rejected", "external")])
    assert [a["at"] for a in r["attempts"]] == sorted(a["at"] for a in r["attempts"])


def test_deferred_report_is_bounded():
    r = report(attempts=[attempt(i % 10, "rejected") for i in range(30)], tried=[f"t{i}" for i in range(30)])
    assert len(r["attempts"]) == 10
    assert r["tried"] == [f"t{i}" for i in range(20, 30)]  # the latest ones
