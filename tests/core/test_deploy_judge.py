"""The Deployer's judge (healerd/core/judge.py) on real pages: promote, reject with the reason, or stage."""

from __future__ import annotations

import json

import pytest

from healerd.core import errors
from healerd.core.blueprint import from_dict
from healerd.core.extract import extract
from healerd.core.judge import (
    LOW_CONFIDENCE,
    PROMOTE,
    REFUSAL_GUESS,
    REJECT,
    STAGE,
    Verdict,
    judge,
    never_auto_apply,
    reads_last_good_whole,
    value_shape,
)

URL = "http://shop.example/catalog"

# Production: the parser that worked on the last good page.
PROD = {
    "url": URL,
    "items": "li.product",
    "fields": {
        "name": {"css": ".name"},
        "price": {"css": ".price", "type": "float"},
        "link": {"css": "a.more", "attr": "href"},
    },
}


def bp(base: dict = PROD, url: str | None = None, items: str | None = None, **fields):
    """A blueprint like `base`; each keyword replaces (a dict) or drops (None) one field."""
    data = json.loads(json.dumps(base))
    if url is not None:
        data["url"] = url
    if items is not None:
        data["items"] = items
    for name, spec in fields.items():
        if spec is None:
            data["fields"].pop(name)
        else:
            data["fields"][name] = spec
    return from_dict(data)


def product(i: int, price_cls: str = "price", cls: str = "product", name: str | None = None,
            extra: str = "") -> str:
    name = f"Widget {i}" if name is None else name
    return (f'<li class="{cls}"><span class="name">{name}</span><span class="{price_cls}">${10 + i}.99</span>'
            f'<a class="more" href="/p/{i}">details</a><span class="brand">Acme</span>{extra}</li>')


def page(items: list[str]) -> str:
    return ("<html><head><title>Catalog</title></head><body><h1>Catalog</h1>"
            f"<ul class=\"grid\">{''.join(items)}</ul></body></html>")


def old_page(n: int = 20) -> str:
    return page([product(i) for i in range(n)])


def new_page(n: int = 20, **kw) -> str:
    """The redesign: the price's class is now `cost`, so production's price selector matches nothing."""
    return page([product(i, price_cls="cost", **kw) for i in range(n)])


PRODUCTION = bp()
FIXED = bp(price={"css": ".cost", "type": "float"})          # the healer's candidate
LAST_GOOD = extract(old_page(), PRODUCTION).data
COUNTS = [20, 20, 20]


def run(candidate, html: str, production=PRODUCTION, with_production: bool = True, last_good=LAST_GOOD,
        counts=COUNTS, **kw) -> Verdict:
    """Judge `candidate` on `html` exactly as the Deployer does: both parsers run on the live page."""
    return judge(candidate, production, extract(html, candidate), html,
                 production_ex=extract(html, production) if with_production else None,
                 recent_counts=counts, last_good=last_good, **kw)


# -- promote -----------------------------------------------------------------------------------

def test_a_candidate_that_validates_and_matches_the_last_good_shape_is_promoted():
    html = new_page()
    assert all(r["price"] is None for r in extract(html, PRODUCTION).data)  # what is being fixed
    v = run(FIXED, html)
    assert (v.action, v.reason, v.problems) == (PROMOTE, "validated on the live page", [])
    assert v.validation.passed and v.validation.item_count == 20
    d = json.loads(json.dumps(v.to_dict()))
    assert d["action"] == "promote" and d["validation"]["passed"] is True


def test_promotes_without_any_history():
    v = run(FIXED, new_page(), last_good=None, counts=None)
    assert v.action == PROMOTE


# -- reject: validation -----------------------------------------------------------------------

def test_a_candidate_that_fails_validation_is_rejected_with_the_reason():
    broken = bp(price={"css": ".still-wrong", "type": "float"})
    v = run(broken, new_page())
    assert v.action == REJECT
    assert v.reason.startswith("fails validation on the live page: ")
    assert "Empty field: price" in v.reason
    assert v.validation.error_type == errors.PARSE_ERROR and not v.validation.passed
    assert v.problems == v.validation.errors and v.problems
    assert v.to_dict()["validation"]["error_type"] == errors.PARSE_ERROR


