"""Values changed with the layout, corroborated (healerd.core.heal.verdict.corroboration).

A station list whose water levels changed while the list was restyled: the healer places the level
by structure, at a low confidence. The alignment with the fields found again (code, name) and new
values of the old kind raise it to the promotion threshold; a neighbouring column, a node placed
otherwise, a column under another header, values of another kind or a sibling's text do not.
"""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.confidence import LOW_CONFIDENCE
from healerd.core.extract import extract
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.page.positions import relative_path
from healerd.core.heal.pipeline import heal
from healerd.core.heal.verdict.corroboration import MAX_RECORDS, corroborated

BP = Blueprint(items="div.stations tbody tr", fields={
    "code": FieldSpec("code", "td:nth-child(1)"),
    "name": FieldSpec("name", "td:nth-child(2) a"),
    "level": FieldSpec("level", "td:nth-child(3)", type="float"),
})
# code, name, level, readings
ROWS = [("ALD", "Alder Lake", "2.85", "412"), ("BRC", "Birch Hollow", "3.32", "398"),
        ("CDF", "Cedar Falls", "1.98", "405"), ("DNM", "Dunmore", "4.07", "377")]
NEW_LEVELS = ["3.26", "3.73", "2.39", "4.48"]


def table(rows, box: str = "stations", heads: tuple[str, str] = ("Level (m)", "Readings"), name_cell=None) -> str:
    body = "".join(f"<tr><td>{c}</td><td><a href='/s/{c}/'>{name_cell(c, n) if name_cell else n}</a></td>"
                   f"<td>{lv}</td><td>{rd}</td></tr>" for c, n, lv, rd in rows)
    return (f"<html><body><h1>Stations</h1><div class='{box}'><table><thead><tr><th>Code</th><th>Station</th>"
            f"<th>{heads[0]}</th><th>{heads[1]}</th></tr></thead><tbody>{body}</tbody></table></div></body></html>")


BEFORE = table(ROWS)
RENEWED = [(c, n, lv, rd) for (c, n, _, rd), lv in zip(ROWS, NEW_LEVELS)]
AFTER = table(RENEWED, box="StationList_box__9f2e1")


def test_a_changed_column_placed_as_before_among_the_found_fields_reaches_the_promotion_threshold():
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, AFTER)
    assert res.ok and res.blueprint is not None, res.reason
    assert res.confidence == LOW_CONFIDENCE
    assert "corroborated" in res.details["level"] and res.details["level"]["confidence"] == LOW_CONFIDENCE
    assert [r["level"] for r in extract(AFTER, res.blueprint).data] == [float(v) for v in NEW_LEVELS]


def test_without_new_values_the_heal_keeps_its_own_low_confidence():
    """The same restyle, the levels swapped between stations: old text, nothing corroborates."""
    shuffled = [(c, n, lv, rd) for (c, n, _, rd), (_, _, lv, _) in zip(ROWS, ROWS[1:] + ROWS[:1])]
    after = table(shuffled, box="StationList_box__9f2e1")
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, after)
    assert res.ok, res.reason
    assert res.confidence < LOW_CONFIDENCE and "corroborated" not in res.details.get("level", {})


def _check(after_html: str, level_css: str, before_html: str = BEFORE) -> dict | None:
    before, after = Page(before_html), Page(after_html)
    candidate = Blueprint(items="div tbody tr", fields={**BP.fields, "level": FieldSpec("level", level_css, type="float")})
    return corroborated(BP, candidate, before, after, extract(before.tree, BP).raw, extract(after.tree, candidate).raw)


def test_the_pure_check_backs_the_changed_column():
    assert set(_check(AFTER, "td:nth-child(3)") or {}) == {"level"}


def test_a_neighbouring_column_of_old_text_is_not_corroborated():
    """The levels dropped: the column next door (readings, numbers too) is text the last good page showed."""
    dropped = "".join(f"<tr><td>{c}</td><td><a href='/s/{c}/'>{n}</a></td><td>{rd}</td></tr>" for c, n, _, rd in ROWS)
    # no header row left to tell the columns apart
    after = f"<html><body><div class='x'><table><tbody>{dropped}</tbody></table></div></body></html>"
    assert _check(after, "td:nth-child(3)") is None


def test_new_values_placed_otherwise_relative_to_the_found_fields_are_not_corroborated():
    """New numbers, but in the readings' place (one column further): the alignment disagrees."""
    moved = [(c, n, rd, lv) for (c, n, _, rd), lv in zip(ROWS, NEW_LEVELS)]
    after = table(moved, box="x", heads=("Readings", "Level (m)"))
    # the header check alone would not tell: name the columns alike
    after = after.replace("<th>Readings</th><th>Level (m)</th>", "<th>Level (m)</th><th>Level (m)</th>")
    before = BEFORE.replace("<th>Readings</th>", "<th>Level (m)</th>")
    assert _check(after, "td:nth-child(4)", before) is None
    assert _check(after, "td:nth-child(3)", before) is None   # and in the old place: the readings, old text


