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
