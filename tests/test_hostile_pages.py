"""Pages built to cost the daemon: a million items, deep nesting. The work per page is
bounded before it is done, with a clear error (TOO_LARGE), and memory stays bounded."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FAST_CONFIG
from sitepages import LISTING_BP, listing_v1, write_blueprint

from healerd.core import errors
from healerd.core.blueprint import from_dict
from healerd.core.extract import PageTooLarge, check_page, extract
from healerd.core.htmldiff import OVER_BUDGET_NOTE, structural_diff

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
    # Depth at the bound passes, one more fails.
    check_page("<div>" * 10 + "</div>" * 10, max_depth=10)
    with pytest.raises(PageTooLarge):
        check_page("<div>" * 11 + "</div>" * 11, max_depth=10)
    # End tags a page may omit, and void elements, are not nesting.
    sloppy = "<html><body><ul>" + "<li><p>item<br><img src=x>" * 5000 + "</ul></body></html>"
    check_page(sloppy, max_depth=10)
    check_page(listing_v1(), max_depth=10)
    assert PageTooLarge("x").error_type == errors.TOO_LARGE


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
        assert d.ctl("add", name, "--blueprint", bp).returncode == 0
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
