"""The static check of selectors a person did not write (healerd/core/selector_bounds.py)."""

from __future__ import annotations

import pytest

from healerd.core import selector_bounds as sb
from healerd.core.blueprint import from_dict
from healerd.core.errors import Refusal

ACCEPTED = [
    "table.stats tr.player td.name",
    "td.name a",
    "tr:not(.ad) > td:nth-of-type(2)",
    "div:has(> td)",
    "div:has(td)",
    "article:has(h2, h3) .price",
    "a:is(.x, .y)",
    "div:where(p, q)",
    "html > body > div:nth-of-type(3) > table tr:nth-child(n+2)",
    'a[href^="https://"]',
    "span div div div td",               # four descendant steps: the most allowed
    "a > b > c > d > e > f > g > h",     # eight compounds: the most allowed
    ", ".join(["p"] * 8),
    "x" * 300,
    "li:nth-child(2n+1)", "li:nth-last-child(-n + 3)", "tr:nth-child(odd)", "td:nth-last-of-type(even)",
    "p:lang(en)", "p:dir(rtl)", 'p:contains("Price")', "a:first-child", "li:last-of-type", "a:hover",
]

REFUSED = {
    # the selector bomb: :has() five levels deep
    "div:has(div:has(div:has(div:has(div:has(td)))))": "nest 5 levels deep",
    "div:has(div:has(td))": "nest 2 levels deep",
    "div:has(> td:has(p))": "nest 2 levels deep",
    "div:not(:has(p))": "nest 2 levels deep",
    "a:is(b:where(c))": "nest 2 levels deep",
    "p:not(:not(.x))": "cannot be parsed",   # cssselect refuses it outright
    "span div div div div td": "5 descendant or sibling (~) steps",
    "a ~ b ~ c ~ d ~ e ~ f": "5 descendant or sibling (~) steps",
    "div div:has(p q r s)": "5 descendant or sibling (~) steps",   # the step into :has() counts too
    "a > b > c > d > e > f > g > h > i": "9 compound selectors in a row",
    ", ".join(["p"] * 9): "9 comma-separated selectors",
    "x" * 301: "301 characters",
    "td::text": "pseudo-element",
    "[": "cannot be parsed",
    "": "not a selector",
    # A functional pseudo-class whose argument lexbor reads as a selector: cssselect sees bare tokens,
    # so the bounds above would never see it (`of S` took lexbor 31 s on a shaped page).
    "li:nth-child(2n+1 of div div div div div p)": ":nth-child() takes An+B only",
    "li:nth-last-child(1 of p)": ":nth-last-child() takes An+B only",
    ":current(div div div div div p)": "the pseudo-class :current() is not on the allow-list",
    "td:nth-col(2)": "the pseudo-class :nth-col() is not on the allow-list",
    "a:made-up": "the pseudo-class :made-up is not on the allow-list",
    'p:dir("x")': ":dir() takes no such argument",
}


@pytest.mark.parametrize("css", ACCEPTED)
def test_selectors_within_the_bounds_pass(css):
    assert sb.problem(css) is None
    sb.check_selector(css)


@pytest.mark.parametrize("css", list(REFUSED))
def test_selectors_over_the_bounds_are_refused_in_one_line_naming_them(css):
    with pytest.raises(sb.SelectorRefused) as info:
        sb.check_selector(css, "fields.name.css")
    line = str(info.value)
    assert REFUSED[css] in line, line
    assert "\n" not in line and line.startswith("fields.name.css: the selector ")
    shown = css if len(css) <= 120 else css[:117]
    assert repr(shown)[:-1] in line or shown in line
    assert isinstance(info.value, Refusal)   # answered in one line, never logged as a crash


def test_a_blueprint_is_checked_selector_by_selector_fallbacks_included():
    ok = from_dict({"url": "https://example.org/", "items": ["table tr", "ul li"],
                    "fields": {"name": {"css": ["td.n", "span.n"]}}})
    sb.check_blueprint(ok)
    assert [k for k, _ in sb.blueprint_selectors(ok)] == ["items", "items[1]", "fields.name.css",
                                                          "fields.name.css[1]"]
    bomb = from_dict({"url": "https://example.org/", "items": ["table tr", "div:has(div:has(td))"],
                      "fields": {"name": {"css": "td.n"}}})
    with pytest.raises(sb.SelectorRefused, match=r"^items\[1\]: the selector 'div:has\(div:has\(td\)\)'"):
        sb.check_blueprint(bomb)
    hidden = from_dict({"url": "https://example.org/", "fields": {"name": {"css": ["td.n", "a b c d e f"]}}})
    with pytest.raises(sb.SelectorRefused, match=r"fields\.name\.css\[1\]"):
        sb.check_blueprint(hidden)



