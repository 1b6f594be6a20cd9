"""Pages built to cost the daemon: a million items, deep nesting. The work per page is
bounded before it is done, with a clear error (TOO_LARGE), and memory stays bounded."""

from __future__ import annotations

import random
import re
from itertools import accumulate
from pathlib import Path

import pytest

from healerd.core import errors
from healerd.core import extract as extract_module
from healerd.core.blueprint import from_dict
from healerd.core.extract import PageTooLarge, check_page, extract, nesting_depth
from healerd.core.htmldiff import OVER_BUDGET_NOTE, structural_diff
from tests.support.daemon import FAST_CONFIG
from tests.support.paths import CORPUS
from tests.support.sitepages import LISTING_BP, listing_v1, write_blueprint

DEEP = "<html><body>" + "<div>" * 100_000 + "x" + "</div>" * 100_000 + "</body></html>"


def _items(n: int) -> str:
    rows = "".join(f'<tr class="player"><td class="name">P{i}</td><td class="score">{i}</td></tr>'
                   for i in range(n))
    return f'<html><body><table class="stats">{rows}</table></body></html>'


def test_check_page_bounds_elements_and_depth():
    with pytest.raises(PageTooLarge, match=r"nests elements 100000 deep, more than max_depth \(256\)"):
        check_page(DEEP)
    with pytest.raises(PageTooLarge, match=r"more than max_elements \(1000\)"):
        check_page("<html><body>" + "<i>1</i>" * 999 + "</body></html>", max_elements=1000)   # 1001 with html, body
    check_page("<html><body>" + "<i>1</i>" * 998 + "</body></html>", max_elements=1000)
    # As short as a page over the bound can be: one character per element (each "<" counts).
    with pytest.raises(PageTooLarge, match=r"has 1001 elements, more than max_elements \(1000\)"):
        check_page("<" * 1001, max_elements=1000)
    check_page("<" * 1000, max_elements=1000)
    # Depth at the bound passes, one more fails.
    check_page("<div>" * 10 + "</div>" * 10, max_depth=10)
    with pytest.raises(PageTooLarge):
        check_page("<div>" * 11 + "</div>" * 11, max_depth=10)
    # End tags a page may omit, and void elements, are not nesting.
    sloppy = "<html><body><ul>" + "<li><p>item<br><img src=x>" * 5000 + "</ul></body></html>"
    check_page(sloppy, max_depth=10)
    check_page(listing_v1(), max_depth=10)
    assert PageTooLarge("x").error_type == errors.TOO_LARGE


# The depth as check_page first measured it, a Python step per tag: the reference nesting_depth keeps.
_REF_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)")


def _reference_depth(html: str) -> int:
    flat = extract_module._FLAT
    steps = (0 if m[2].lower() in flat else (-1 if m[1] else 1) for m in _REF_TAG.finditer(html))
    return max(accumulate(steps, initial=0))


# Pieces of hostile markup: flat and non-flat names that share prefixes (a/area, p/param/path,
# head/header, col/colgroup, th/thead, tr/track, li/link, rt/rtc), upper case, end tags of
# flat elements with no start, "<" and "</" before non-letters, tags in scripts and comments,
# and non-ASCII letters that lowercase to ASCII ones (the Kelvin sign, dotted capital I).
_FRAGMENTS = [
    "<a>", "</a>", "<a ", "</a ", "<area>", "</area>", "<ab>", "</AB>", "<p>", "</p>", "<P ", "<param>", "</param>",
    "<path d=1>", "</path>", "<pa>", "</pa>", "<head>", "</head>", "<header>", "</header>", "<HEAD>", "</HEADER>",
    "<col>", "<colgroup>", "</colgroup>", "<colgroupx>", "</colgroupx>", "<th>", "<thead>", "</thead>", "<thx>",
    "<tr>", "</tr>", "<track>", "<trackx>", "<li>", "</li>", "<link>", "<linkx>", "</LI>", "<rt>", "<rtc>", "<rtcx>",
    "<div>", "</div>", "<DIV class=x>", "</Div>", "<span>", "</span>", "<h1>", "</h1>", "<br/>", "<img src=a>",
    "<b>", "</b>", "<body>", "<br>", "<i>", "</i>", "<input>", "<em>", "<embed>", "</em>", "<x1>", "</x1>",
    "<", "</", "< ", "</ ", "</1", "</>", "<!--", "-->", "<!DOCTYPE html>", "<<", "<</", "<//div>", "<3", "<a1b2>",
    "<script>if (a<b && c</d) x='</div>'</script>", "<style>a<b{}</style>", "\u212a", "<\u212a>", "</\u212a>",
    "\u0130", "<\u0130>", "<d\u0130v>", "\u017f", "\u00e9", "\ud800", "x", " ", ">", "/", "a", "1",
]


def _hostile(rng: random.Random) -> str:
    return "".join(rng.choice(_FRAGMENTS) for _ in range(rng.randrange(0, 400)))