def test_a_candidate_on_a_bot_challenge_is_rejected_as_blocked():
    html = ('<html><head><title>Just a moment...</title></head><body><div id="cf-challenge-running">'
            'Checking your browser before accessing the site.</div><noscript>Enable JavaScript and cookies to '
            'continue</noscript><script src="/cdn-cgi/challenge-platform/h/b/orchestrate/jsch/v1"></script>'
            '</body></html>')
    v = run(FIXED, html, status=403)
    assert v.action == REJECT and v.validation.error_type == errors.BLOCKED
    assert "Blocked" in v.reason


# -- reject: item count ------------------------------------------------------------------------

def featured_page(total: int, featured: int) -> str:
    return page([product(i, price_cls="cost", cls="product featured" if i < featured else "product")
                 for i in range(total)])


def test_an_item_count_far_below_the_last_good_is_rejected_when_the_page_did_not_change():
    # The page still lists 20 products; the candidate's item selector only catches the 5 featured ones.
    html = featured_page(20, 5)
    candidate = bp(items="li.featured", price={"css": ".cost", "type": "float"})
    v = run(candidate, html)
    assert v.validation.passed  # the validator's learned band (2-200) lets 5 through: this is the judge's check
    assert v.action == REJECT
    assert v.reason == "implausible: item count 5 is implausible against the last good 20"
    assert v.problems == ["item count 5 is implausible against the last good 20"]


def test_an_item_count_far_above_the_last_good_is_rejected():
    last_good = extract(old_page(10), PRODUCTION).data
    related = [product(100 + i, price_cls="cost", cls="related") for i in range(60)]
    html = page([product(i, price_cls="cost") for i in range(10)] + related)
    candidate = bp(items="li", price={"css": ".cost", "type": "float"})
    v = run(candidate, html, last_good=last_good, counts=[10, 10])
    assert v.validation.passed and v.validation.item_count == 70
    assert v.action == REJECT and "item count 70 is implausible against the last good 10" in v.reason


@pytest.mark.parametrize("featured, action", [(9, REJECT), (10, STAGE), (20, PROMOTE)])
def test_the_lower_bound_is_half_the_last_good_count(featured, action):
    # 10 of 20 passes the count; the 10 records it leaves out are still on the page (judge.left_out),
    # so it waits for a person rather than being promoted.
    candidate = bp(items="li.featured", price={"css": ".cost", "type": "float"})
    v = run(candidate, featured_page(20, featured))
    assert v.action == action
    if action == STAGE:
        assert "leaves out 10 last good record(s)" in v.reason


@pytest.mark.parametrize("extra, action", [(25, PROMOTE), (26, REJECT)])
def test_the_upper_bound_is_three_times_the_last_good_plus_five(extra, action):
    last_good = extract(old_page(10), PRODUCTION).data
    related = [product(100 + i, price_cls="cost", cls="related") for i in range(extra)]
    html = page([product(i, price_cls="cost") for i in range(10)] + related)
    candidate = bp(items="li", price={"css": ".cost", "type": "float"})
    assert run(candidate, html, last_good=last_good, counts=[10]).action == action  # 35 ok, 36 not


def test_a_page_that_really_shrank_is_not_held_against_the_candidate():
    # Only 6 products are left on the page: production's item selector finds 6 too.
    html = new_page(6)
    assert len(extract(html, PRODUCTION).data) == 6
    v = run(FIXED, html)
    assert v.action == PROMOTE, v.reason
    # Without the production parser's view of the live page the judge cannot tell: it rejects.
    assert run(FIXED, html, with_production=False).action == REJECT


# -- reject: value shape ----------------------------------------------------------------------

STR_PRICE = bp(price={"css": ".price"})                                 # price kept as text: "$10.99"
STR_LAST_GOOD = extract(old_page(), STR_PRICE).data


def test_a_required_value_that_turns_from_number_to_words_is_rejected():
    candidate = bp(STR_PRICE.to_dict(), price={"css": ".brand"})         # "Acme" where "$10.99" was
    v = run(candidate, new_page(), production=STR_PRICE, last_good=STR_LAST_GOOD)
    assert v.action == REJECT
    assert "value-shape drift: price was numeric" in v.reason and "Acme" in v.reason


