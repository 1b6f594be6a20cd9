"""Change sets (healerd.core.changes): the cases a mutation tool found no test for.

Each test pins one behaviour a plausible edit breaks: a field that appears, records that are not
objects, nested values, a composite key in another order, an added record before a kept one.
"""

from __future__ import annotations

from healerd.core.changes import change_set, key_of, size


def test_a_record_that_gains_a_field_shows_it_was_none_before():
    cs = change_set([{"name": "Ada"}], [{"name": "Ada", "price": 3}], ("name",))
    assert cs["changed"] == [{"key": "Ada", "before": {"price": None}, "after": {"price": 3}}]
    # and one that gains a field while another changes: both named, the old fields first
    cs = change_set([{"name": "Ada", "price": 3}], [{"sku": "x", "name": "Ada", "price": 4}], ("name",))
    assert cs["changed"] == [{"key": "Ada", "before": {"price": 3, "sku": None}, "after": {"price": 4, "sku": "x"}}]
    assert list(cs["changed"][0]["before"]) == ["price", "sku"]


def test_a_record_that_is_not_an_object_is_compared_as_a_whole_value():
    # With a key, a record without the key field and a bare value share the key None: paired.
    cs = change_set([{"price": 1}], ["oops"], ("name",))
    assert cs == {"added": [], "removed": [],
                  "changed": [{"key": None, "before": {"value": {"price": 1}}, "after": {"value": "oops"}}]}
    cs = change_set(["a"], ["b"], ("name",))
    assert cs["changed"] == [{"key": None, "before": {"value": "a"}, "after": {"value": "b"}}]
    assert key_of("oops", ("name",)) is None
    assert key_of(7, ("a", "b")) == {"a": None, "b": None}


def test_nested_values_are_compared_by_value_whatever_their_depth():
    a = {"name": "Ada", "tags": ["x", "y"], "where": {"city": "Oslo", "zip": [1, 2]}}
    same = {"where": {"zip": [1, 2], "city": "Oslo"}, "tags": ["x", "y"], "name": "Ada"}
    assert size(change_set([a], [same])) == 0
    for other in ({**a, "tags": ["x", "z"]}, {**a, "tags": ["y", "x"]}, {**a, "where": {"city": "Bergen", "zip": [1, 2]}},
                  {**a, "where": {"city": "Oslo", "zip": [1, 3]}}, {**a, "tags": ["x", "y", "y"]}):
        cs = change_set([a], [other])
        assert cs["added"] == [other] and cs["removed"] == [a], other
    # with a key, the changed nested field is named with its whole before and after
    cs = change_set([a], [{**a, "tags": ["x"]}], ("name",))
    assert cs["changed"] == [{"key": "Ada", "before": {"tags": ["x", "y"]}, "after": {"tags": ["x"]}}]


def test_a_composite_key_pairs_records_by_all_its_fields_in_any_order():
    x = {"team": "x", "player": "p", "score": 1}
    y = {"team": "y", "player": "p", "score": 2}
    z = {"team": "x", "player": "q", "score": 3}
    assert size(change_set([x, y, z], [z, y, x], ("team", "player"))) == 0
    cs = change_set([x, y], [{**y, "score": 5}, x], ("team", "player"))
    assert cs["changed"] == [{"key": {"team": "y", "player": "p"}, "before": {"score": 2}, "after": {"score": 5}}]
    assert cs["added"] == cs["removed"] == []


def test_one_key_field_pairs_by_its_value_whatever_the_order():
    cs = change_set([{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], [{"id": 2, "v": "b"}, {"id": 1, "v": "c"}], ("id",))
    assert cs == {"added": [], "removed": [], "changed": [{"key": 1, "before": {"v": "a"}, "after": {"v": "c"}}]}


def test_an_added_record_before_kept_ones_leaves_them_paired():
    a, b, new = {"name": "Ada", "p": 1}, {"name": "Bob", "p": 2}, {"name": "Cy", "p": 3}
    assert change_set([a, b], [new, a, b], ("name",)) == {"added": [new], "removed": [], "changed": []}
    assert change_set([a, b], [new, a, b]) == {"added": [new], "removed": [], "changed": []}


def test_size_counts_every_kind_of_change():
    cs = change_set([{"name": "Ada", "p": 1}, {"name": "Bob"}], [{"name": "Ada", "p": 2}, {"name": "Cy"}], ("name",))
    assert (len(cs["added"]), len(cs["removed"]), len(cs["changed"])) == (1, 1, 1)
    assert size(cs) == 3


def test_duplicates_are_a_multiset_paired_in_their_order():
    """Records sharing a key are paired first to first, second to second: the records differ, so a
    pairing in another order, or one that counts a key once, shows other changes."""
    a1, a2, a3 = {"name": "Ada", "p": 1}, {"name": "Ada", "p": 2}, {"name": "Ada", "p": 4}
    cs = change_set([a1, a2], [a1, {"name": "Ada", "p": 3}, a3], ("name",))
    assert cs == {"added": [a3], "removed": [],
                  "changed": [{"key": "Ada", "before": {"p": 2}, "after": {"p": 3}}]}
    cs = change_set([a1, a2, a3], [{"name": "Ada", "p": 9}], ("name",))
    assert cs == {"added": [], "removed": [a2, a3], "changed": [{"key": "Ada", "before": {"p": 1}, "after": {"p": 9}}]}
    # without a key: two distinct records, each twice; one copy of each left
    b = {"name": "Bob", "p": 5}
    cs = change_set([a1, b, a1, b], [b, a1])
    assert cs == {"added": [], "removed": [a1, b], "changed": []}
    cs = change_set([a1, b], [a1, a1, b])
    assert cs == {"added": [a1], "removed": [], "changed": []}
