"""Extraction against the truth of real site-change cases, and the number rule case by case.

The expected values come from the cases' own truth, and the number rule is implemented here,
independently of healerd: a bug in healerd's coercion cannot also be in what it is compared to.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from healerd.core.blueprint import from_dict
from healerd.core.extract import extract
from tests.support.paths import CORPUS

CASES = CORPUS
RULE = re.compile(r"-?\d[\d,]*(\.\d+)?")


def rule_number(text: str | None, ftype: str):
    """The first number in the string, commas dropped (None when there is none)."""
    if text is None:
        return None
    m = RULE.search(text)
    if m is None:
        return None
    digits = m.group(0).replace(",", "")
    return int(digits.split(".")[0]) if ftype == "int" else float(digits)


def load(case_dir: Path) -> dict:
    case = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))
    for page in ("before", "after"):
        case[page] = (case_dir / f"{page}.html").read_text(encoding="utf-8")
    return case


def blueprint(case: dict):
    return from_dict({"url": "http://example.test/page", "items": case["items"],
                      "fields": {name: {"css": f["selector"], "attr": f.get("attr"), "type": f.get("type", "str")}
                                 for name, f in case["fields"].items()}})


def as_records(value) -> list[dict]:
    return value if isinstance(value, list) else [value]


def check(case: dict, page: str, expected) -> None:
    got = extract(case[page], blueprint(case))
    raws, data, want = as_records(got.raw), as_records(got.data), as_records(expected)
    assert len(raws) == len(want), f"{case['id']} {page}: {len(raws)} records, expected {len(want)}"
    for i, (raw, typed, exp) in enumerate(zip(raws, data, want)):
        for name, spec in case["fields"].items():
            ftype = spec.get("type", "str")
            assert raw[name] == exp[name], f"{case['id']} {page} record {i} field {name}: raw value"
            if ftype == "str":
                assert typed[name] == exp[name]
            else:
                number = rule_number(exp[name], ftype)
                assert typed[name] == number and type(typed[name]) is type(number), \
                    f"{case['id']} {page} record {i} field {name}: {typed[name]!r} != {number!r} from {exp[name]!r}"


ALL = sorted(p.parent for p in CASES.glob("*/*/case.json"))


def test_the_cases_cover_every_kind_and_both_record_shapes():
    cases = [json.loads((d / "case.json").read_text()) for d in ALL]
    assert {c["kind"] for c in cases} == {"real-snapshot", "real-template", "synthetic"}
    assert any(c["items"] for c in cases) and any(not c["items"] for c in cases)
    assert any(c.get("no_break") for c in cases) and any(not c["heal_possible"] for c in cases)
    types = {f.get("type", "str") for c in cases for f in c["fields"].values()}
    assert types == {"str", "int", "float"}


@pytest.mark.parametrize("case_dir", ALL, ids=[d.name for d in ALL])
def test_the_old_blueprint_extracts_the_expected_values_before_the_change(case_dir):
    case = load(case_dir)
    check(case, "before", case["expected_before"])


NO_BREAK = [d for d in ALL if json.loads((d / "case.json").read_text()).get("no_break")]


@pytest.mark.parametrize("case_dir", NO_BREAK, ids=[d.name for d in NO_BREAK])
def test_the_old_blueprint_still_extracts_the_expected_values_when_nothing_broke(case_dir):
    case = load(case_dir)
    check(case, "after", case["expected_after"])


# The rule by hand: first match of -?\d[\d,]*(\.\d+)?, commas dropped.
NUMBERS = [
    ("-12.5%", "float", -12.5),
    ("$1,299.00", "float", 1299.0),
    ("7 products", "int", 7),
    ("7 products", "float", 7.0),
    ("-0", "float", 0.0),
    ("-0", "int", 0),
    ("1,2,3", "int", 123),
    ("1,234.56 €", "float", 1234.56),
    ("-1,000 points", "int", -1000),
    ("Total: -3.25 EUR", "float", -3.25),
    ("12.", "float", 12.0),        # no digit after the point: the point is not part of the number
    (".5", "float", 5.0),          # a number starts with a digit
    ("1.5.6", "float", 1.5),
    ("1e5", "float", 1.0),         # no exponents
    ("2.5E-3", "float", 2.5),
    ("- 5", "int", 5),             # the minus must touch the digit
    ("--3", "int", -3),
    ("\u22124", "int", 4),         # a typographic minus is not a minus sign
    ("rated 4.5 of 5", "float", 4.5),
    ("v2.0.1", "float", 2.0),
    ("1,000,000", "int", 1000000),
    ("12,50", "float", 1250.0),    # a decimal comma is a thousands separator by the rule
    ("no digits", "int", None),
    ("", "float", None),
    ("   ", "int", None),
]


@pytest.mark.parametrize("text,ftype,expected", NUMBERS)
def test_numbers_follow_the_rule(text, ftype, expected):
    bp = from_dict({"url": "http://example.test/", "fields": {"v": {"css": "p.v", "type": ftype}}})
    got = extract(f'<html><body><p class="v">{text}</p></body></html>', bp)
    assert got.data["v"] == expected and type(got.data["v"]) is type(expected)
    assert rule_number(" ".join(text.split()), ftype) == expected   # the table and the rule agree


def test_numbers_in_listing_records_keep_their_sign():
    bp = from_dict({"url": "http://example.test/", "items": "li",
                    "fields": {"d": {"css": ".d", "type": "float"}, "n": {"css": ".n", "type": "int"}}})
    html = "<ul>" + "".join(f'<li><b class="d">{d}</b><i class="n">{n}</i></li>'
                            for d, n in (("-12.5%", "-3 left"), ("+4.0%", "12 left"))) + "</ul>"
    assert extract(html, bp).data == [{"d": -12.5, "n": -3}, {"d": 4.0, "n": 12}]


@pytest.mark.parametrize("attr, expected", [
    ("href", ["/a", ""]),            # an empty attribute is the empty string
    ("data-sku", ["x-1", None]),     # a missing one is None
    ("HREF", [None, None]),          # attribute names are read as written: the parser lowercased them
    ("viewBox", ["0 0 9 9", None]),  # ...and kept SVG's in mixed case
    ("viewbox", [None, None]),
])
def test_an_attribute_is_read_by_its_exact_name(attr, expected):
    page = ('<ul><li><a HREF="/a" data-SKU="x-1"><svg viewBox="0 0 9 9"></svg></a></li>'
            '<li><a href=""><svg></svg></a></li></ul>')
    css = "svg" if attr.lower() == "viewbox" else "a"
    bp = from_dict({"url": "http://127.0.0.1/x", "items": "li", "fields": {"v": {"css": css, "attr": attr}}})
    assert [r["v"] for r in extract(page, bp).data] == expected
