"""The validator: each rule, the item-count band, value-shape drift and precedence."""

from __future__ import annotations

import json
import random
import re

import pytest

from healerd.core import errors
from healerd.core.blueprint import from_dict
from healerd.core.extract import Extraction, extract
from healerd.core.validate import ValidationResult, item_band, validate, value_shape
from tests.support.paths import CORPUS

LIST_BP = from_dict({
    "items": "tr.player",
    "fields": {
        "name": {"css": "td.name"},
        "score": {"css": "td.score", "type": "int"},
        "profile": {"css": "td.name a", "attr": "href"},
        "note": {"css": "td.note", "required": False},
    },
})
SINGLE_BP = from_dict({"fields": {"title": {"css": "h1"}, "price": {"css": ".price", "type": "float"},
                                  "sku": {"css": ".sku", "required": False}}})


def row(i: int, name: str | None = None, score: str | None = None, href: str | None = None) -> str:
    name = f"Player {i}" if name is None else name
    score = str(i * 3) if score is None else score
    href = f"/players/{i}" if href is None else href
    return (f'<tr class="player"><td class="name"><a href="{href}">{name}</a></td>'
            f'<td class="score">{score}</td></tr>')


def listing(rows: list[str]) -> str:
    return f"<html><head><title>Stats</title></head><body><table>{''.join(rows)}</table></body></html>"


def run(html: str, bp=LIST_BP, **kw) -> ValidationResult:
    return validate(extract(html, bp), bp, html=html, **kw)


GOOD_ROWS = [row(i) for i in range(20)]


# -- passing and the result object ---------------------------------------------------------

def test_good_listing_passes():
    r = run(listing(GOOD_ROWS), recent_counts=[20, 19, 21])
    assert r.passed and r.error_type is None and r.errors == [] and r.failed_fields == []
    assert r.score == 1.0 and not r.critical and r.item_count == 20
    assert r.band == (3, 200)
    d = r.to_dict()
    assert json.loads(json.dumps(d))["band"] == [3, 200] and d["passed"] is True
    assert "PASSED" in r.report() and "items: 20 (expected 3-200)" in r.report()


def test_good_single_record_passes():
    html = '<html><body><h1>Widget</h1><span class="price">$1,299.00</span></body></html>'
    r = run(html, SINGLE_BP)
    assert r.passed and r.item_count is None   # the optional sku is missing: fine


def test_report_lists_errors_and_fields():
    r = run(listing([row(i, score="N/A") for i in range(5)]))
    text = r.report()
    assert "FAILED (SCHEMA_MISMATCH)" in text and "failed fields: score" in text
    assert "error: value-shape drift: score was numeric, now 'N/A'" in text


# -- PARSE_ERROR ---------------------------------------------------------------------------

def test_zero_items_is_parse_error():
    r = run(listing([]), recent_counts=[20, 20])
    assert r.error_type == errors.PARSE_ERROR and r.critical and r.item_count == 0
    assert r.errors == ["No items: the items selector 'tr.player' matched nothing"]


def test_required_field_matching_nothing_single_record():
    html = '<html><body><h1>Widget</h1><span class="cost">$5</span></body></html>'
    r = run(html, SINGLE_BP)
    assert r.error_type == errors.PARSE_ERROR and r.errors == ["Empty field: price"]
    assert r.failed_fields == ["price"] and r.critical
    assert r.score == pytest.approx(1 - 1 / 3)


def test_required_field_null_in_every_item():
    rows = [f'<tr class="player"><td class="name"><a href="/p/{i}">P{i}</a></td><td class="pts">{i}</td></tr>'
            for i in range(10)]
    r = run(listing(rows))
    assert r.error_type == errors.PARSE_ERROR
    assert r.errors == ["Empty field: score (null in all 10 items)"] and r.failed_fields == ["score"]


def test_blank_text_counts_as_empty():
    html = '<html><body><h1>   </h1><span class="price">3</span></body></html>'
    r = run(html, SINGLE_BP)
    assert r.error_type == errors.PARSE_ERROR and r.errors == ["Empty field: title"]


