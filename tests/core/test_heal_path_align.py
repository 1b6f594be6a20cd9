"""The built-in healer telling apart two places that carry a field's old value by their whole path.

Small page pairs of our own: a redesign renders a dish's name twice, as the page heading in a new
header and as the card's own title inside the layout the old page had. The node alone (tag,
classes, four ancestors) finds both about as alike; the path from the root keeps the layout's
names and settles it, at a confidence under the promotion threshold. Two places whose paths are
as alike stay refused.
"""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.fields.single_by_path import path_of, path_similarity
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.pipeline import heal

PROMOTION_THRESHOLD = 0.75


def _page(body: str) -> str:
    return f"<html><head><title>Dishes</title></head><body>{body}</body></html>"


BEFORE = _page("<main class='layout'><section class='col-main'><div class='dish-card'>"
               "<h1 class='dish-name'>Braised Leeks</h1><p class='blurb'>Slow and soft.</p></div></section>"
               "<aside class='col-side'><p>Seasonal</p></aside></main>")
AFTER = _page("<header class='top'><div class='hero'><h1 class='hero-heading'>Braised Leeks</h1></div></header>"
              "<main class='layout'><section class='col-main'><div class='shell'><article class='dish-card'>"
              "<h2 class='dish-name'>Braised Leeks</h2><p class='blurb'>Slow and soft.</p></article></div>"
              "</section><aside class='col-side'><p>Seasonal</p></aside></main>")
BP = Blueprint(fields={"name": FieldSpec("name", "div.dish-card h1.dish-name", "str")})


def test_the_old_path_is_kept_by_the_card_title_more_than_by_the_new_heading():
    before, after = Page(BEFORE), Page(AFTER)
    old = path_of(before, before.index_of(before.tree.css_first("h1.dish-name")))
    card = path_similarity(old, path_of(after, after.index_of(after.tree.css_first("h2.dish-name"))))
    heading = path_similarity(old, path_of(after, after.index_of(after.tree.css_first("h1.hero-heading"))))
    assert card > heading + 0.1, (card, heading)


def test_two_places_with_the_old_value_are_told_apart_by_their_path_and_only_staged():
    res = heal(BP, BEFORE, extract(BEFORE, BP).data, AFTER)
    assert res.ok, res.reason
    css = res.blueprint.fields["name"].css
    assert Page(AFTER).tree.css_first(css).tag == "h2", css
    assert res.details["name"]["evidence"] == "path"
    assert res.confidence < PROMOTION_THRESHOLD


def test_two_places_whose_paths_are_as_alike_stay_refused():
    """The card rendered twice, in two columns named alike: nothing tells which is the field's."""
    card = ("<div class='shell'><article class='dish-card'><h2 class='dish-name'>Braised Leeks</h2>"
            "<p class='blurb'>Slow and soft.</p></article></div>")
    after = _page("<main class='layout'><section class='col-main'>" + card + "</section>"
                  "<section class='col-main-alt'>" + card.replace("Slow and soft.", "Also try") + "</section></main>")
    res = heal(BP, BEFORE, extract(BEFORE, BP).data, after)
    assert not res.ok, res.reason
    assert "two places" in res.reason