def test_a_new_column_under_another_header_in_the_old_place_is_not_corroborated():
    after = table(RENEWED, box="x", heads=("Flow (m3/s)", "Readings"))
    assert _check(after, "td:nth-child(3)") is None


def test_values_of_another_kind_are_not_corroborated():
    worded = [(c, n, f"rising {k}", rd) for k, (c, n, _, rd) in zip("abcd", ROWS)]
    assert _check(table(worded, box="x"), "td:nth-child(3)") is None


def test_a_changed_value_holding_a_sibling_fields_value_is_not_corroborated():
    """The station names changed into text that carries the code: a container's or a label's reading."""
    bp = Blueprint(items=BP.items, fields={n: BP.fields[n] for n in ("code", "name")})
    before = Page(BEFORE)
    after = Page(table(ROWS, box="x", name_cell=lambda c, n: f"{c}: {n.lower()} gauge"))
    candidate = Blueprint(items="div tbody tr", fields=bp.fields)
    got = corroborated(bp, candidate, before, after, extract(before.tree, bp).raw, extract(after.tree, candidate).raw)
    assert got is None
    after = Page(table(ROWS, box="x", name_cell=lambda c, n: f"{n.lower()} gauge"))
    assert corroborated(bp, candidate, before, after, extract(before.tree, bp).raw,
                        extract(after.tree, candidate).raw) == {"name": got_why("code")}


def got_why(anchors: str) -> str:
    return f"corroborated: new values of the old kind, placed as before relative to {anchors}"


def _path(html: str, anchor: str, node: str):
    page = Page(html)
    return relative_path(page, page.index_of(page.tree.css_first(anchor)), page.index_of(page.tree.css_first(node)))


def test_relative_path_is_positions_not_tags_nor_wrappers():
    a = _path("<div><p><b>x</b><s>z</s></p><p><i>y</i></p></div>", "b", "i")
    assert a == _path("<section><span><em>x</em><s>z</s></span><span><u>y</u></span></section>", "em", "u")
    assert a == ((0, 0), (1,))
    # a wrapper around the value (an only child) is no other place; a sibling before it is
    assert a == _path("<div><p><b>x</b><s>z</s></p><p><span><i>y</i></span></p></div>", "b", "i")
    assert a != _path("<div><p><b>x</b><s>z</s></p><p><s>w</s><i>y</i></p></div>", "b", "i")


def test_a_changed_value_wrapped_in_a_new_element_is_still_in_its_place():
    wrapped = AFTER.replace("<td>3.26</td>", "<td><span>3.26</span></td>")
    for lv in NEW_LEVELS[1:]:
        wrapped = wrapped.replace(f"<td>{lv}</td>", f"<td><span>{lv}</span></td>")
    assert set(_check(wrapped, "td:nth-child(3) span") or {}) == {"level"}
    # the found field (an anchor) wrapped as well: more levels climbed to the row, the same places
    wrapped = wrapped.replace("<td><a href=", "<td><span class='name'><a href=").replace("</a></td>", "</a></span></td>")
    before, after = Page(BEFORE), Page(wrapped)
    fields = {**BP.fields, "name": FieldSpec("name", "td:nth-child(2) span a"),
              "level": FieldSpec("level", "td:nth-child(3) span", type="float")}
    candidate = Blueprint(items="div tbody tr", fields=fields)
    got = corroborated(BP, candidate, before, after, extract(before.tree, BP).raw, extract(after.tree, candidate).raw)
    assert set(got or {}) == {"level"}


def test_a_value_that_always_held_a_siblings_value_may_still_hold_it():
    """The station names always began with the code (a signature carrying its name): no news, corroborated."""
    bp = Blueprint(items=BP.items, fields={n: BP.fields[n] for n in ("code", "name")})
    before = Page(table(ROWS, name_cell=lambda c, n: f"{c} {n}"))
    after = Page(table(ROWS, box="x", name_cell=lambda c, n: f"{c} {n.lower()} gauge"))
    candidate = Blueprint(items="div tbody tr", fields=bp.fields)
    assert corroborated(bp, candidate, before, after, extract(before.tree, bp).raw,
                        extract(after.tree, candidate).raw) == {"name": got_why("code")}


def test_a_listing_longer_than_the_bound_keeps_its_own_confidence():
    """Each value is looked for in the whole last good page: past MAX_RECORDS records that costs
    seconds on a big page, so a long listing is not corroborated (it waits for a person as before)."""
    many = [(f"S{k:03d}", f"Station {k}", f"{1 + k / 1000:.3f}", str(k)) for k in range(MAX_RECORDS + 1)]
    renewed = [(c, n, f"{2 + k / 1000:.3f}", rd) for k, (c, n, _, rd) in enumerate(many)]
    assert _check(table(renewed[:MAX_RECORDS], box="x"), "td:nth-child(3)", table(many[:MAX_RECORDS])) is not None
    assert _check(table(renewed, box="x"), "td:nth-child(3)", table(many)) is None