def test_optional_fields_never_fail():
    r = run(listing(GOOD_ROWS))
    assert all(rec["note"] is None for rec in extract(listing(GOOD_ROWS), LIST_BP).data)
    assert r.passed


def test_all_optional_blueprint_with_nothing_is_parse_error():
    bp = from_dict({"fields": {"a": {"css": ".a", "required": False}, "b": {"css": ".b", "required": False}}})
    r = run("<html><body><p>nothing here</p></body></html>", bp)
    assert r.error_type == errors.PARSE_ERROR and "No data returned" in r.errors[0]
    assert run('<html><body><p class="a">x</p></body></html>', bp).passed


# -- SCHEMA_MISMATCH -----------------------------------------------------------------------

def test_few_null_items_are_tolerated():
    rows = GOOD_ROWS[:19] + ['<tr class="player"><td class="name"><a href="/p/x">X</a></td></tr>']
    r = run(listing(rows))   # 1 of 20 = 5 %
    assert r.passed
    assert r.warnings == ["score: 1 of 20 items null (tolerated)"]


def test_many_null_items_are_schema_mismatch():
    rows = GOOD_ROWS[:15] + [f'<tr class="player"><td class="name"><a href="/p/{i}">X</a></td></tr>'
                             for i in range(5)]
    r = run(listing(rows))   # 5 of 20 = 25 %
    assert r.error_type == errors.SCHEMA_MISMATCH and not r.critical
    assert r.errors == ["Empty field: score (5 of 20 items null)"] and r.failed_fields == ["score"]


def test_numeric_field_holding_words_is_value_shape_drift():
    r = run(listing([row(i, score="N/A") for i in range(8)]))
    assert r.error_type == errors.SCHEMA_MISMATCH
    assert r.errors == ["value-shape drift: score was numeric, now 'N/A' (8 of 8 items)"]


def test_numeric_field_holding_words_single_record():
    r = run('<html><body><h1>W</h1><span class="price">Call us</span></body></html>', SINGLE_BP)
    assert r.error_type == errors.SCHEMA_MISMATCH
    assert r.errors == ["value-shape drift: price was numeric, now 'Call us'"]


def test_some_items_not_numeric_beyond_tolerance():
    rows = GOOD_ROWS[:10] + [row(i, score="DNP") for i in range(10)]
    r = run(listing(rows))
    assert r.error_type == errors.SCHEMA_MISMATCH
    assert r.errors == ["Bad values in field: score (10 of 20 items not a number, e.g. 'DNP')"]


def test_item_band():
    assert item_band([]) is None and item_band(None) is None and item_band([0, 0]) is None
    assert item_band([20]) == (3, 200)                   # 2 is a tenth: a failure
    assert item_band([50, 48, 52, 5000]) == (6, 510)     # median 51: one outlier does not move it
    assert item_band([3]) == (1, 30)
    assert item_band([20, "x", None, True]) == (3, 200)


def test_item_count_far_below_the_band():
    r = run(listing(GOOD_ROWS[:3]), recent_counts=[50, 50, 52])
    assert r.error_type == errors.SCHEMA_MISMATCH and r.band == (6, 500)
    assert r.errors == ["Item count 3 is far below the usual 50 (expected 6-500)"]


def test_a_tenth_of_the_usual_count_fails_and_more_passes():
    r = run(listing([row(i) for i in range(5)]), recent_counts=[50, 50, 52])
    assert not r.passed and r.errors == ["Item count 5 is far below the usual 50 (expected 6-500)"]
    assert run(listing([row(i) for i in range(6)]), recent_counts=[50, 50, 52]).passed


def test_item_count_far_above_the_band():
    rows = [row(i) for i in range(60)]
    r = run(listing(rows), recent_counts=[5, 5, 5])
    assert r.error_type == errors.SCHEMA_MISMATCH
    assert r.errors == ["Item count 60 is far above the usual 5 (expected 1-50)"]