def test_an_optional_value_that_turns_from_number_to_words_is_rejected_by_the_judge():
    # The validator never fails an optional field; the judge still sees the drift.
    production = bp(rating={"css": ".rating", "required": False})
    last_good = extract(page([product(i, extra=f'<span class="rating">{i % 5}.5</span>') for i in range(20)]),
                        production).data
    html = page([product(i, price_cls="cost", extra=f'<b class="stars">{i % 5}.5</b>') for i in range(20)])
    candidate = bp(production.to_dict(), price={"css": ".cost", "type": "float"},
                   rating={"css": ".brand", "required": False})
    v = run(candidate, html, production=production, last_good=last_good)
    assert v.validation.passed
    assert v.action == REJECT and v.problems == ["rating: values were number, now text"]
    # The same candidate with the right selector passes.
    good = bp(candidate.to_dict(), rating={"css": ".stars", "required": False})
    assert run(good, html, production=production, last_good=last_good).action == PROMOTE


def test_a_number_that_becomes_a_url_is_rejected():
    candidate = bp(STR_PRICE.to_dict(), price={"css": "a.more", "attr": "href"})   # "/p/3" where "$13.99" was
    v = run(candidate, new_page(), production=STR_PRICE, last_good=STR_LAST_GOOD)
    assert v.validation.passed  # not plain words: the validator lets it through
    assert v.action == REJECT and "price: values were number, now url" in v.problems


def test_links_that_turn_pretty_are_still_links_but_bare_words_are_not():
    # A site moving from "p3.html" to "p3/" links: a candidate reading the new links is right.
    production = bp(link={"css": "a.tag", "attr": "href", "required": False})
    last_good = extract(page([product(i, extra=f'<a class="tag" href="p{i}.html">t</a>') for i in range(20)]),
                        production).data
    html = page([product(i, extra=f'<a class="tag" href="p{i}/">t</a><a class="word" href="tag">t</a>')
                 for i in range(20)])
    v = run(production, html, production=production, last_good=last_good)
    assert v.action == PROMOTE, v.reason
    # The same field read from a bare word ("tag" shows no link's structure) is judged as text.
    words = bp(production.to_dict(), link={"css": "a.word", "attr": "href", "required": False})
    v = run(words, html, production=production, last_good=last_good)
    assert v.action == REJECT and "link: values were url, now text" in v.problems


def test_text_and_dates_may_trade_places():
    production = bp(note={"css": ".note", "required": False})
    last_good = extract(page([product(i, extra='<i class="note">Fresh stock arriving</i>') for i in range(20)]),
                        production).data
    html = page([product(i, price_cls="cost", extra=f'<em class="memo">Restock Jan {i + 1}</em>') for i in range(20)])
    candidate = bp(production.to_dict(), price={"css": ".cost", "type": "float"},
                   note={"css": ".memo", "required": False})
    assert value_shape("Restock Jan 5") == "date" and value_shape("Fresh stock arriving") == "text"
    assert run(candidate, html, production=production, last_good=last_good).action == PROMOTE


def test_no_shape_judgement_without_a_dominant_shape():
    production = bp(tag={"css": ".tag", "required": False})
    mixed = [("42" if i % 2 else "sale") for i in range(20)]           # half numbers, half words
    last_good = extract(page([product(i, extra=f'<i class="tag">{t}</i>') for i, t in enumerate(mixed)]),
                        production).data
    html = page([product(i, price_cls="cost", extra='<i class="label">clearance</i>') for i in range(20)])
    candidate = bp(production.to_dict(), price={"css": ".cost", "type": "float"},
                   tag={"css": ".label", "required": False})
    assert run(candidate, html, production=production, last_good=last_good).action == PROMOTE


# -- reject: nothing that worked may break -----------------------------------------------------

def test_a_candidate_that_changes_a_field_that_worked_is_rejected():
    # It fixes the price but also moves `name` (which still worked) onto the brand.
    candidate = bp(price={"css": ".cost", "type": "float"}, name={"css": ".brand"})
    v = run(candidate, new_page())
    assert v.validation.passed
    assert v.action == REJECT
    assert v.problems == ["name worked under production and changes under the candidate"]


def test_a_field_that_worked_may_not_break_in_a_single_record_either():
    production = from_dict({"url": URL, "fields": {"title": {"css": "h1"}, "price": {"css": ".price",
                                                                                      "type": "float"}}})
    html = '<html><body><h1>Blue kettle</h1><h2>Kitchen</h2><span class="cost">$25.00</span></body></html>'
    last_good = {"title": "Blue kettle", "price": 25.0}
    good = from_dict({"url": URL, "fields": {"title": {"css": "h1"}, "price": {"css": ".cost", "type": "float"}}})
    bad = from_dict({"url": URL, "fields": {"title": {"css": "h2"}, "price": {"css": ".cost", "type": "float"}}})
    assert run(good, html, production=production, last_good=last_good).action == PROMOTE
    v = run(bad, html, production=production, last_good=last_good)
    assert v.action == REJECT and "title worked under production and changes under the candidate" in v.problems


