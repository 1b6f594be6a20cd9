"""`suggest`: a blueprint from one record's example values, measured on the change corpus's
"before" pages (the first record's values as examples; reproduced = the same records), and its
refusals when the examples cannot tell the record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from healerd.core.extract import extract, first_number
from healerd.core.suggest import SuggestError, guess_type, suggest
from tests.support.sitepages import listing_v1

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"


def _eq(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if " ".join(str(a).split()) == " ".join(str(b).split()):
        return True
    return isinstance(a, (int, float)) and first_number(str(b)) == float(a)


def _reproduced(case_dir: Path) -> bool:
    case = json.loads((case_dir / "case.json").read_text())
    html = (case_dir / "before.html").read_text(errors="replace")
    want = case["expected_before"]
    listing = case["items"] is not None
    first = want[0] if listing else want
    examples = {k: str(v) for k, v in first.items() if v not in (None, "")}
    try:
        s = suggest(html, examples)
    except SuggestError:
        return False
    if s.unplaced:
        return False
    from selectolax.lexbor import LexborHTMLParser

    got = extract(LexborHTMLParser(html), s.blueprint).data
    if listing:
        return isinstance(got, list) and len(got) == len(want) and all(
            all(_eq(g.get(k), w.get(k)) for k in w) for g, w in zip(got, want))
    return isinstance(got, dict) and all(_eq(got.get(k), want.get(k)) for k in want)


def test_suggest_reproduces_most_of_the_corpus_blueprints_from_one_records_values():
    cases = sorted(p.parent for p in CORPUS.glob("*/*/case.json"))
    assert len(cases) >= 100
    done = [c.name for c in cases if _reproduced(c)]
    # 82 of 117 when written: a drop means the value finding or the selector building got worse.
    assert len(done) >= 80, f"{len(done)} of {len(cases)} reproduced"


def test_a_listing_and_a_single_record():
    s = suggest(listing_v1(), {"name": "Grace", "score": "27"})
    assert s.listing and s.records == 5 and s.blueprint.fields["score"].type == "int"
    assert extract_page(listing_v1(), s)[1] == {"name": "Grace", "score": 27}
    page = ('<html><body><div class="p"><h1>Widget</h1><span class="sku">W-12</span>'
            '<a class="more" href="/w/12">more</a></div></body></html>')
    s = suggest(page, {"title": "Widget", "link": "/w/12", "sku": "W-12"})
    assert not s.listing and s.blueprint.fields["link"].attr == "href"
    assert extract_page(page, s) == {"title": "Widget", "link": "/w/12", "sku": "W-12"}


def extract_page(html, s):
    from selectolax.lexbor import LexborHTMLParser

    return extract(LexborHTMLParser(html), s.blueprint).data


def test_refusals_name_the_examples():
    page = '<html><body><h1>Soup</h1><aside><h3>Soup</h3></aside></body></html>'
    with pytest.raises(SuggestError, match="ambiguous example: title"):
        suggest(page, {"title": "Soup"})
    with pytest.raises(SuggestError, match=r"none of the example values is on the page \(title\)"):
        suggest(page, {"title": "Stew"})
    s = suggest(listing_v1(), {"name": "Grace", "score": "27", "team": "Reds"})
    assert s.unplaced == ["team"] and "team" not in s.blueprint.fields


@pytest.mark.parametrize("value,kind", [("31", "int"), ("$1,299.00", "float"), ("TL-1001", "str"),
                                        ("7 products", "str"), ("12 kg", "int"), ("v2.0", "str")])
def test_types_are_guessed_from_the_values(value, kind):
    assert guess_type(value) == kind