def test_no_history_no_band():
    r = run(listing(GOOD_ROWS[:1]))
    assert r.passed and r.band is None


def test_shape_drift_against_last_good_urls():
    last_good = [{"name": f"P{i}", "score": i, "profile": f"/players/{i}", "note": None} for i in range(5)]
    rows = [row(i, href="Profile") for i in range(5)]
    r = run(listing(rows), last_good=last_good)
    assert r.error_type == errors.SCHEMA_MISMATCH
    assert r.errors == ["value-shape drift: profile was URLs, now 'Profile'"]


def test_links_read_from_an_attribute_stay_links_whatever_their_form():
    # A site moving from "x.html" links to pretty "x/" links, root-relative or absolute ones:
    # a value read from href is a URL reference by its structure, not by its ending.
    last_good = [{"name": f"P{i}", "score": i, "profile": f"p{i}.html", "note": None} for i in range(5)]
    for href in ("drought/", "posts/drought/", "../tags/drought", "https://x.org/t/drought", "drought.php"):
        assert run(listing([row(i, href=href) for i in range(5)]), last_good=last_good).passed, href
    # A bare word or a link to the page itself shows no link structure: still drift to words.
    for href in ("Profile", "#top"):
        r = run(listing([row(i, href=href) for i in range(5)]), last_good=last_good)
        assert r.errors == [f"value-shape drift: profile was URLs, now {href!r}"]


def test_a_text_field_is_judged_as_text_even_when_its_values_look_like_paths():
    bp = from_dict({"items": "li", "fields": {"path": {"css": "b"}}})
    html = "<ul>" + "".join(f"<li><b>{w}/</b></li>" for w in ("drought", "floods", "lune")) + "</ul>"
    r = run(html, bp, last_good=[{"path": "drought.html"}, {"path": "floods.html"}])
    assert r.errors == ["value-shape drift: path was URLs, now 'drought/'"]


def test_is_url_reference():
    from healerd.core.validate import is_url_reference

    assert [is_url_reference(v) for v in ("drought/", "posts/x.html", "x.html", "/a", "../up", "//cdn/x.js",
                                           "https://x.org/a", "mailto:a@b.org", "Profile", "about", "#top",
                                           "Note:", "a b/", "http://[::1", "", None, 5)] == \
        [True] * 8 + [False] * 9


def test_shape_drift_against_last_good_numbers_in_a_str_field():
    bp = from_dict({"items": "li", "fields": {"label": {"css": "b"}, "rank": {"css": "i"}}})
    last_good = [{"label": "a", "rank": "#1"}, {"label": "b", "rank": "#2"}, {"label": "c", "rank": "3rd"}]
    html = "<ul>" + "".join(f"<li><b>{c}</b><i>unranked</i></li>" for c in "abc") + "</ul>"
    r = run(html, bp, last_good=last_good)
    assert r.error_type == errors.SCHEMA_MISMATCH and r.failed_fields == ["rank"]
    # words before and words now: no drift
    assert run(html, bp, last_good=[{"label": "x", "rank": "gold"}]).passed


def test_shape_drift_against_last_good_dates_single_record():
    bp = from_dict({"fields": {"title": {"css": "h1"}, "updated": {"css": ".updated"}}})
    html = '<html><body><h1>Report</h1><p class="updated">Yesterday</p></body></html>'
    r = run(html, bp, last_good={"title": "Report", "updated": "2026-11-20"})
    assert r.error_type == errors.SCHEMA_MISMATCH
    assert r.errors == ["value-shape drift: updated was dates, now 'Yesterday'"]
    ok = '<html><body><h1>Report</h1><p class="updated">Nov 21, 2026</p></body></html>'
    assert run(ok, bp, last_good={"title": "Report", "updated": "2026-11-20"}).passed


def test_mixed_values_are_not_drift():
    last_good = [{"profile": f"/p/{i}"} for i in range(5)]
    rows = [row(i, href=("Profile" if i == 0 else f"/p/{i}")) for i in range(5)]
    assert run(listing(rows), last_good=last_good).passed