def test_a_candidate_may_restore_the_last_good_values_of_a_field_production_drifted_on():
    # The redesign reused `.name` for a sponsor line: production still "works" there, with wrong values.
    html = page([f'<li class="product"><span class="name">Sponsored</span><b class="title">Widget {i}</b>'
                 f'<span class="cost">${10 + i}.99</span><a class="more" href="/p/{i}">details</a></li>'
                 for i in range(20)])
    candidate = bp(price={"css": ".cost", "type": "float"}, name={"css": ".title"})
    assert run(candidate, html).action == PROMOTE
    # Without the last good records there is nothing to say the change is a restoration.
    assert run(candidate, html, last_good=None).action == REJECT


def test_a_field_that_no_longer_tells_the_records_apart_did_not_work():
    # The redesign put a group link first: production's `a` now reads each record's group, and the
    # records' own links moved one place on (and now name the release, so they are not the last good values).
    groups = ["/g/a", "/g/a", "/g/a", "/g/b", "/g/b", "/g/b"]
    html = page([f'<li class="product"><span class="name">Widget {i}</span><span class="price">${10 + i}.99</span>'
                 f'<a href="{groups[i]}">group</a><a href="/v2/p/{i}">details</a></li>' for i in range(6)])
    production = bp(link={"css": "a", "attr": "href"})
    last_good = extract(old_page(6), PRODUCTION).data
    moved = bp(link={"css": "a:nth-of-type(2)", "attr": "href"})
    assert run(moved, html, production=production, last_good=last_good, counts=None).action == PROMOTE
    # the fields that still tell the records apart keep their protection
    v = run(bp(link={"css": "a:nth-of-type(2)", "attr": "href"}, name={"css": ".price"}), html,
            production=production, last_good=last_good, counts=None)
    assert v.action == REJECT and "name worked under production and changes under the candidate" in v.problems


# -- stage: never auto-applied -----------------------------------------------------------------

def test_a_candidate_that_drops_a_field_is_staged():
    candidate = bp(price={"css": ".cost", "type": "float"}, link=None)
    v = run(candidate, new_page())
    assert v.action == STAGE
    assert v.reason == "the candidate drops link: a field change needs a person (healerctl approve)"
    assert v.validation.passed


def test_a_candidate_that_renames_a_field_is_staged():
    candidate = bp(price=None, cost={"css": ".cost", "type": "float"})
    v = run(candidate, new_page(), last_good=None)
    assert v.action == STAGE
    assert "drops price and adds cost" in v.reason and "healerctl approve" in v.reason


@pytest.mark.parametrize("spec", [{"css": ".cost", "type": "int"}, {"css": ".cost", "type": "float", "required": False}])
def test_a_candidate_that_changes_type_or_requiredness_is_staged(spec):
    v = run(bp(price=spec), new_page())
    assert v.action == STAGE and "changes the type or requiredness of price" in v.reason


def test_a_candidate_that_moves_the_source_to_another_host_is_staged():
    candidate = bp(FIXED.to_dict(), url="http://mirror.example/catalog")
    v = run(candidate, new_page())
    assert v.action == STAGE
    assert v.reason == ("the candidate moves the source from shop.example to mirror.example: "
                        "needs a person (healerctl approve)")


def test_a_host_move_is_staged_even_when_values_differ():
    # Another host is another page: "nothing that worked may break" is for the person to judge.
    candidate = bp(url="http://mirror.example/catalog", price={"css": ".cost", "type": "float"},
                   name={"css": ".brand"})
    assert run(candidate, new_page()).action == STAGE


def test_a_move_on_the_same_host_is_promoted():
    candidate = bp(FIXED.to_dict(), url="http://shop.example/new/catalog?page=1")
    assert run(candidate, new_page()).action == PROMOTE


