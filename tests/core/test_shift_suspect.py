"""drift.shift_suspect: the Validator's cheap trigger for columns reordered in place."""

from __future__ import annotations

from healerd.core.blueprint import from_dict
from healerd.core.drift import page_drift, shift_suspect
from healerd.core.validate import last_good_sample

OLD = [{"name": "Ada", "score": 31, "games": 12}, {"name": "Grace", "score": 27, "games": 11},
       {"name": "Linus", "score": 24, "games": 10}]


def test_a_field_giving_another_fields_sample_value_is_suspect():
    swapped = [{"name": r["name"], "score": r["games"], "games": r["score"]} for r in OLD]
    assert shift_suspect(swapped, last_good_sample(OLD)) is True


def test_new_values_and_repeated_own_values_are_not():
    assert shift_suspect(OLD, last_good_sample(OLD)) is False
    moved = [{"name": r["name"] + "!", "score": r["score"] + 100, "games": r["games"] + 100} for r in OLD]
    assert shift_suspect(moved, last_good_sample(OLD)) is False
    assert shift_suspect(OLD, None) is False


def _table(rows, cols):
    body = "".join("<tr>" + "".join(f"<td>{r[c]}</td>" for c in cols) + "</tr>" for r in rows)
    return f"<html><body><table><tbody>{body}</tbody></table></body></html>"


def test_page_drift_sees_a_reorder_that_moves_no_structure():
    bp = from_dict({"items": "tbody tr", "fields": {"name": {"css": "td:nth-child(1)"},
                                                   "score": {"css": "td:nth-child(2)", "type": "int"},
                                                   "games": {"css": "td:nth-child(3)", "type": "int"}}})
    before = _table(OLD, ("name", "score", "games"))
    after = _table(OLD, ("name", "games", "score"))
    swapped = [{"name": r["name"], "score": r["games"], "games": r["score"]} for r in OLD]
    assert "holds what" in (page_drift(bp, before, OLD, after, swapped) or "")
    assert page_drift(bp, before, OLD, before, OLD) is None


POSTS = [{"title": "Dry spell ends", "category": "Weather", "tag": "Rain"},
         {"title": "Harvest report", "category": "Farming", "tag": "Weather"},
         {"title": "Wells run low", "category": "Weather", "tag": "Drought"}]


def test_fields_sharing_values_on_a_changed_page_are_not_suspect():
    # A tag may name a category, and a link's text is often the title: on the next page (new
    # posts on top) a field gives a value another field had in the sample, but each field still
    # holds its own kind of values and the other field still holds that value too.
    sample = last_good_sample(POSTS)
    newer = [{"title": "Storm warning", "category": "Weather", "tag": "Wind"},
             {"title": "Crop prices", "category": "Farming", "tag": "Weather"},
             {"title": "Dry spell ends", "category": "Weather", "tag": "Rain"}]
    assert sample[0]["category"] == "Weather" and "Weather" in [r["tag"] for r in newer]
    assert shift_suspect(newer, sample) is False
    links = [{"title": "Harvest report", "link": "Read more"},
             {"title": "Wells run low", "link": "Wells run low"}]
    assert shift_suspect([{"title": "Crop prices", "link": "Read more"},
                          {"title": "Harvest report", "link": "Harvest report"}],
                         last_good_sample(links)) is False


def test_a_column_shifted_over_a_removed_one_is_suspect():
    shifted = [{"name": r["name"], "score": r["games"], "games": None} for r in OLD]
    assert shift_suspect(shifted, last_good_sample(OLD)) is True
