"""healerd.core.drift: scrapes that pass validation but read the wrong nodes are told apart from
redesigns whose data is right, on small pages of each shape."""

from __future__ import annotations

import pytest

from healerd.core.blueprint import from_dict
from healerd.core.drift import PLACEHOLDER, drift_reason, page_drift, page_locus, placeholder, placeholder_suspect
from healerd.core.extract import extract
from healerd.core.validate import last_good_sample, validate
from tests.support.driftpages import (
    PLAYERS,
    POSITIONAL_BP,
    PRODUCT_BP,
    SPECS_BP,
    TABLE_BP,
    league,
    league_swapped,
    product,
    specs,
    table,
)


def bp_of(d: dict):
    return from_dict(dict(d, url="http://127.0.0.1/x"))


def judged(bpd: dict, before: str, after: str):
    """(validation passed?, drift reason) for `after` judged against the last good `before`."""
    bp = bp_of(bpd)
    old = extract(before, bp).data
    new = extract(after, bp)
    counts = [len(old)] * 5 if isinstance(old, list) else None
    passed = validate(new, bp, recent_counts=counts, last_good=old).passed
    return passed, page_drift(bp, before, old, after, new.data)


def test_a_promoted_look_alike_row_is_drift():
    passed, why = judged(TABLE_BP, table(), table(promoted=("Zed", 99)))
    assert passed   # validation alone would store it
    assert why and "differ in structure from their siblings" in why and "promoted" in why


def test_a_dropped_column_under_positional_selectors_is_drift():
    passed, why = judged(POSITIONAL_BP, league(), league(drop_team=True))
    assert passed
    assert why and "score now holds what games held" in why


def test_a_decoy_card_before_the_real_one_is_drift():
    passed, why = judged(PRODUCT_BP, product(), product(decoy_before=True))
    assert passed
    assert why and "still on the page but no longer under the selectors" in why and "Trail Kettle" in why


def test_a_field_removed_while_a_recommended_block_keeps_one_is_drift():
    passed, why = judged(PRODUCT_BP, product(), product(stock_removed=True))
    assert passed
    assert why and why.startswith("stock is no longer inside the block holding title, price")


def test_a_placeholder_where_a_number_was_is_drift():
    bpd = dict(TABLE_BP, fields=dict(TABLE_BP["fields"], score={"css": "td.score"}))
    hidden = [(n, t, "Log in to see the score" if n == "Linus" else s, g, r) for n, t, s, g, r in PLAYERS]
    passed, why = judged(bpd, table(), table(hidden, wrap=True))
    assert passed   # one record of five: the column is still numbers
    assert why == "score shows a placeholder 'Log in to see the score' where the last good page had a number"


@pytest.mark.parametrize("text", ["Log in to see the price", "N/A", "—", "-", "Sign in for pricing", "call for price"])
def test_placeholders_are_recognised(text):
    assert PLACEHOLDER.match(text)


@pytest.mark.parametrize("text", ["$24.00", "12 in stock", "Nairobi", "Login page design", "Members' lounge"])
def test_values_are_not_placeholders(text):
    assert not PLACEHOLDER.match(text)


def test_a_redesign_whose_values_also_changed_is_not_drift():
    moved = [(n, t, s + 3, g + 1, r) for n, t, s, g, r in PLAYERS]
    passed, why = judged(TABLE_BP, table(), table(moved, wrap=True, teams=True))
    assert passed and why is None
    passed, why = judged(PRODUCT_BP, product(), product(price="$26.50", redesign=True))
    assert passed and why is None


def test_new_rows_of_the_same_shape_are_not_drift():
    more = PLAYERS + [("Barbara", "Lynx", 18, 7, 6)]
    assert judged(TABLE_BP, table(), table(more, wrap=True, teams=True)) == (True, None)


def test_the_same_records_are_never_drift_whatever_the_page():
    bp = bp_of(TABLE_BP)
    old = extract(table(), bp).data
    assert drift_reason(bp, table(), old, table(promoted=("Zed", 99)), old) is None


def test_the_locus_ignores_text_and_the_rest_of_the_page():
    bp = bp_of(TABLE_BP)
    moved = [(n + "x", t, s + 1, g, r) for n, t, s, g, r in PLAYERS]
    assert page_locus(table(), bp) == page_locus(table(moved).replace("home", "start page"), bp)
    assert page_locus(table(), bp) != page_locus(table(promoted=("Zed", 99)), bp)
    single = bp_of(PRODUCT_BP)
    assert page_locus(product(), single) == page_locus(product(price="$1.00"), single)
    assert page_locus(product(), single) != page_locus(product(decoy_before=True), single)


