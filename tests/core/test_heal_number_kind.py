"""The built-in healer finding a number field by its kind, and a link told apart by its own text.

Small page pairs of our own (a pager and a product page, not any application's markup):
- a numeric field whose words went away ("Showing page 3 of 9" became the active page link "3")
  is found again by the bare number where the record's other fields place it, at a confidence
  under the promotion threshold (staged, never promoted);
- the same number already standing bare beside the record on the last good page is another
  field's, and a number far from the record is chance: both refused;
- a link field whose href two links now carry is the one whose words match the old link's.
"""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.fields.single_by_number import bare_number
from healerd.core.heal.pipeline import heal

PROMOTION_THRESHOLD = 0.75   # the Deployer promotes a heal only at this confidence or above


def _page(body: str) -> str:
    return f"<html><head><title>Stations</title></head><body>{body}</body></html>"


TABLE = ("<table class='stations'><tbody>"
         + "".join(f"<tr><td class='code'>{c}</td><td>{n}</td></tr>"
                   for c, n in [("ALD", "Alder"), ("BIR", "Birch"), ("CED", "Cedar"), ("DUN", "Dunmore")])
         + "</tbody></table>")

PAGER_BEFORE = _page(TABLE + "<nav><div class='pages'><span class='where'>Showing page 3 of 9</span>"
                     "<span class='fwd'><a href='?p=4'>Forward</a></span></div></nav>")
PAGER_AFTER = _page(TABLE + "<nav><ol class='steps'><li class='on'><a href='?p=3'>3</a></li>"
                    "<li><a href='?p=4'>4</a></li><li class='fwd'><a href='?p=4'>Forward</a></li></ol></nav>")
PAGER_BP = Blueprint(fields={
    "page": FieldSpec("page", "div.pages span.where", "int"),
    "forward": FieldSpec("forward", "div.pages span.fwd a", "str", "href"),
    "first": FieldSpec("first", "table.stations td.code", "str"),
})


def test_bare_number_needs_words_around_it():
    assert bare_number("Showing page 3 of 9") == "3"
    assert bare_number("3") is None
    assert bare_number("no digits") is None


def test_a_number_that_lost_its_words_is_found_where_the_record_places_it_and_only_staged():
    old = extract(PAGER_BEFORE, PAGER_BP).data
    assert old["page"] == 3
    res = heal(PAGER_BP, PAGER_BEFORE, old, PAGER_AFTER)
    assert res.ok, res.reason
    got = extract(PAGER_AFTER, res.blueprint).data
    assert got == {"page": 3, "forward": "?p=4", "first": "ALD"}
    assert res.details["page"]["evidence"] == "number"
    assert res.confidence < PROMOTION_THRESHOLD   # a bare number is weak: staged for a person


def test_a_link_sharing_its_href_with_a_neighbour_is_told_apart_by_its_words():
    """Both the "4" page link and the "Forward" link point at ?p=4: the field is the one saying Forward."""
    bp = Blueprint(fields={"forward": FieldSpec("forward", "div.pages span.fwd a", "str", "href")})
    res = heal(bp, PAGER_BEFORE, extract(PAGER_BEFORE, bp).data, PAGER_AFTER)
    assert res.ok, res.reason
    node = res.blueprint.fields["forward"].css
    assert "Forward" in _text_of(PAGER_AFTER, node)


def _text_of(html: str, css: str) -> str:
    from selectolax.lexbor import LexborHTMLParser
    n = LexborHTMLParser(html).css_first(css)
    return n.text() if n is not None else ""


def test_a_number_already_bare_beside_the_record_is_another_fields_and_is_refused():
    """The last good page already showed a bare "3" beside the pager (a count): the page field is gone."""
    before = _page(TABLE + "<nav><div class='pages'><span class='where'>Showing page 3 of 9</span>"
                   "<span class='count'>3</span><span class='fwd'><a href='?p=4'>Forward</a></span></div></nav>")
    after = _page(TABLE + "<nav><div class='pages'><span class='count'>3</span>"
                  "<span class='fwd'><a href='?p=4'>Forward</a></span></div></nav>")
    old = extract(before, PAGER_BP).data
    res = heal(PAGER_BP, before, old, after)
    assert not res.ok, res.reason
    assert "page" in res.reason


def test_a_number_only_far_from_the_record_is_refused():
    """The pager lost its "page 3 of 9"; a bare "3" turns up only in a footer, away from the pager."""
    after = _page(TABLE + "<nav><div class='pages'><span class='fwd'><a href='?p=4'>Forward</a></span></div></nav>"
                  "<footer><p>3</p></footer>")
    res = heal(PAGER_BP, PAGER_BEFORE, extract(PAGER_BEFORE, PAGER_BP).data, after)
    assert not res.ok, res.reason
    assert "page" in res.reason
