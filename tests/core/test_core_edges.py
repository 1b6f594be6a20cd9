"""Edges of the core rules that plausible one-line bugs would move (see bench/mutation.py).

Each test pins one boundary or one rule the rest of the suite only exercised from afar: the
item-count band's upper edge, a missing field versus an empty one, drift judged only against a
dominant shape, truncation of int fields, empty attributes, and errors spending the attempt budget.
"""

from __future__ import annotations

import json
import random

import pytest

from healerd.config import Config
from healerd.core import errors
from healerd.core.blueprint import from_dict
from healerd.core.extract import Extraction, extract
from healerd.core.validate import item_band, validate
from healerd.store.db import open_db
from healerd.store.ledger import Ledger
from healerd.store.lifecycle import QUARANTINED
from healerd.store.sql import scalar

LIST_BP = from_dict({"items": "li", "fields": {"name": {"css": ".n"}, "price": {"css": ".p", "type": "float"}}})


def listing(n: int) -> str:
    return "<ul>" + "".join(f'<li><b class="n">Item {i}</b><i class="p">{i}.50</i></li>' for i in range(n)) + "</ul>"


# -- the item-count band ---------------------------------------------------------------------------

@pytest.mark.parametrize("n,passed", [(100, True), (101, False), (2, True), (1, False)])
def test_the_band_edges_are_inclusive(n, passed):
    """Usual 10 items: 2..100 pass (more than ten times, or a tenth or fewer, fail)."""
    assert item_band([10] * 5) == (2, 100)
    html = listing(n)
    got = validate(extract(html, LIST_BP), LIST_BP, recent_counts=[10] * 5, html=html)
    assert got.passed is passed
    if not passed:
        assert got.error_type == errors.SCHEMA_MISMATCH and "Item count" in got.errors[0]


# -- a missing field is said as missing ---------------------------------------------------------------

def test_a_single_record_without_the_field_is_missing_not_empty():
    bp = from_dict({"fields": {"title": {"css": "h1"}, "price": {"css": ".p", "type": "float"}}})
    got = validate(Extraction({"title": "A hat"}, {"title": "A hat"}, None), bp)
    assert got.error_type == errors.PARSE_ERROR and got.errors == ["Missing field: price"]


# -- drift is judged only against a dominant shape ------------------------------------------------------

def test_no_drift_without_a_dominant_shape_in_the_last_good_values():
    bp = from_dict({"items": "li", "fields": {"v": {"css": ".v"}}})
    last_good = [{"v": v} for v in ("12", "14", "http://a.test/b", "http://a.test/c", "2024-01-01")]
    words = [{"v": w} for w in ("alpha", "beta", "gamma")]
    assert validate(Extraction(words, words, 3), bp, last_good=last_good).passed
    numbers = [{"v": v} for v in ("12", "14", "15", "16", "17")]
    drifted = validate(Extraction(words, words, 3), bp, last_good=numbers)
    assert drifted.error_type == errors.SCHEMA_MISMATCH and "drift" in drifted.errors[0]


# -- extraction details -----------------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [("7.9 stars", 7), ("-2.5 left", -2), ("0.99", 0)])
def test_int_fields_take_the_integer_part_of_the_first_number(text, expected):
    bp = from_dict({"fields": {"v": {"css": "p", "type": "int"}}})
    assert extract(f"<p>{text}</p>", bp).data == {"v": expected}


def test_an_empty_attribute_is_an_empty_string_not_a_missing_node():
    bp = from_dict({"fields": {"link": {"css": "a", "attr": "href"}, "alt": {"css": "img", "attr": "alt"}}})
    got = extract('<a href="">x</a><img src="/i.png">', bp)
    assert got.raw == {"link": "", "alt": None}


# -- the attempt budget counts failed attempts of every kind ---------------------------------------------

@pytest.mark.parametrize("outcome", ["error", "rejected"])
def test_failed_attempts_of_either_kind_spend_the_budget(tmp_path, outcome):
    conn = open_db(tmp_path / "healerd.db")
    led = Ledger(conn, Config(), clock=lambda: 1_700_000_000.0, rng=random.Random(1))
    try:
        led.add_source("shop", from_dict({"url": "http://shop.test/", "items": "li", "fields": {"n": {"css": ".n"}}}))
        led.fire("shop", "fail", "test")
        budget = led.config.doctor.max_fix_attempts
        for i in range(budget):
            fx = led.record_fix(name="shop", error_type="PARSE_ERROR", strategy="builtin", outcome=outcome,
                                reason=f"attempt {i + 1}")
        assert fx.result == {"attempts_used": budget, "state": QUARANTINED}
        assert scalar(conn, "SELECT state FROM source_health WHERE source_name = 'shop'") == QUARANTINED
    finally:
        led.resync_models()
        conn.close()


# -- a fix the Doctor deploys: HEALED before the next scrape can say RECOVERED ----------------------------

def test_a_deployed_fix_is_scraped_once_its_fix_is_recorded(tmp_path):
    from healerd.store import versions

    clock = [1_700_000_000.0]
    conn = open_db(tmp_path / "healerd.db")
    led = Ledger(conn, Config(), clock=lambda: clock[0], rng=random.Random(1))
    next_run = "SELECT next_run_at FROM sources WHERE name = 'shop'"
    try:
        bp = from_dict({"url": "http://shop.test/", "items": "li", "fields": {"n": {"css": ".n"}}})
        led.add_source("shop", bp)
        led.fire("shop", "fail", "test")
        conn.execute("UPDATE sources SET next_run_at = ? WHERE name = 'shop'", (clock[0] + 600,))
        v = led.stage_version("shop", from_dict({"url": "http://shop.test/", "items": "div", "fields": {"n": {"css": ".n"}}}),
                              "builtin")
        clock[0] += 5
        led.promote("shop", v, rescrape=False)
        assert scalar(conn, next_run) == clock[0] - 5 + 600          # not yet: the fix is not recorded
        assert versions.production(conn, "shop")[0] == v
        clock[0] += 5
        fx = led.record_fix(name="shop", error_type="PARSE_ERROR", strategy="builtin", outcome="promoted",
                            reason="repaired", version=v)
        assert [a["event"] for a in fx.alerts] == ["HEALED"] and scalar(conn, next_run) == clock[0]
        led.promote("shop", 1)                                        # a rollback or an approval: at once
        assert scalar(conn, next_run) == clock[0]
    finally:
        led.resync_models()
        conn.close()


# -- blueprint selectors ---------------------------------------------------------------------------

@pytest.mark.parametrize("css", ["td..score", "div[", "a:nth-child(", ":unknown-pseudo-class-x", "p" + " >" * 400])
def test_a_bad_selector_is_refused_every_time_it_is_read(css):
    """selectolax's verdict on a selector is remembered (blueprints are parsed again and again);
    a refusal must be as remembered as an acceptance, short selectors and long ones alike."""
    from healerd.core.blueprint import BlueprintError, from_json

    good = {"fields": {"ok": {"css": "td.score"}, "bad": {"css": ["td.score", css]}}}
    messages = []
    for _ in range(2):
        with pytest.raises(BlueprintError) as caught:
            from_dict(good)
        messages.append(str(caught.value))
        with pytest.raises(BlueprintError):
            from_json(json.dumps(good))
    assert messages[0] == messages[1] and "fields.bad.css[1]" in messages[0] and "cannot parse" in messages[0]
    good["fields"]["bad"]["css"] = "td.score b"
    assert from_dict(good).fields["bad"].css == "td.score b"