def test_a_column_added_to_every_row_moves_the_locus():
    bp = bp_of(TABLE_BP)
    assert page_locus(table(), bp) != page_locus(table(teams=True), bp)


def test_a_placeholder_is_suspected_from_the_validators_sample():
    sample = last_good_sample(extract(table(), bp_of(TABLE_BP)).data)
    hidden = [{"name": "Ada", "score": 31}, {"name": "Grace", "score": "N/A"}]
    assert placeholder_suspect(hidden, sample)
    assert not placeholder_suspect([{"name": "N/A", "score": 31}], sample)   # a text field may say N/A
    assert not placeholder_suspect(hidden, None)


def test_a_block_of_copies_picked_up_by_the_items_selector_is_drift():
    """A "related" list after the real one, with the same row markup: the records repeat."""
    related = table().replace("</table>", "</table><aside class='related'><table class='stats'>"
                              "<tr class='player'><td class='name'>Ada</td><td class='score'>31</td></tr>"
                              "</table></aside>")
    bpd = dict(TABLE_BP, items="table.stats tr.player")
    passed, why = judged(bpd, table(), related.replace(">24<", ">25<"))
    assert passed
    assert why == "1 of 6 records repeat another record exactly: the items selector also picks up a block of copies"


def test_a_login_wall_in_a_text_field_is_drift_but_a_dash_is_not():
    bpd = dict(PRODUCT_BP, fields=dict(PRODUCT_BP["fields"], title={"css": ".product .title"}))
    bp = bp_of(bpd)
    old = extract(product(), bp).data
    walled = dict(old, title="Sign in to view")
    assert drift_reason(bp, product(), old, product(redesign=True), walled) == \
        "title shows a placeholder 'Sign in to view' where the last good page had a value"
    assert placeholder_suspect([walled], [old])
    dashed = dict(old, title="—")   # a text field may say so
    assert placeholder(dashed, old, list(bp.fields)) is None
    assert not placeholder_suspect([dashed], [old])


def test_a_reordered_field_list_under_positional_selectors_is_drift():
    """Every tag stays where it was; only the labels moved: the locus must see them."""
    bp = bp_of(SPECS_BP)
    reordered = specs(order=("Model", "Brand", "Weight"))
    assert page_locus(specs(), bp) != page_locus(reordered, bp)
    passed, why = judged(SPECS_BP, specs(), reordered)
    assert passed
    assert why and why.startswith("brand now holds what model held")
    assert page_locus(specs(), bp) == page_locus(specs(weight="1.4 kg"), bp)   # a value is no heading
    assert judged(SPECS_BP, specs(), specs(weight="1.4 kg")) == (True, None)


def test_swapped_columns_under_positional_selectors_are_drift():
    passed, why = judged(POSITIONAL_BP, league(), league_swapped())
    assert passed
    assert why and "now holds what" in why and "held on the last good page" in why


def test_a_text_field_hidden_in_every_record_is_drift_but_in_one_record_is_not():
    bp = bp_of(TABLE_BP)
    old = extract(table(), bp).data
    hidden = [dict(r, name="N/A") for r in old]
    assert placeholder(hidden, old, ["name", "score"]) == \
        "name shows a placeholder 'N/A' in every record where the last good page had values"
    assert placeholder_suspect(hidden, last_good_sample(old))
    one = [dict(r, name="N/A") if i == 2 else r for i, r in enumerate(old)]
    assert placeholder(one, old, ["name", "score"]) is None
    assert not placeholder_suspect(one, last_good_sample(old))


def test_an_items_comment_is_part_of_its_shape_and_breaks_nothing():
    """A comment inside an item is a node without attributes of its own: the locus still reads
    it (as it always did, so a comment added into every row moves the locus), never fails."""
    bp = bp_of({"items": "li.r", "fields": {"name": {"css": "b"}, "price": {"css": "i"}}})
    rows = "".join(f'<li class="r r{k}"><b class="n">A{k}</b><i>{k}.5</i></li>' for k in range(3))
    commented = rows.replace("</b>", "</b><!-- price -->")
    plain = page_locus(f"<ul>{rows}</ul>", bp)
    with_comment = page_locus(f"<ul>{commented}</ul>", bp)
    assert len(plain) == len(with_comment) == 16
    assert plain != with_comment
    assert page_locus(f"<ul>{rows}</ul>", bp) == plain
