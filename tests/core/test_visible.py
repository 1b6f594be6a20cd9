"""What a browser renders: hidden nodes emptied, candidates that read them found, and the judge
refusing them; an external candidate with no confidence is not promoted on validation alone."""

from __future__ import annotations

import pytest

from healerd.core.blueprint import from_dict
from healerd.core.extract import extract
from healerd.core.judge import PROMOTE, REJECT, STAGE, judge
from healerd.core.value_profile import learn
from healerd.core.visible import reads_hidden, visible_html

ROWS = '<li class="r"><b>Kettle</b><i>$24.00</i></li><li class="r"><b>Mug</b><i>$9.50</i></li>'


def page(hiding: str) -> str:
    return (f'<html><body><ul class="shop">{ROWS.replace("24.00", "26.00")}</ul>'
            f'<div class="copy" {hiding}><ul class="old">{ROWS}</ul></div></body></html>')


HIDINGS = ['style="display:none"', 'style="color: red; visibility: hidden !important"', "hidden",
           'aria-hidden="true"', 'style="DISPLAY : NONE;"']


def bp(items: str) -> object:
    return from_dict({"url": "http://127.0.0.1:9/", "items": items,
                      "fields": {"name": {"css": "b"}, "price": {"css": "i", "type": "float"}}})


@pytest.mark.parametrize("hiding", HIDINGS)
def test_a_candidate_reading_a_hidden_block_is_found(hiding):
    html = page(hiding)
    hidden_bp = bp("ul.old li.r")
    assert reads_hidden(hidden_bp, html, extract(html, hidden_bp).data)
    assert reads_hidden(bp("li.r"), html, extract(html, bp("li.r")).data)   # the copies among the rest
    shown = bp("ul.shop li.r")
    assert reads_hidden(shown, html, extract(html, shown).data) is None
    assert "Kettle" not in visible_html(html).split('class="copy"')[1]


@pytest.mark.parametrize("wrapper", ["<template>{}</template>", "<noscript>{}</noscript>"])
def test_template_and_noscript_are_never_rendered(wrapper):
    html = f'<html><body><ul class="shop">{ROWS}</ul>{wrapper.format("<p class=note>Select p.note</p>")}</body></html>'
    assert "Select p.note" not in visible_html(html)
    note = from_dict({"url": "http://127.0.0.1:9/", "fields": {"n": {"css": "p.note"}}})
    data = extract(html, note).data
    assert data["n"] is None or reads_hidden(note, html, data)


def test_a_value_partly_hidden_is_the_pages():
    html = '<html><body><p class="price">$24<span style="display:none">.00</span></p></body></html>'
    price = from_dict({"url": "http://127.0.0.1:9/", "fields": {"p": {"css": "p.price"}}})
    assert reads_hidden(price, html, extract(html, price).data) is None


def test_the_judge_rejects_hidden_reads_and_values_out_of_profile():
    html = page('style="display:none"')
    production, candidate = bp("ul.gone li.r"), bp("ul.old li.r")
    last_good = [{"name": "Kettle", "price": 24.0}, {"name": "Mug", "price": 9.5}]
    ex = extract(html, candidate)
    v = judge(candidate, production, ex, html, last_good=last_good, hidden="name is read from hidden nodes",
              confidence=0.9)
    assert v.action == REJECT and "does not show" in v.reason
    profiles = {"price": None}
    for day in range(3):
        profiles["price"] = learn(profiles["price"], [f"${24 + day}.00", f"${9 + day}.50"])
    teaser = html.replace("$26.00", "Sign in to see your price (save 15%)").replace(
        "<i>$9.50</i></li></ul><div", "<i>Sign in to see your price (save 15%)</i></li></ul><div")
    visible = bp("ul.shop li.r")
    v = judge(visible, production, extract(teaser, visible), teaser, last_good=last_good, profiles=profiles,
              confidence=0.9)
    assert v.action == REJECT and "profile" in v.reason, v.reason
    assert judge(visible, production, extract(html, visible), html, last_good=last_good, profiles=profiles,
                 confidence=0.9).action == PROMOTE


def test_an_external_candidate_without_confidence_needs_the_built_in_healers_evidence():
    html = page('class="other"')   # nothing hidden: two lists, the visible prices moved
    production, candidate = bp("ul.gone li.r"), bp("ul.shop li.r")
    last_good = [{"name": "Kettle", "price": 24.0}, {"name": "Mug", "price": 9.5}]
    ex = extract(html, candidate)
    assert judge(candidate, production, ex, html, last_good=last_good, origin="external").action == STAGE
    same = bp("ul.old li.r")
    assert judge(same, production, extract(html, same), html, last_good=last_good,
                 origin="external").action == PROMOTE   # reads every last good record back whole
