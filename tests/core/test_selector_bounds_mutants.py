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
