"""Page.first_in: lexbor's css_first from a container, or the first of the selector's matches read once
over the whole page inside the container's subtree. Both give the same node."""

from __future__ import annotations

import json
import pathlib

import pytest

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.page import fingerprint
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.pipeline import heal

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"


def _selectors(page: Page) -> list[str]:
    """Selectors of the kinds the healer writes, from the page's own tags and classes."""
    out: set[str] = {"a", "span", "td:nth-child(2)", "li:nth-of-type(3) a", "div > a", "*:has(> a)", "p:not(.x)",
                     "body a", "html > body span"}
    for i in range(0, len(page.nodes), max(1, len(page.nodes) // 40)):
        tag, cls = page.tags[i], page.classes(i)
        out.add(tag)
        if cls:
            out.add(f"{tag}.{cls[0]}")
            p = page.parent[i]
            if p >= 0:
                out.add(f"{page.tags[p]} > .{cls[0]}")
    return sorted(css for css in out if _parses(page, css))


def _parses(page: Page, css: str) -> bool:
    """Class names that are no CSS identifier (`md:flex`) are left out, as the healer leaves them."""
    try:
        page.tree.css_first(css)
    except Exception:
        return False
    return True


def _pages() -> list[pathlib.Path]:
    return sorted((DATA / "corpus").rglob("after.html"))[::3] + sorted((DATA / "corpus2").rglob("after.html"))[::3]


def test_first_in_read_whole_is_css_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fingerprint, "WALK_AFTER", 0)       # every selector read over the whole page at once
    checked = 0
    for path in _pages():
        page = Page(path.read_text(encoding="utf-8", errors="replace"))
        containers = [i for i in range(len(page.nodes)) if page.children[i]][::7]
        for css in _selectors(page):
            for c in containers:
                want = page.index_of(page.nodes[c].css_first(css))
                assert page.first_in(c, css) == want, (path.parent.name, css, c)
                checked += 1
    assert checked > 10_000


def test_first_in_on_a_listing_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    html = ("<html><body><ul>" + "".join(f"<li class='r'><b>{k}</b><a href='/{k}'>n{k}</a>"
                                          + ("<a class='x'>second</a>" if k % 2 else "") + "</li>" for k in range(50))
            + "</ul><a>outside</a></body></html>")
    got = {}
    for walk_after in (0, 10_000):
        monkeypatch.setattr(fingerprint, "WALK_AFTER", walk_after)
        page = Page(html)
        items = [page.index_of(n) for n in page.tree.css("li.r")]
        got[walk_after] = [[page.first_in(c, css) for c in items] for css in ("a", "a.x", "li.r > b", "i", "li")]
        # the container itself is a candidate, as with css_first
        assert got[walk_after][-1] == items
        assert got[walk_after][3] == [None] * 50
        assert [page.attrs[i].get("href") for i in got[walk_after][0]] == [f"/{k}" for k in range(50)]
    assert got[0] == got[10_000]


def test_exact_within_a_subtree() -> None:
    page = Page("<div><p>a</p><section><p>a</p><p>b</p></section><p>a</p></div><p>a</p>")
    section = page.tags.index("section")
    all_a = page.exact("a", None)
    assert len(all_a) == 4
    assert page.exact("a", None, within=section) == [i for i in all_a if page.contains(section, i)]
    assert len(page.exact("a", None, within=section)) == 1
    assert page.exact("zzz", None, within=section) == []
    assert page.exact("b", None, within=page.tags.index("div")) == page.exact("b", None)


def _cases() -> list[pathlib.Path]:
    return sorted(p.parent for p in (DATA / "corpus").rglob("case.json"))


def _blueprint(case: dict) -> Blueprint:
    fields = {n: FieldSpec(n, f["selector"], f.get("type", "str"), f.get("attr")) for n, f in case["fields"].items()}
    return Blueprint(fields=fields, items=case.get("items"))


def test_heal_answers_the_same_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    cases = _cases()
    assert len(cases) > 50
    answers: dict[int, list] = {}
    for walk_after in (0, 10_000):
        monkeypatch.setattr(fingerprint, "WALK_AFTER", walk_after)
        answers[walk_after] = []
        for d in cases:
            case = json.loads((d / "case.json").read_text())
            before = (d / "before.html").read_text(encoding="utf-8", errors="replace")
            after = (d / "after.html").read_text(encoding="utf-8", errors="replace")
            bp = _blueprint(case)
            res = heal(bp, before, extract(before, bp).data, after)
            answers[walk_after].append((d.name, res.ok, res.reason, res.blueprint and res.blueprint.selectors()))
    assert answers[0] == answers[10_000]