def test_a_held_candidate_that_fails_is_still_rejected():
    dropped_and_broken = bp(price={"css": ".nothing", "type": "float"}, link=None)
    assert run(dropped_and_broken, new_page()).action == REJECT
    dropped_and_implausible = bp(items="li.featured", price={"css": ".cost", "type": "float"}, link=None)
    v = run(dropped_and_implausible, featured_page(20, 4))
    assert v.action == REJECT and "item count 4" in v.reason


def test_a_source_flagged_for_review_stages_a_good_candidate():
    v = run(FIXED, new_page(), flagged_for_review=True)
    assert v.action == STAGE and "changed too often" in v.reason and "healerctl approve" in v.reason
    assert run(bp(price={"css": ".nope", "type": "float"}), new_page(), flagged_for_review=True).action == REJECT


def repriced_page(n: int = 20) -> str:
    """The redesign of new_page, and every price changed with it."""
    return page([product(i, price_cls="cost").replace(f"${10 + i}.99", f"${20 + i}.49") for i in range(n)])


def test_a_low_confidence_repair_is_staged_for_a_person():
    v = run(FIXED, repriced_page(), confidence=LOW_CONFIDENCE - 0.01)
    assert v.action == STAGE and "low-confidence" in v.reason and "healerctl approve" in v.reason
    assert f"{LOW_CONFIDENCE - 0.01:.2f}" in v.reason
    # at the threshold, above it, or with no confidence given (external healer, memory): promoted
    for conf in (LOW_CONFIDENCE, 0.95, None):
        assert run(FIXED, repriced_page(), confidence=conf).action == PROMOTE, conf
    # a low-confidence candidate that fails is rejected, not staged
    assert run(bp(price={"css": ".nope", "type": "float"}), new_page(), confidence=0.3).action == REJECT


def test_a_low_confidence_repair_that_reads_every_last_good_record_back_whole_is_promoted():
    # the old values all found again: the healer's low confidence is outweighed
    v = run(FIXED, new_page(), confidence=0.5)
    assert v.action == PROMOTE and "reads every last good record back whole" in v.reason and "0.50" in v.reason
    # ... but not when one price of twenty changed, one record is missing, or nothing was read
    one_repriced = new_page().replace("$15.99", "$16.49")
    assert run(FIXED, one_repriced, confidence=0.5).action == STAGE
    assert run(FIXED, new_page(19), confidence=0.5, counts=None).action == STAGE
    assert run(FIXED, new_page(), confidence=0.5, last_good=None).action == STAGE
    # a refusal's best guess (two places carry the same values, say) is for a person, whatever it reads
    assert run(FIXED, new_page(), confidence=REFUSAL_GUESS).action == STAGE


@pytest.mark.parametrize("data, last_good, whole", [
    ({"a": "x  y"}, {"a": "x y"}, True),                       # whitespace aside
    ([{"a": "1"}, {"a": "2"}], [{"a": "2"}, {"a": "1"}], False),  # the same records out of order
    ([{"a": "1"}], [{"a": "1"}, {"a": "1"}], False),
    ([{"a": None}], [{"a": None}], False),                      # nothing read is no evidence
    ([{"a": "1", "b": None}], [{"a": "1", "b": None}], True),
    ([{"a": "1"}], [{"a": "1", "b": None}], False),            # another set of fields
    ({"a": 3.5}, {"a": 3.5}, True),
    ({"a": 3.5}, {"a": 3.25}, False),
    ([], [], False),
])
def test_reads_last_good_whole(data, last_good, whole):
    assert reads_last_good_whole(data, last_good) is whole


# -- the helpers -------------------------------------------------------------------------------

def test_never_auto_apply_is_none_for_a_selector_change_only():
    assert never_auto_apply(PRODUCTION, FIXED) is None
    assert never_auto_apply(PRODUCTION, bp(items="ul.grid > li")) is None
    assert never_auto_apply(PRODUCTION, bp(url="HTTP://SHOP.EXAMPLE/other")) is None  # host names are case-blind


@pytest.mark.parametrize("value, shape", [
    (None, "empty"), ("", "empty"), (12, "number"), (1.5, "number"), ("$1,299.00", "number"), ("-3", "number"),
    ("45%", "number"), ("https://x.example/a", "url"), ("/p/1", "url"), ("2024-01-05", "date"),
    ("Jan 5, 2024", "date"), ("12/31/2023", "date"), ("hello world", "text"), ("/ not a url", "text"),
])
def test_value_shape(value, shape):
    assert value_shape(value) == shape