def test_value_shape():
    assert [value_shape(v) for v in (None, "", 3, 2.5, "1,299", "$5", "45%", "12 pts", "/a/b",
                                     "https://x.org/a?b=1", "page.html", "2026-01-02", "Nov 3", "10:45",
                                     "hello world", True)] == \
        ["empty", "empty", "number", "number", "number", "number", "number", "number", "url",
         "url", "url", "date", "date", "date", "text", "text"]


# -- BLOCKED and precedence ------------------------------------------------------------------

CHALLENGE = ('<html><head><title>Just a moment...</title></head><body><p>Checking your browser before '
             'accessing example.com.</p><script>window._cf_chl_opt={cvId:"3"}</script></body></html>')


def test_challenge_page_is_blocked_even_with_no_other_problem():
    bp = from_dict({"fields": {"title": {"css": "title"}}})
    r = run(CHALLENGE, bp)
    assert r.error_type == errors.BLOCKED and r.critical and r.score == 0.0
    assert r.errors[0].startswith("bot challenge: Cloudflare") and r.error_type == "BLOCKED"


def test_blocked_beats_parse_error():
    r = run(CHALLENGE, recent_counts=[20])
    assert r.error_type == errors.BLOCKED
    assert any(e.startswith("No items") for e in r.errors)   # the other problems are still listed


def test_parse_error_beats_schema_mismatch():
    rows = [f'<tr class="player"><td class="name"><a href="/p/{i}">P</a></td><td class="score">n/a</td></tr>'
            for i in range(3)]
    html = listing(rows).replace('class="name"', 'class="nm"')
    r = run(html, recent_counts=[40])
    kinds = " | ".join(r.errors)
    assert r.error_type == errors.PARSE_ERROR
    assert "Empty field: name" in kinds and "value-shape drift: score" in kinds and "Item count 3" in kinds
    assert set(r.failed_fields) == {"name", "score", "profile"}
    assert r.score == 0.0


def test_login_form_guess_only_blocks_a_page_that_also_fails():
    bp = from_dict({"fields": {"heading": {"css": "h1"}}})
    wall = ('<html><head><title>Sign in</title></head><body><h1>Sign in</h1><form>'
            '<input name="u"><input type="password" name="p"><button>Go</button></form></body></html>')
    assert run(wall, bp).passed     # the data it asks for is there: not treated as a wall
    r = run(wall, from_dict({"fields": {"heading": {"css": "h1"}, "price": {"css": ".price"}}}))
    assert r.error_type == errors.BLOCKED and "login wall" in r.errors[0]


def test_no_html_means_no_block_check():
    ex = extract(CHALLENGE, LIST_BP)
    assert validate(ex, LIST_BP).error_type == errors.PARSE_ERROR


# -- code-parser output (raw is the data stringified, or the data itself) -----------------------

CODE_BP = from_dict({"parser": "def parse(html):\n    return []\n",
                     "fields": {"name": {}, "score": {"type": "int"}, "extra": {"required": False}}})


def code_extraction(data, same: bool = False) -> Extraction:
    if same:
        raw = data
    elif isinstance(data, list):
        raw = [{k: (None if v is None else str(v)) for k, v in d.items()} if isinstance(d, dict) else d
               for d in data]
    else:
        raw = {k: (None if v is None else str(v)) for k, v in data.items()} if isinstance(data, dict) else data
    return Extraction(data, raw, len(data) if isinstance(data, list) else None)


@pytest.mark.parametrize("same", [False, True])
def test_code_parser_output_good(same):
    data = [{"name": f"P{i}", "score": i} for i in range(10)]
    r = validate(code_extraction(data, same), CODE_BP, recent_counts=[10])
    assert r.passed and r.item_count == 10


