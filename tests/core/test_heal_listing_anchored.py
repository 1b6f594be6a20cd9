"""A listing field whose values changed with the layout (healerd.core.heal.fields.listing_anchored).

A station table restyled (its classes hashed) while every water level changed: the codes and names are found again by value, the levels are nowhere.
In every row the level sits where it sat relative to the code and the name: it is placed there,
staged or corroborated, never above the promotion threshold. The level column removed (its
neighbour, old text, in its place) or a row where the found fields disagree: refused.
"""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.evidence import OldText
from healerd.core.heal.fields.listing_anchored import place_in_records
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.pipeline import heal
from healerd.core.judge import LOW_CONFIDENCE

BP = Blueprint(items="table.stations tbody tr", fields={
    "code": FieldSpec("code", "td.code"),
    "name": FieldSpec("name", "td.name"),
    "level": FieldSpec("level", "td.level", type="float"),
})
# code, name, level, readings
ROWS = [("ST-ALD-01", "Alder Lake", "2.85", "412"), ("ST-BRC-02", "Birch Hollow", "3.32", "398"),
        ("ST-CDF-03", "Cedar Falls", "1.98", "405"), ("ST-DNM-04", "Dunmore", "4.07", "377")]
NEW_LEVELS = ["3.26", "3.73", "2.39", "4.48"]

BEFORE = ("<html><body><h1>Stations</h1><table class='stations'><tbody>"
          + "".join(f"<tr><td class='code'>{c}</td><td class='name'>{n}</td><td class='level'>{lv}</td>"
                    f"<td class='readings'>{b}</td></tr>" for c, n, lv, b in ROWS)
          + "</tbody></table></body></html>")
OLD = extract(BEFORE, BP).data


def restyled(rows, cell=lambda k, c, n, lv, b: f"<td class='x-c'>{lv}</td>") -> str:
    body = "".join(f"<tr class='Row_row__a1'><td class='x-a'>{c}</td><td class='x-b'>{n}</td>"
                   f"{cell(k, c, n, lv, b)}<td class='x-d'>{b}</td></tr>" for k, (c, n, lv, b) in enumerate(rows))
    return f"<html><body><h1>Stations</h1><table class='List_list__q9'><tbody>{body}</tbody></table></body></html>"


RENEWED = [(c, n, lv, b) for (c, n, _lv, b), lv in zip(ROWS, NEW_LEVELS)]


def test_changed_levels_are_placed_as_before_relative_to_the_fields_found_again():
    after = restyled(RENEWED, cell=lambda k, c, n, lv, b: f"<td class='x-c'>{lv}</td>")
    res = heal(BP, BEFORE, OLD, after)
    assert res.ok and res.blueprint is not None, res.reason
    assert "placed as before relative to code, name" in res.details["level"]["why"]
    assert [r["level"] for r in extract(after, res.blueprint).data] == [float(v) for v in NEW_LEVELS]
    assert res.confidence <= LOW_CONFIDENCE


def test_the_level_column_removed_is_refused():
    """Its neighbour (the readings, numbers too, but old text) slides into its place."""
    after = restyled(RENEWED, cell=lambda k, c, n, lv, b: "")
    res = heal(BP, BEFORE, OLD, after)
    assert not res.ok and "level" in res.reason


def test_one_row_where_the_found_fields_disagree_settles_nothing():
    """In one row the name comes after the level: from the code the old path leads to the name's cell,
    from the name to the readings. Every record must settle the field, or none is placed."""
    def row(k, c, n, lv, b):
        return f"<tr><td class='x-a'>{c}</td><td class='x-c'>{lv}</td><td class='x-b'>{n}</td><td class='x-d'>{b}</td></tr>"
    body = "".join(row(k, *r) if k == 2 else
                   f"<tr><td class='x-a'>{r[0]}</td><td class='x-b'>{r[1]}</td><td class='x-c'>{r[2]}</td>"
                   f"<td class='x-d'>{r[3]}</td></tr>" for k, r in enumerate(RENEWED))
    after = f"<html><body><h1>Stations</h1><table class='List_list__q9'><tbody>{body}</tbody></table></body></html>"
    res = heal(BP, BEFORE, OLD, after)
    assert not res.ok and "level" in res.reason


def test_records_that_differed_saying_one_text_now_is_a_template_not_data():
    """Every level cell now says the same number where the old levels differed: a template's text."""
    after = restyled(RENEWED, cell=lambda k, c, n, lv, b: "<td class='x-c'>5.55</td>")
    res = heal(BP, BEFORE, OLD, after)
    assert not res.ok and "level" in res.reason


def test_a_record_still_holding_its_old_value_elsewhere_is_not_settled():
    """In the third row the old level now sits in the readings cell, a new number in the level's place:
    which node is the level is not told by position alone."""
    rows = [(c, n, lv, ROWS[k][2] if k == 2 else b) for k, (c, n, lv, b) in enumerate(RENEWED)]
    res = heal(BP, BEFORE, OLD, restyled(rows))
    assert not res.ok or "placed as before" not in res.details.get("level", {}).get("why", "")


def test_containers_that_left_a_record_out_are_no_ground_to_place_by_structure():
    """The same restyle, but the container stage found three of the four records: nothing is placed."""
    after = Page(restyled(RENEWED))
    before = Page(BEFORE)
    old_rows = [before.index_of(n) for n in before.tree.css(BP.items)]
    rows = [after.index_of(n) for n in after.tree.css("tr.Row_row__a1")]
    found = {"code": "td.x-a", "name": "td.x-b"}
    raw = [{"code": c, "name": n, "level": lv} for c, n, lv, _b in ROWS]
    assert place_in_records(before, old_rows, after, rows, [0, 1, 2, 3], raw, BP.fields, "level", found,
                            OldText(before)) is not None
    assert place_in_records(before, old_rows, after, rows[1:], [1, 2, 3], raw, BP.fields, "level", found,
                            OldText(before)) is None
