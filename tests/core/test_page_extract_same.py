"""The healer's extraction from its page index gives exactly what core.extract gives."""

from __future__ import annotations

import json
import pathlib
from dataclasses import asdict

import pytest

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.page import fingerprint
from healerd.core.heal.page.extraction import extract_on
from healerd.core.heal.page.fingerprint import Page

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"


def _blueprint(case: dict) -> Blueprint:
    fields = {n: FieldSpec(n, f["selector"], f.get("type", "str"), f.get("attr")) for n, f in case["fields"].items()}
    return Blueprint(fields=fields, items=case.get("items"))


@pytest.mark.parametrize("walk_after", [0, fingerprint.WALK_AFTER])
def test_corpus_cases_extract_the_same(walk_after: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fingerprint, "WALK_AFTER", walk_after)
    cases = sorted(p.parent for corpus in ("corpus", "corpus2") for p in (DATA / corpus).rglob("case.json"))
    assert len(cases) > 100
    kinds = set()
    for d in cases:
        case = json.loads((d / "case.json").read_text())
        bp = _blueprint(case)
        kinds.add(bool(bp.items))
        for name in ("before.html", "after.html"):
            html = (d / name).read_text(encoding="utf-8", errors="replace")
            assert asdict(extract_on(Page(html), bp)) == asdict(extract(html, bp)), (d.name, name)
    assert kinds == {True, False}     # listings and single records both


PAGE = """<html><body>
<div class="list">
  <div class="row"><h2> First\n  item </h2><span class="p">$1,234.50</span><a href="/a">more</a></div>
  <div class="row"><h2>Second</h2><b class="p">7 left</b></div>
  <div class="row"><h2></h2><span class="p">none</span><a>no link</a></div>
</div>
<p id="total">Total: 3 items</p>
</body></html>"""


def test_fallbacks_types_and_misses() -> None:
    page = Page(PAGE)
    listing = Blueprint(items="ul.gone", items_fallbacks=("div.row",), fields={
        "title": FieldSpec("title", "h2"),
        "price": FieldSpec("price", "span.p", "float", fallbacks=("b.p",)),
        "count": FieldSpec("count", "b.p", "int"),
        "link": FieldSpec("link", "a", "str", "href"),
        "link_text": FieldSpec("link_text", "a"),
        "missing": FieldSpec("missing", "i.none", required=False),
    })
    got = extract_on(page, listing)
    assert asdict(got) == asdict(extract(PAGE, listing))
    assert got.item_count == 3
    assert [r["title"] for r in got.raw] == ["First item", "Second", ""]     # type: ignore[index]
    assert [r["price"] for r in got.data] == [1234.5, 7.0, None]             # type: ignore[index]
    assert [r["link"] for r in got.raw] == ["/a", None, None]                 # type: ignore[index]
    single = Blueprint(fields={"total": FieldSpec("total", "#total", "int"), "first": FieldSpec("first", "h2")})
    assert asdict(extract_on(page, single)) == asdict(extract(PAGE, single))
    assert extract_on(page, single).data == {"total": 3, "first": "First item"}
    none = Blueprint(items="table tr", fields={"t": FieldSpec("t", "td")})
    assert asdict(extract_on(page, none)) == asdict(extract(PAGE, none)) == {"data": [], "raw": [], "item_count": 0}