@pytest.mark.parametrize("same", [False, True])
def test_code_parser_output_problems(same):
    data = [{"name": f"P{i}", "score": "N/A"} for i in range(10)]
    r = validate(code_extraction(data, same), CODE_BP)
    assert r.error_type == errors.SCHEMA_MISMATCH and "score was numeric, now 'N/A'" in r.errors[0]
    missing = [{"score": i} for i in range(10)]
    r = validate(code_extraction(missing, same), CODE_BP)
    assert r.error_type == errors.PARSE_ERROR and r.errors == ["Missing field: name"]
    strings = [{"name": "x", "score": "12 points"}]
    assert validate(code_extraction(strings, same), CODE_BP).passed


def test_code_parser_output_of_the_wrong_type():
    r = validate(Extraction([{"name": {"a": 1}, "score": 1}], [{"name": "{'a': 1}", "score": "1"}], 1), CODE_BP)
    assert r.error_type == errors.SCHEMA_MISMATCH and r.errors == ["Invalid type for name: dict (1 of 1 items)"]
    r = validate(Extraction("oops", "oops", None), CODE_BP)
    assert r.error_type == errors.PARSE_ERROR and r.errors == ["No data returned (the parser gave str)"]
    r = validate(Extraction(["a", "b"], ["a", "b"], 2), CODE_BP)
    assert r.error_type == errors.PARSE_ERROR and "Missing field: name" in r.errors
    r = validate(Extraction([], [], 0), CODE_BP)
    assert r.error_type == errors.PARSE_ERROR and r.errors == ["No items: an empty list"]


# -- real pages: the site-change cases in tests/data/corpus -------------------------------------------------



def corpus_cases():
    for path in sorted(CORPUS.rglob("case.json")):
        case = json.loads(path.read_text())
        fields = {}
        for name, f in case["fields"].items():
            fields[name] = {"css": f["selector"], "type": f.get("type", "str")}
            if f.get("attr"):
                fields[name]["attr"] = f["attr"]
        yield path.parent, case, from_dict({"items": case["items"], "fields": fields})


def test_corpus_pages_validate_as_their_truth_says():
    """Every page a blueprint was written for passes; every page where the old selectors still
    work (no_break) passes against the before records; most real breaks are caught."""
    caught = breaks = 0
    for folder, case, bp in corpus_cases():
        before = (folder / "before.html").read_text(errors="replace")
        after = (folder / "after.html").read_text(errors="replace")
        ex = extract(before, bp)
        counts = [ex.item_count] if ex.item_count else None
        r = validate(ex, bp, html=before, recent_counts=counts)
        assert r.passed, (folder.name, r.errors)
        ra = validate(extract(after, bp), bp, html=after, recent_counts=counts, last_good=ex.data)
        if case.get("no_break"):
            assert ra.passed, (folder.name, ra.errors)
        else:
            breaks += 1
            caught += not ra.passed
    assert breaks > 50 and caught / breaks > 0.9


# -- the block-page scan is skipped only on pages that gave the expected records ------------------

MARKED = '<script>window._cf_chl_opt={cvId:"3"}</script>'   # a vendor marker left on a real page


def test_a_clean_list_of_records_is_not_scanned_for_block_markers():
    html = listing(GOOD_ROWS).replace("</body>", MARKED + "</body>")
    r = run(html, recent_counts=[20, 20])
    assert r.passed and r.item_count == 20


def test_a_short_list_or_a_failing_page_is_still_scanned():
    short = listing(GOOD_ROWS[:3]).replace("</body>", MARKED + "</body>")
    assert run(short).error_type == errors.BLOCKED
    # below the learned band's low end: not the records expected, so the scan runs
    many = listing(GOOD_ROWS[:6]).replace("</body>", MARKED + "</body>")
    assert run(many, recent_counts=[100, 100]).error_type == errors.BLOCKED
    # an error status is scanned whatever was extracted
    assert run(listing(GOOD_ROWS).replace("</body>", MARKED + "</body>"), status=403).error_type == errors.BLOCKED


# -- the Validator's compact stand-in for the last good records ---------------------------------------