# ---------------------------------------------------------------- where the check is applied


def test_a_candidate_keeping_a_persons_own_selector_is_not_refused_for_it():
    person = from_dict({"url": "https://example.org/", "fields": {"n": {"css": "div:has(div:has(td))"}}})
    keeps = from_dict({"url": "https://example.org/", "fields": {"n": {"css": ["div:has(div:has(td))", "p.n"]}}})
    sb.check_blueprint(keeps, trusted=person)
    adds = from_dict({"url": "https://example.org/", "fields": {"n": {"css": ["div:has(div:has(td))",
                                                                           "p:has(b:has(i))"]}}})
    with pytest.raises(sb.SelectorRefused, match=r"fields\.n\.css\[1\]: the selector 'p:has\(b:has\(i\)\)'"):
        sb.check_blueprint(adds, trusted=person)


def test_a_healers_answer_over_the_bounds_is_refused_before_it_becomes_a_candidate():
    import json

    from healerd.adapters.external import HealerConfig, candidate_from_files
    from tests.support.diagnosis_context import FIXED, make_ctx

    bomb = dict(FIXED, items="div:has(div:has(div:has(div:has(div:has(td)))))")
    got = candidate_from_files(make_ctx(), {"blueprint.json": json.dumps(bomb)}, HealerConfig(url="http://h/"))
    assert got.outcome == "refused" and got.blueprint is None
    assert got.reason.startswith("blueprint.json is refused: items: the selector 'div:has(div:has(div:has(")
    assert "nest 5 levels deep" in got.reason and "\n" not in got.reason
    fine = candidate_from_files(make_ctx(), {"blueprint.json": json.dumps(FIXED)}, HealerConfig(url="http://h/"))
    assert fine.outcome == "healed" and fine.blueprint is not None


def test_the_digest_of_a_candidate_ignores_spelling_and_key_order_not_meaning():
    a = from_dict({"url": "https://example.org/", "items": "table  tr.p", "fields": {"n": {"css": "td>a"},
                                                                                 "v": {"css": "td.v"}}})
    b = from_dict({"fields": {"v": {"css": "td.v"}, "n": {"css": "td > a"}}, "items": "table tr.p",
                   "url": "https://example.org/"})
    c = from_dict({"url": "https://example.org/", "items": "table tr.p", "fields": {"n": {"css": "td a"},
                                                                              "v": {"css": "td.v"}}})
    assert sb.candidate_digest(a) == sb.candidate_digest(b)
    assert sb.candidate_digest(a) != sb.candidate_digest(c)


def test_the_same_answer_is_staged_once_per_source(tmp_path):
    from healerd.config import Config
    from healerd.store.db import open_db
    from healerd.store.ledger import Ledger
    from healerd.store.sql import scalar

    conn = open_db(tmp_path / "healerd.db")
    try:
        led = Ledger(conn, Config())
        person = from_dict({"url": "https://example.org/", "items": "li", "fields": {"n": {"css": ".n"}}})
        led.add_source("shop", person)
        led.add_source("other", person)
        answer = from_dict({"url": "https://example.org/", "items": "li.x", "fields": {"n": {"css": ".n"}}})
        respelled = from_dict({"url": "https://example.org/", "items": "li.x ", "fields": {"n": {"css": " .n"}}})
        first = led.stage_answer("shop", answer, sb.candidate_digest(answer), "external", "cycle 1")
        assert first["seen"] is None and first["version"] == 2
        led.reject_version("shop", 2, "too slow on this page (extraction too slow)")
        again = led.stage_answer("shop", respelled, sb.candidate_digest(respelled), "external", "cycle 2")
        assert again["version"] is None
        assert again["seen"]["version"] == 2 and again["seen"]["status"] == "rejected"
        assert "too slow" in again["seen"]["note"]
        assert scalar(conn, "SELECT count(*) FROM parser_versions WHERE source_name = 'shop'") == 2
        # Per source: the same answer for another source is its own.
        other = led.stage_answer("other", answer, sb.candidate_digest(answer), "external")
        assert other["version"] == 2 and other["seen"] is None
    finally:
        conn.close()