def _agrees_with_the_reference(html: str) -> None:
    depth = _reference_depth(html)
    assert nesting_depth(html) == depth, html
    assert html.count("<") >= depth      # the bound check_page skips the scan on
    check_page(html, max_depth=depth)
    if depth > 0:
        with pytest.raises(PageTooLarge, match=rf"nests elements {depth} deep, more than max_depth \({depth - 1}\)"):
            check_page(html, max_depth=depth - 1)
    elements = html.count("<") - html.count("</")
    check_page(html, max_elements=elements, max_depth=depth)
    with pytest.raises(PageTooLarge, match=rf"has {elements} elements, more than max_elements \({elements - 1}\)"):
        check_page(html, max_elements=elements - 1, max_depth=depth)


def test_nesting_depth_is_the_depth_of_the_tags_as_written():
    rng = random.Random(20240611)
    for _ in range(3000):
        _agrees_with_the_reference(_hostile(rng))
    for html in ("", "<", "</div>" * 5 + "<div>" * 3, "<DIV>" * 300, "<div>" * 7, "<\u212a>" * 300, "<li>" * 300,
                 "</li>" * 300 + "<a>" * 300, "<d\u0130v>" * 300):
        _agrees_with_the_reference(html)


def test_real_pages_measure_the_same_and_pages_too_short_to_pass_skip_the_scan(monkeypatch):
    pages = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(CORPUS.glob("*/*/*.html"))]
    assert len(pages) > 100
    for html in pages:
        assert nesting_depth(html) == _reference_depth(html)
    calls = []
    monkeypatch.setattr(extract_module, "nesting_depth", lambda html: calls.append(html) or _reference_depth(html))
    short = "<div>" * 51 + "x"   # 256 characters: no more than 256 tags fit, however they nest
    check_page(short, max_depth=256)
    check_page(listing_v1(), max_depth=len(listing_v1()))
    assert calls == []
    check_page(short + "</div>", max_depth=256)   # one character longer: measured
    assert len(calls) == 1
    with pytest.raises(PageTooLarge, match=r"nests elements 300 deep, more than max_depth \(299\)"):
        check_page("<div>" * 300 + "</div>" * 300, max_depth=299)
    assert len(calls) == 2


def test_extract_refuses_more_items_than_max_items():
    bp = from_dict({**LISTING_BP, "url": "http://x/"})
    page = _items(101)
    with pytest.raises(PageTooLarge, match=r"matched 101 items, more than max_items \(100\)"):
        extract(page, bp, max_items=100)
    assert extract(page, bp, max_items=101).item_count == 101


def test_the_diff_of_a_deeply_nested_page_is_one_line():
    out = structural_diff(listing_v1(), DEEP)
    assert out.startswith("# no structural diff: the current page is too large")
    assert "max_depth" in out and len(out.splitlines()) == 1


def test_the_diff_stops_at_its_time_budget():
    a, b = _items(3000), _items(3000).replace("player", "row")
    assert "tr.row" in structural_diff(a, b)
    assert structural_diff(a, b, budget_s=0.0) == OVER_BUDGET_NOTE.format(budget=0.0)


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


MANY_CONFIG = FAST_CONFIG.replace("[fetch]\n", "[fetch]\nmax_items = 1000\n")


def test_a_million_items_and_deep_nesting_through_the_daemon(site, daemon_factory, tmp_path):
    million = "<html><body><ul>" + '<li class="player"><i>1</i></li>' * 300_000 + "</ul></body></html>"
    site.page("/million", million)                 # 9.6 MB, 600,000 elements
    site.page("/many", _items(1001))               # over max_items = 1000
    site.page("/stats", listing_v1())
    d = daemon_factory(MANY_CONFIG).start()
    for name, path in (("million", "/million"), ("many", "/many"), ("deep", "/stats")):
        bp = write_blueprint(tmp_path / f"{name}.json", site.url(path), {**LISTING_BP, "every": "1h"})
        assert d.ctl("add", name, "--blueprint", bp, "--no-wait").returncode == 0   # each is scraped by `run` below
    r = d.ctl("run", "million")
    assert "failed, TOO_LARGE: the page has 600003 elements, more than max_elements (250000)" in r.stdout, r
    r = d.ctl("run", "many")
    assert "failed, TOO_LARGE: the items selector matched 1001 items, more than max_items (1000)" in r.stdout, r
    st = d.ctl_json("status", "many")
    assert "max_items" in st["last_error"], st

    # A good page first, then the same URL nested 100,000 deep: the diff is one line.
    assert ": ok, 5 record(s)" in d.ctl("run", "deep").stdout
    site.page("/stats", DEEP)
    assert "failed, TOO_LARGE" in d.ctl("run", "deep").stdout
    diff = d.ctl("diff", "deep")
    assert diff.returncode == 0, diff.stderr
    assert "too large to compare" in diff.stdout and "max_depth" in diff.stdout

    # No record was built from the oversized pages, and memory stayed bounded.
    assert d.ctl_json("records", "million") == [] and d.ctl_json("records", "many") == []
    assert _peak_rss_kb(d.proc.pid) < 400_000
    assert d.ctl("status").returncode == 0
