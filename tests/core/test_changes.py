"""Change sets between consecutive scrapes (healerd.core.changes), and the blueprint `key`."""

from __future__ import annotations

import pytest

from healerd.core.blueprint import BlueprintError, from_dict
from healerd.core.changes import change_set, size

A = {"name": "Ada", "price": 10}
B = {"name": "Bob", "price": 20}


def test_a_price_change_is_one_changed_entry_with_only_the_field_that_differs():
    before = [A, B, {"name": "Cy", "price": 5, "url": "/c"}]
    after = [A, {"name": "Bob", "price": 25}, {"name": "Cy", "price": 5, "url": "/c"}]
    cs = change_set(before, after, ("name",))
    assert cs == {"added": [], "removed": [],
                  "changed": [{"key": "Bob", "before": {"price": 20}, "after": {"price": 25}}]}
    assert size(cs) == 1


def test_with_a_key_added_and_removed_records_are_named_by_their_key():
    cs = change_set([A, B], [B, {"name": "Di", "price": 1}], ("name",))
    assert cs["added"] == [{"name": "Di", "price": 1}]
    assert cs["removed"] == [A]
    assert cs["changed"] == []


def test_a_composite_key_is_shown_as_an_object_of_its_fields():
    before = [{"team": "x", "player": "p", "score": 1}, {"team": "y", "player": "p", "score": 1}]
    after = [{"team": "x", "player": "p", "score": 2}, {"team": "y", "player": "p", "score": 1}]
    cs = change_set(before, after, ("team", "player"))
    assert cs["changed"] == [{"key": {"team": "x", "player": "p"}, "before": {"score": 1}, "after": {"score": 2}}]


def test_without_a_key_records_are_matched_whole():
    cs = change_set([A, B], [A, {"name": "Bob", "price": 25}])
    assert cs == {"added": [{"name": "Bob", "price": 25}], "removed": [B], "changed": []}


def test_the_same_data_in_another_order_or_field_order_is_no_change():
    # A healed redesign gives the same values, its parser may build the dicts in another order.
    assert size(change_set([A, B], [{"price": 20, "name": "Bob"}, {"price": 10, "name": "Ada"}])) == 0
    assert size(change_set([A, B], [B, A], ("name",))) == 0


def test_duplicates_are_counted_as_a_multiset():
    cs = change_set([A, A], [A, A, A])
    assert cs["added"] == [A] and cs["removed"] == []
    cs = change_set([A, A, 1, 1], [A, 1])
    assert cs["removed"] == [A, 1]


def test_a_single_record_page_and_the_first_scrape():
    assert change_set(None, A, ("name",)) == {"added": [A], "removed": [], "changed": []}
    cs = change_set(A, {"name": "Ada", "price": 11}, ("name",))
    assert cs["changed"] == [{"key": "Ada", "before": {"price": 10}, "after": {"price": 11}}]
    # A field that appears or disappears is a difference too.
    cs = change_set(A, {"name": "Ada"}, ("name",))
    assert cs["changed"] == [{"key": "Ada", "before": {"price": 10}, "after": {"price": None}}]


FIELDS = {"name": {"css": ".n"}, "price": {"css": ".p", "type": "int"}}


def test_blueprint_key_is_a_field_or_a_list_of_fields():
    assert from_dict({"fields": FIELDS, "key": "name"}).key == ("name",)
    bp = from_dict({"fields": FIELDS, "key": ["name", "price"]})
    assert bp.key == ("name", "price")
    assert bp.to_dict()["key"] == ["name", "price"]
    assert from_dict(bp.to_dict()).key == ("name", "price")
    assert "key" not in from_dict({"fields": FIELDS}).to_dict()
    # What a worker is sent does not carry it (sources differing only by key share one parse).
    assert "key" not in from_dict({"fields": FIELDS, "key": "name"}).extraction_json


@pytest.mark.parametrize("key, says", [
    ("sku", "'sku' is not one of the fields"),
    ([], "expected a field name or a list"),
    (["name", "name"], "named twice"),
    (3, "expected a field name or a list"),
])
def test_a_bad_key_is_refused_naming_the_key(key, says):
    with pytest.raises(BlueprintError) as e:
        from_dict({"fields": FIELDS, "key": key})
    assert e.value.key == "key" and says in str(e.value)
