"""The static check of selectors (healerd.core.selector_bounds): `wait_for` is a selector too.

A healer's answer keeps the production blueprint's `wait_for` or brings its own; the browser
evaluates it on the page like any other selector, so the bounds apply to it, and the digest that
tells two answers apart reads it normalized.
"""

from __future__ import annotations

import pytest

from healerd.core import selector_bounds as sb
from healerd.core.blueprint import Blueprint, FieldSpec

FIELDS = {"n": FieldSpec("n", "td.n")}
BOMB = "div:has(div:has(td))"


def test_wait_for_is_one_of_the_blueprints_selectors():
    bp = Blueprint(fields=FIELDS, items="tr", fetch="browser", wait_for="table.ready")
    assert list(sb.blueprint_selectors(bp)) == [("items", "tr"), ("fields.n.css", "td.n"), ("wait_for", "table.ready")]
    assert ("wait_for", "table.ready") not in list(sb.blueprint_selectors(Blueprint(fields=FIELDS, items="tr")))


def test_a_wait_for_over_the_bounds_is_refused_naming_it():
    bp = Blueprint(fields=FIELDS, fetch="browser", wait_for=BOMB)
    with pytest.raises(sb.SelectorRefused) as info:
        sb.check_blueprint(bp)
    assert str(info.value).startswith("wait_for: the selector ") and "nest 2 levels deep" in str(info.value)
    # the person's own wait_for, kept by the candidate, is not refused for it
    sb.check_blueprint(bp, trusted=Blueprint(fields=FIELDS, fetch="browser", wait_for=BOMB))
    # a candidate that brings it where the person had another is
    with pytest.raises(sb.SelectorRefused):
        sb.check_blueprint(bp, trusted=Blueprint(fields=FIELDS, fetch="browser", wait_for="table"))


def test_the_digest_reads_wait_for_normalized():
    a = Blueprint(fields=FIELDS, fetch="browser", wait_for="div>td")
    b = Blueprint(fields=FIELDS, fetch="browser", wait_for="div  >  td")
    c = Blueprint(fields=FIELDS, fetch="browser", wait_for="div td")
    assert sb.candidate_digest(a) == sb.candidate_digest(b) != sb.candidate_digest(c)


@pytest.mark.parametrize("css", [
    "div:has(div:has(td)).x",            # nesting under a class, an attribute, an id, a pseudo-class
    "div.x:has(div:has(td))",
    "a[href]:not(:has(p))",
    "div#m:is(a:where(b))",
    "x:nth-child(2):has(y:has(z))",
    "div:has(p:not(.x))",                # :not() inside :has() is the second level
    "a:is(b, c:has(d))",                 # any selector of the list
    "div:has(> p:has(q))",
])
def test_nesting_is_counted_inside_every_kind_of_compound(css):
    assert sb.problem(css) == ":has(), :not(), :is(), :where() nest 2 levels deep (at most 1)"


@pytest.mark.parametrize("css", ["div:has(p).x", "div:has(p)[href]", "p:first-child:has(a)", "a#b.c[d]:not(.e)"])
def test_one_level_of_nesting_in_a_compound_passes(css):
    assert sb.problem(css) is None


def test_the_refusals_say_exactly_what_is_wrong():
    assert sb.problem("") == "not a selector"
    assert sb.problem("[") == "it cannot be parsed (Expected ident or '*', got <EOF at 1>)"
    for bad in (None, 42):
        with pytest.raises(sb.SelectorRefused) as info:
            sb.check_selector(bad)
        assert str(info.value) == f"the selector {str(bad)!r} is refused: not a selector"
    assert str(sb.SelectorRefused("a b", "why")) == "the selector 'a b' is refused: why"
    long = "x" * 301
    err = sb.SelectorRefused(long, "too long", "items")
    assert err.css == long and err.why == "too long" and err.key == "items"
    assert str(err) == f"items: the selector {('x' * 117 + '...')!r} is refused: too long"


def test_normalized_spellings():
    assert sb.normalized("a,b") == "a, b"
    assert sb.normalized("div>td ,  p") == "div > td, p"
    assert sb.normalized("[  x") == "[ x"       # unreadable: only its whitespace collapsed


def test_the_digest_of_a_candidate_is_stable():
    """Staged candidates are compared by this digest across restarts and releases: it must not change."""
    bp = Blueprint(fields={"n": FieldSpec("n", "td > a"), "p": FieldSpec("p", ["td.p", "span.p"], "int")},
                   url="https://example.org/caf\u00e9", items="table tr", fetch="browser", wait_for="table")
    assert sb.candidate_digest(bp) == "f271d38d5c4935dfe27f21b1fde89baf29f8525ce55a1503bc47438c389cd0a2"
    respelled = Blueprint(fields={"p": FieldSpec("p", ["td.p", "span.p"], "int"), "n": FieldSpec("n", "td>a")},
                          url="https://example.org/caf\u00e9", items="table  tr", fetch="browser", wait_for="table")
    assert sb.candidate_digest(respelled) == sb.candidate_digest(bp)
    other_items = Blueprint(fields=bp.fields, url=bp.url, items="table tr.x", fetch="browser", wait_for="table")
    other_list = Blueprint(fields={**bp.fields, "p": FieldSpec("p", ["td.p", "span.q"], "int")}, url=bp.url,
                           items="table tr", fetch="browser", wait_for="table")
    assert len({sb.candidate_digest(b) for b in (bp, other_items, other_list)}) == 3
    # a lone surrogate (text read from a broken page) still has a digest
    odd = Blueprint(fields=bp.fields, url="https://example.org/\udc80")
    assert len(sb.candidate_digest(odd)) == 64


@pytest.mark.parametrize("css", ["x:is(a, b):has(c)", "x:is(a):not(.b)", "x:not(.a):is(b)", "x:where(a):is(b)"])
def test_a_nesting_pseudo_class_before_another_is_measured_at_the_same_level(css):
    """Two functional pseudo-classes side by side in one compound nest one level each, not two."""
    assert sb.problem(css) is None
    assert sb.problem(css.replace("x:", "x:has(y):", 1)) is None


def test_a_refused_selector_is_shown_whole_up_to_120_characters():
    assert str(sb.SelectorRefused("x" * 120, "why")) == f"the selector {'x' * 120!r} is refused: why"
    assert str(sb.SelectorRefused("x" * 121, "why")) == f"the selector {'x' * 117 + '...'!r} is refused: why"
