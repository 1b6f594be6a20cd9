"""The built-in healer following a listing's attribute field to the node's text when the attribute was dropped.

Small page pairs of our own: a side menu whose links carried their name twice (`title` and text);
a release drops the redundant `title` and wraps the text in a span. The field follows the text,
at a lower confidence. Where the text was not a copy of the attribute on the last good page (a
caption beside a link saying something else), or the attribute was dropped with the text changed, the field
stays refused.
"""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.pipeline import heal

PROMOTION_THRESHOLD = 0.75
PAGES = [("overview", "Overview"), ("install", "Install"), ("settings", "Settings"), ("upgrade", "Upgrade")]


def _page(items: str) -> str:
    return f"<html><head><title>Manual</title></head><body><nav class='side'><ul class='menu'>{items}</ul></nav></body></html>"


def _before(title=lambda name: name) -> str:
    return _page("".join(f"<li class='entry'><a class='entry-link' href='/{slug}/' title='{title(name)}'>{name}</a></li>"
                         for slug, name in PAGES))


def _after(text=lambda name: name) -> str:
    return _page("".join(f"<li class='entry'><a class='entry-link' href='/{slug}/'><span class='label'>{text(name)}</span>"
                         "</a></li>" for slug, name in PAGES))


BP = Blueprint(fields={"name": FieldSpec("name", "a.entry-link", "str", "title"),
                       "href": FieldSpec("href", "a.entry-link", "str", "href")}, items="ul.menu li.entry")


def test_a_dropped_attribute_whose_text_was_its_copy_is_followed_to_the_text_at_a_lower_confidence():
    before, after = _before(), _after()
    res = heal(BP, before, extract(before, BP).data, after)
    assert res.ok, res.reason
    assert res.blueprint.fields["name"].attr is None
    assert [r["name"] for r in extract(after, res.blueprint).data] == [n for _s, n in PAGES]
    assert res.confidence < PROMOTION_THRESHOLD


def test_an_attribute_whose_link_text_said_something_else_is_not_followed_to_a_caption():
    """The link said "Go" under the title "Install"; a caption beside it also says "Install". The title
    dropped, the caption is not the link's text: it was never shown to be the same data, so refused."""
    def page(with_title: bool) -> str:
        return _page("".join(f"<li class='entry'><a class='entry-link' href='/{slug}/'"
                             + (f" title='{name}'" if with_title else "")
                             + f">Go</a><small class='caption'>{name}</small></li>" for slug, name in PAGES))
    before = page(True)
    res = heal(BP, before, extract(before, BP).data, page(False))
    assert not res.ok, res.reason
    assert "name" in res.reason


def test_a_dropped_attribute_with_its_text_changed_too_is_refused():
    before = _before()
    res = heal(BP, before, extract(before, BP).data, _after(lambda name: name.upper() + " GUIDE"))
    assert not res.ok, res.reason