def test_the_last_good_sample_gives_the_same_verdicts_as_the_records():
    from healerd.core.validate import last_good_sample

    columns = {
        "numbers": [str(i * 3) for i in range(20)],
        "urls": [f"/players/{i}" for i in range(20)],
        "dates": [f"2024-03-{i % 28 + 1:02d}" for i in range(20)],
        "words": ["Player"] * 20,
        "mixed": [str(i) if i % 2 else f"/p/{i}" for i in range(20)],      # no shape reaches 80 %
        "mostly": [str(i) for i in range(17)] + ["tba", "tba", "tba"],     # 85 % numbers
        "blank": [None] * 20,
    }
    pages = {
        "drifted to words": listing([row(i, name="Someone", score="n/a", href="about") for i in range(20)]),
        "fine": listing(GOOD_ROWS),
        "names drifted": listing([row(i, name="Player", href="#top") for i in range(20)]),
    }
    seen = set()
    for before_name, before in columns.items():
        for after_name, after in columns.items():
            last_good = [{"name": a, "score": b, "profile": c, "note": None}
                         for a, b, c in zip(before, after, columns["urls"])]
            sample = last_good_sample(last_good)
            assert len(sample) <= 2 and sum(len(r) for r in sample) <= 2 * len(last_good[0])
            for html in pages.values():
                ex = extract(html, LIST_BP)
                full = validate(ex, LIST_BP, html=html, last_good=last_good)
                small = validate(ex, LIST_BP, html=html, last_good=sample)
                assert full == small, (before_name, after_name, full.errors, small.errors)
                seen.add(full.passed)
    assert seen == {True, False}     # the cases include drift caught and clean pages
    assert last_good_sample(None) is None and last_good_sample([]) == []


# -- the stand-in as first written (a shape computed per use, no cache), to compare against ---------

_REF_URL = re.compile(r"^(https?://|//|/|\./|\.\./)\S*$|^[\w.-]+\.(html?|php|aspx?|jsp)(\?\S*)?$", re.I)
_REF_NUMBERISH = re.compile(r"^[^\w]{0,3}[-+]?\d[\d,.\s]*(%|[a-z]{1,6}\.?)?$", re.I)
_REF_DATE = re.compile(
    r"\b(\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}|\d{1,2}:\d{2}"
    r"|(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2}"
    r"|\d{1,2}\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*)", re.I)


def _ref_shape(v):
    if v is None or isinstance(v, bool):
        return "empty" if v is None else "text"
    if isinstance(v, (int, float)):
        return "number"
    s = " ".join(str(v).split())
    if not s:
        return "empty"
    if _REF_URL.match(s):
        return "url"
    if _REF_NUMBERISH.match(s):
        return "number"
    if len(s) <= 40 and _REF_DATE.search(s):
        return "date"
    return "text"


def _ref_blank(v):
    return v is None or (isinstance(v, str) and not v.strip())


def _ref_dominant(values):
    shapes = [_ref_shape(v) for v in values if not _ref_blank(v)]
    if not shapes:
        return None
    best = max(sorted(set(shapes)), key=shapes.count)
    return best if shapes.count(best) / len(shapes) >= 0.8 else None


def _ref_sample(last_good):
    if not last_good:
        return last_good
    recs = last_good if isinstance(last_good, list) else [last_good] if isinstance(last_good, dict) else []
    names = list(dict.fromkeys(k for r in recs if isinstance(r, dict) for k in r))
    out = [{}, {}]
    for name in names:
        values = [v for v in (r.get(name) for r in recs if isinstance(r, dict)) if not _ref_blank(v)]
        if not values:
            continue
        shape = _ref_dominant(values)
        if shape is not None:
            out[0][name] = next(v for v in values if _ref_shape(v) == shape)
        else:
            first = values[0]
            out[0][name] = first
            out[1][name] = next(v for v in values if _ref_shape(v) != _ref_shape(first))
    return out


class _Label(str):
    def __str__(self):
        return "https://example.org/label"


