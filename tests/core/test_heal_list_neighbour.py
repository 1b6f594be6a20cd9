"""A single record's field kept in place only when its new value is no neighbour's old one (single_record)."""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.pipeline import heal

BP = Blueprint(fields={
    "title": FieldSpec("title", "article h1.entry-title", "str"),
    "first_tag": FieldSpec("first_tag", "footer.post-info p.tags a:nth-of-type(1)", "str"),
})

BEFORE = ("<html><body><article><h1 class='entry-title'>Rye crackers that keep</h1>"
          "<footer class='post-info'><p class='tags'>tags: <a href='/tag/crackers.html'>crackers</a> "
          "<a href='/tag/rye.html'>rye</a></p></footer><p>Thin, seedy crackers.</p></article></body></html>")


def test_the_next_short_item_of_the_list_slid_into_place_is_not_kept_as_a_changed_value():
    """The first tag moved away (to the page's foot, a label merged in): 'rye', the list's next item, now
    comes first. It is short, but the last good page showed it in a look-alike of the old node."""
    after = ("<html><body><article><h1 class='entry-title'>Rye crackers that keep</h1>"
             "<footer class='post-info'><p class='tags'>tags: <a href='/tag/rye.html'>rye</a></p></footer>"
             "<p>Thin, seedy crackers.</p></article>"
             "<footer class='site'><p>Filed under <a href='/tag/crackers.html'>First tag: crackers</a></p></footer>"
             "</body></html>")
    res = heal(BP, BEFORE, extract(BEFORE, BP).data, after)
    assert not res.ok, res.reason
    assert "first_tag" in res.reason and "'rye'" in res.reason


def test_a_short_value_changed_in_place_is_still_kept():
    """The same place saying a short value the last good page never showed: the value changed in place."""
    after = BEFORE.replace(">crackers</a>", ">wafers</a>")
    res = heal(BP, BEFORE, extract(BEFORE, BP).data, after)
    assert res.ok and extract(after, res.blueprint).data["first_tag"] == "wafers", res.reason


RECIPE = Blueprint(fields={
    "title": FieldSpec("title", "div.recipe header h2", "str"),
    "servings": FieldSpec("servings", "div.recipe-details span.yield", "int"),
})


def recipe(servings: str, extra: str = "") -> str:
    return ("<html><body><div class='recipe'><header><h2>Pork fried rice</h2></header>"
            f"<div class='recipe-details'><span class='label'>Serves</span> <span class='yield'>{servings}</span></div>"
            f"<ol class='steps'><li>Heat the oil for <em>5</em> minutes.</li></ol>{extra}</div></body></html>")


def test_a_short_number_changed_in_place_is_kept_though_the_page_showed_it_elsewhere():
    """Servings 4 -> 5 in place; the last good page said '5' only in a step (no look-alike of the
    old node), and the new page says '4' in an unlike node: the value changed in place."""
    before = recipe("4")
    after = recipe("5", "<p class='scale'>Scale: <span data-amount='4'>4</span></p>")
    res = heal(RECIPE, before, extract(before, RECIPE).data, after)
    assert res.ok, res.reason
    assert extract(after, res.blueprint).data["servings"] == 5, res.reason