class _Words(str):
    def __str__(self):
        return "plain words"


_VALUE_PIECES = ["12", "2024", "-", "/", ".", ":", " ", "\t", "\n", "jan", "Feb", "MAR", "apr", "May", "jun", "JUL", "aug",
                 "Sep", "\u017fep", "oct", "Nov", "dec", "ember", "$", "%",
                 "pts", "http://", "//", "./", "x.html", "?q=1", "Player", "\u0663", "\u00e9", ",", "+", "a" * 45]


def _value(rng: random.Random):
    kind = rng.randrange(10)
    if kind == 0:
        return rng.choice([None, True, False, 0, 3, -2.5, float("nan"), "", "   ", ["a"], {"k": 1}, _Label("x")])
    if kind == 1:
        return "word " * rng.randrange(30, 60)          # longer than the shapes remembered
    return "".join(rng.choice(_VALUE_PIECES) for _ in range(rng.randrange(1, 7)))


def test_value_shapes_match_the_first_definition():
    rng = random.Random(7)
    for _ in range(20000):
        v = _value(rng)
        assert value_shape(v) == _ref_shape(v) == value_shape(v), v   # twice: remembered or not


def _judged(sample):
    """What validate reads of a sample or a record set, per field: the shape that dominates its
    values when it is one whose drift is judged (number, URL, date), with the first such value."""
    recs = sample if isinstance(sample, list) else [sample] if isinstance(sample, dict) else []
    names = {k for r in recs if isinstance(r, dict) for k in r}
    out = {}
    for name in names:
        values = [v for v in (r.get(name) for r in recs if isinstance(r, dict)) if not _ref_blank(v)]
        shape = _ref_dominant(values)
        if shape in ("number", "url", "date"):
            out[name] = (shape, next(v for v in values if _ref_shape(v) == shape))
    return out


def test_the_last_good_sample_keeps_what_the_first_definition_kept():
    """The stand-in may stop reading a field's values once its verdict is certain, so where no
    judged shape dominates it may keep other values than the first definition did; where one
    does, it keeps the same first value of it."""
    from healerd.core.validate import last_good_sample

    rng = random.Random(11)
    for _ in range(3000):
        names = rng.sample(["a", "b", "c", "d", "e", "f"], rng.randrange(1, 6))
        # a few shapes per field, so some fields have a dominant shape and some do not (and ties)
        pools = {n: [_value(rng) for _ in range(rng.randrange(1, 4))] for n in names}
        records = []
        for _ in range(rng.randrange(0, 60)):
            r = rng.random()
            if r < 0.05:
                records.append(rng.choice(["junk", 3, None, ["x"]]))
                continue
            records.append({n: rng.choice(pools[n]) for n in names if rng.random() < 0.9})
        data = records if rng.random() < 0.9 else (records[0] if records and isinstance(records[0], dict) else {})
        sample = last_good_sample(data)
        assert _judged(sample) == _judged(_ref_sample(data)) == _judged(data), data
        assert isinstance(sample, list) and len(sample) == 2 or sample == data
    for data in (None, [], {}, "text", 0, [{}], [{"a": None}], {"a": "1", "b": "x"}):
        assert last_good_sample(data) == _ref_sample(data)


def test_the_last_good_sample_decides_at_the_majority_threshold():
    from healerd.core.validate import last_good_sample

    def urls(k):
        return [f"/p/{i}" for i in range(k)]

    def words(k):
        return [f"Player {chr(97 + i % 26)}" for i in range(k)]

    for column in (urls(40) + words(10), words(10) + urls(40), urls(39) + words(11), words(11) + urls(39),
                   urls(8) + words(2), urls(7) + words(3), words(3) + urls(7), [3] + urls(8) + words(1),
                   urls(1) + words(4), ["12"] * 4 + ["/x"], ["/x"] + ["12"] * 4,
                   # a column of links is counted all at once: the whitespace value_shape drops,
                   # whitespace inside, newlines inside, letter case, and values that only look like str
                   [" /p/1\t"] * 8 + words(2), ["/p/ 1"] * 8 + words(2), ["/p/1\n/p/2"] * 8 + words(2),
                   ["/p/1", "/p/1\n"] + words(2) * 4, ["HTTP://X.ORG/a"] * 8 + ["x.PHP?q=1"] * 2,
                   ["/p/1"] + [_Label("x")] * 7 + words(2), ["/p/1"] * 2 + [_Label("x")] * 8,
                   ["/p/1"] + [_Words("/p/2")] * 9,
                   ["/p/1", "\u2028/p/2\x1c"] * 4 + words(2), ["/p/1", "2024-03-01"] * 5):
        data = [{"f": v} for v in column]
        assert _judged(last_good_sample(data)) == _judged(data), column


def _field_counts_reference(name, spec, records, raw, is_list):
    """The per-record loop of validate's field check as first written (every record through the
    general branch), kept here to hold the faster one to the same counts."""
    from healerd.core.validate import _is_blank, _is_number, _raw_for

    missing = empty = notnum = badtype = 0
    sample = None
    for i, rec in enumerate(records):
        if not isinstance(rec, dict) or name not in rec:
            missing += 1
            continue
        value = rec[name]
        if value is not None and not isinstance(value, (str, int, float, bool)):
            badtype += 1
            sample = sample or type(value).__name__
            continue
        raw_value = _raw_for(raw, i, is_list, name, value)
        if spec.type in ("int", "float") and not _is_number(value):
            raw_text = raw_value if isinstance(raw_value, str) else (None if raw_value is None else str(raw_value))
            if raw_text is not None and raw_text.strip():
                notnum += 1
                sample = sample if sample is not None else raw_text.strip()[:40]
            else:
                empty += 1
        elif _is_blank(value):
            empty += 1
    return missing, empty, notnum, badtype, sample


def test_the_field_check_counts_as_its_first_form_did_on_every_kind_of_value():
    from healerd.core.validate import field_counts

    class Text(str):
        pass

    class Whole(int):
        pass

    values = [None, "", "   ", "12", "$1,299.00", "abc", "n/a", " 7 ", 0, 3, -2, 2.5, float("nan"), float("inf"),
              True, False, [], {}, (1,), Text("5"), Text(" "), Whole(4), b"9"]
    raws = [None, "", "  ", "twelve", "12", 7]
    rng = random.Random(7)
    for trial in range(3000):
        n = rng.randint(1, 12)
        recs = []
        for _ in range(n):
            roll = rng.random()
            recs.append("junk" if roll < 0.03 else ({} if roll < 0.08 else {"f": rng.choice(values)}))
        raw = [({"f": rng.choice(raws)} if rng.random() < 0.8 else {}) for _ in range(n)] if rng.random() < 0.9 \
            else None
        is_list = rng.random() < 0.8
        for ftype in ("str", "int", "float"):
            spec = from_dict({"url": "http://x/", "items": "li", "fields": {"f": {"css": "b", "type": ftype}}}) \
                .fields["f"]
            got = field_counts("f", spec, recs, raw, is_list)
            assert got == _field_counts_reference("f", spec, recs, raw, is_list), (trial, ftype, recs, raw)


def test_a_required_field_null_in_exactly_the_tolerated_share_passes():
    # NULL_TOLERANCE is "at most 10 %": 2 of 20 is exactly that, and is tolerated; 3 of 20 is not.
    nulls = [f'<tr class="player"><td class="name"><a href="/p/n{i}">N</a></td></tr>' for i in range(3)]
    r = run(listing(GOOD_ROWS[:18] + nulls[:2]))
    assert r.passed and r.warnings == ["score: 2 of 20 items null (tolerated)"], (r.errors, r.warnings)
    r = run(listing(GOOD_ROWS[:17] + nulls))
    assert r.error_type == errors.SCHEMA_MISMATCH and r.errors == ["Empty field: score (3 of 20 items null)"]
