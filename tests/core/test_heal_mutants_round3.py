"""The built-in healer's round-3 modules: cases a mutation found no test for.

- data_gone: a value that changed under a label still on the page is no data gone;
- listing_cells: a short field sharing its cell with the only anchor (a link) shows no order of
  cells; a short value keyed by another field's old label is that field's place, not its own;
- agreement: the changed field is placed by its path from each anchor, not by its own position;
- block_copies: a twin no more like the old node's place than the node read is no sign of a copy;
- anchored_place: a node the anchors disagree on, or old text at the anchored slot, is no placement.
"""

from __future__ import annotations

import pytest

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.checks.block_copies import copied_field, to_twins
from healerd.core.heal.checks.data_gone import gone_fields
from healerd.core.heal.evidence import OldText
from healerd.core.heal.fields.single_anchored import acceptable, place_by_anchors
from healerd.core.heal.fields.single_candidates import Candidate
from healerd.core.heal.page.fingerprint import Page, fingerprint
from healerd.core.heal.pipeline import heal
from healerd.core.heal.verdict.corroboration import corroborated

# -- data_gone --------------------------------------------------------------------------------------

DL = Blueprint(fields={"title": FieldSpec("title", "h1"), "score": FieldSpec("score", "dl dd")})
DL_BEFORE = "<html><body><h1>Quiet harbour</h1><dl><dt>Score</dt><dd>7</dd></dl></body></html>"


def test_a_changed_value_under_its_label_is_no_data_gone():
    after = "<html><body><h1>Quiet harbour</h1><dl class='x'><dt>Score</dt><dd>9</dd></dl></body></html>"
    assert gone_fields(DL, DL_BEFORE, after) == []


def test_a_value_and_its_label_both_gone_is_data_gone():
    after = "<html><body><h1>Quiet harbour</h1><p>No rating yet</p></body></html>"
    assert gone_fields(DL, DL_BEFORE, after) == ["score"]
    assert gone_fields(DL, DL_BEFORE, after, names=["title"]) == []
    # another label in its place is no sign of the field
    relabelled = "<html><body><h1>Quiet harbour</h1><dl><dt>Votes</dt><dd>9</dd></dl></body></html>"
    assert gone_fields(DL, DL_BEFORE, relabelled) == ["score"]


def test_the_old_value_kept_without_its_label_is_no_data_gone():
    after = "<html><body><h1>Quiet harbour</h1><p><b>7</b></p></body></html>"
    assert gone_fields(DL, DL_BEFORE, after) == []


def test_a_long_value_inside_a_longer_text_is_still_there_a_short_one_is_not():
    bp = Blueprint(fields={"title": FieldSpec("title", "h1"), "city": FieldSpec("city", "p.city"),
                           "n": FieldSpec("n", "p.n")})
    before = "<html><body><h1>Quiet harbour</h1><p class='city'>Oslo</p><p class='n'>12</p></body></html>"
    # the heading, which labels both, is gone too: only the values can keep them
    after = "<html><body><h2>Harbour</h2><p>Moored in Oslo since 1990</p><p>112 berths</p></body></html>"
    assert gone_fields(bp, before, after, names=["city", "n"]) == ["n"]


def test_in_a_listing_a_label_of_any_record_keeps_the_field():
    bp = Blueprint(items="div.r", fields={"name": FieldSpec("name", "h2"), "score": FieldSpec("score", "dd")})
    before = ("<html><body>" + "".join(f"<div class='r'><h2>{n}</h2><dl><dt>Score</dt><dd>{s}</dd></dl></div>"
                                       for n, s in (("Alder", "3"), ("Birch", "5"))) + "</body></html>")
    kept = ("<html><body>" + "".join(f"<div class='r'><h2>{n}</h2><dl><dt>Score</dt><dd>{s}</dd></dl></div>"
                                     for n, s in (("Alder", "4"), ("Birch", "6"))) + "</body></html>")
    gone = "<html><body>" + "".join(f"<div class='r'><h2>{n}</h2></div>" for n in ("Alder", "Birch")) + "</body></html>"
    assert gone_fields(bp, before, kept) == []
    assert gone_fields(bp, before, gone) == ["score"]
    # nothing to judge by: no old page, a code parser, no old values
    assert gone_fields(bp, "", gone) == []
    assert gone_fields(Blueprint(fields={"x": FieldSpec("x", "p.none")}), before, gone) == []


def test_only_the_first_50_old_values_are_looked_for():
    bp = Blueprint(items="li", fields={"name": FieldSpec("name", "span")})
    before = "<html><body><ul>" + "".join(f"<li><span>Record number {i:03d}</span></li>" for i in range(51)) + "</ul></body></html>"
    only_last = "<html><body><p>Record number 050</p></body></html>"
    assert gone_fields(bp, before, only_last) == ["name"]
    assert gone_fields(bp, before, "<html><body><p>Record number 049</p></body></html>") == []


def test_an_attribute_value_is_looked_for_in_attributes():
    bp = Blueprint(fields={"title": FieldSpec("title", "h1"), "link": FieldSpec("link", "a.more", attr="href")})
    before = "<html><body><h1>Quiet harbour</h1><a class='more' href='/harbours/quiet-harbour'>More</a></body></html>"
    kept = "<html><body><h2>Elsewhere</h2><a class='x' href='/harbours/quiet-harbour'>Read on</a></body></html>"
    longer = "<html><body><h2>Elsewhere</h2><a href='/harbours/quiet-harbour?from=list'>Read on</a></body></html>"
    gone = "<html><body><h2>Elsewhere</h2><a href='/ports/other'>Read on</a></body></html>"
    assert gone_fields(bp, before, kept, names=["link"]) == []
    assert gone_fields(bp, before, longer, names=["link"]) == []
    assert gone_fields(bp, before, gone, names=["link"]) == ["link"]


def test_every_field_is_judged_whatever_the_fields_before_it():
    bp = Blueprint(fields={"none": FieldSpec("none", "p.none"), "title": FieldSpec("title", "h1"),
                           "score": FieldSpec("score", "dl dd"), "city": FieldSpec("city", "p.city")})
    before = ("<html><body><h1>Quiet harbour</h1><dl><dt>Score</dt><dd>7</dd></dl>"
              "<h3>Port</h3><p class='city'>Lindesnes</p></body></html>")
    after = "<html><body><h1>Quiet harbour</h1><dl><dt>Score</dt><dd>9</dd></dl></body></html>"
    # no old value for `none`, `title` found, `score` kept by its label: `city` is still judged
    assert gone_fields(bp, before, after) == ["city"]


def test_no_page_or_a_code_parser_is_no_evidence():
    code = "def parse(html):\n    return {'title': 'x', 'score': '7'}\n"
    parser_bp = Blueprint(fields=DL.fields, parser=code)
    gone = "<html><body><h1>Elsewhere</h1></body></html>"
    assert gone_fields(parser_bp, DL_BEFORE, gone) == []
    assert gone_fields(DL, DL_BEFORE, "") == []
    assert gone_fields(DL, "", gone) == []


# -- listing_cells ----------------------------------------------------------------------------------

STOCK = [("claw-hammer-forged", "12", "4"), ("garden-hose-green", "30", "7"),
         ("tape-measure-5m", "9", "15"), ("spirit-level-60", "21", "2")]
LINKED = Blueprint(items="#stock tr.row", fields={
    "qty": FieldSpec("qty", "td.qty a", "int"),
    "url": FieldSpec("url", "td.qty a", "str", attr="href"),
    "price": FieldSpec("price", "td.price", "int"),
})
LINKED_BEFORE = ("<html><body><h1>Stock</h1><table id='stock'><tr><th>Qty</th><th>Price</th></tr>"
                 + "".join(f"<tr class='row'><td class='qty'><a href='/p/{s}'>{q}</a></td><td class='price'>{p}</td></tr>"
                           for s, p, q in STOCK) + "</table></body></html>")
# a grid of divs; the link is empty now and the quantity beside it in the same cell
LINKED_AFTER = ("<html><body><h1>Stock</h1><div class='g1'>"
                + "".join(f"<div class='r8'><div class='c4'><a href='/p/{s}'></a><span class='k'>{q}</span></div>"
                          f"<div class='c4'><i>{p}</i></div></div>" for s, p, q in STOCK) + "</div></body></html>")


def test_an_anchor_in_the_fields_own_cell_shows_no_order_of_the_cells():
    res = heal(LINKED, LINKED_BEFORE, extract(LINKED_BEFORE, LINKED).data, LINKED_AFTER)
    assert not res.ok
    assert "old cell" not in res.details["qty"]["why"], res.details["qty"]
    # the price, in another cell than the link, is placed by its cell
    assert "in its old cell (2 of 2)" in res.details["price"]["why"], res.details["price"]


NAMED = Blueprint(items="#stock tr.row", fields={
    "name": FieldSpec("name", "td.name", "str"),
    "price": FieldSpec("price", "td.price", "int"),
    "qty": FieldSpec("qty", "td.qty", "int"),
})
NAMES = ["Claw hammer", "Garden hose", "Tape measure", "Spirit level"]
NAMED_BEFORE = ("<html><body><h1>Stock</h1><table id='stock'><tr><th>Product</th><th>Price</th><th>Qty</th></tr>"
                + "".join(f"<tr class='row'><td class='name'>{n}</td><td class='price'>{p}</td><td class='qty'>{q}</td></tr>"
                          for n, (_, p, q) in zip(NAMES, STOCK)) + "</table></body></html>")


def cards(qty_key: str) -> str:
    """The rows as cards of labelled pairs; the quantity's pair keyed `qty_key`."""
    return ("<html><body><h1>Stock</h1><div class='g1'>"
            + "".join(f"<div class='r8'><div class='c4'>{n}</div><div class='c4'><span>Price</span><span>{p}</span></div>"
                      f"<div class='c4'><span>{qty_key}</span><span>{q}</span></div></div>"
                      for n, (_, p, q) in zip(NAMES, STOCK)) + "</div></body></html>")


def test_a_short_value_keyed_by_another_fields_label_is_not_placed_by_its_cell():
    old = extract(NAMED_BEFORE, NAMED).data
    res = heal(NAMED, NAMED_BEFORE, old, cards("Price"))
    assert not res.ok
    assert "old cell" not in res.details["qty"]["why"], res.details["qty"]
    # keyed by a word that named no field, the pair in the old cell is the field's, staged
    res = heal(NAMED, NAMED_BEFORE, old, cards("Stock"))
    assert res.ok, res.reason
    assert "in its old cell (3 of 3)" in res.details["qty"]["why"]
    assert [r["qty"] for r in extract(cards("Stock"), res.blueprint).data] == [int(q) for _, _, q in STOCK]


# -- agreement --------------------------------------------------------------------------------------

STATIONS = Blueprint(items="div.stations tbody tr", fields={
    "code": FieldSpec("code", "td:nth-child(1)"),
    "name": FieldSpec("name", "td:nth-child(2) a"),
    "level": FieldSpec("level", "td:nth-child(3)", type="float"),
})
ROWS = [("ALD", "Alder Lake", "2.85", "412"), ("BRC", "Birch Hollow", "3.32", "398"),
        ("CDF", "Cedar Falls", "1.98", "405"), ("DNM", "Dunmore", "4.07", "377")]
NEW_LEVELS = ["3.26", "3.73", "2.39", "4.48"]


def stations(cells) -> str:
    body = "".join("<tr>" + "".join(cells(r, lv)) + "</tr>" for r, lv in zip(ROWS, NEW_LEVELS))
    return f"<html><body><div class='stations'><table><tbody>{body}</tbody></table></div></body></html>"


STATIONS_BEFORE = stations(lambda r, _lv: [f"<td>{r[0]}</td>", f"<td><a href='/s/{r[0]}/'>{r[1]}</a></td>",
                                          f"<td>{r[2]}</td>", f"<td>{r[3]}</td>"])


def _corroborated(after_html: str, fields: dict[str, str]) -> dict | None:
    before, after = Page(STATIONS_BEFORE), Page(after_html)
    cand = Blueprint(items="div tbody tr", fields={n: FieldSpec(n, css, STATIONS.fields[n].type)
                                                  for n, css in fields.items()})
    return corroborated(STATIONS, cand, before, after, extract(before.tree, STATIONS).raw,
                        extract(after.tree, cand).raw)


def test_a_changed_field_at_its_old_position_but_another_path_from_an_anchor_is_not_corroborated():
    """The level is still the third cell, but the code moved from the first to the last: seen from
    the code, the level is not where it was."""
    after = stations(lambda r, lv: [f"<td>{r[3]}</td>", f"<td><a href='/s/{r[0]}/'>{r[1]}</a></td>",
                                    f"<td>{lv}</td>", f"<td>{r[0]}</td>"])
    css = {"code": "td:nth-child(4)", "name": "td:nth-child(2) a", "level": "td:nth-child(3)"}
    assert _corroborated(after, css) is None
    # the same page with the code left in its place is corroborated: it is the anchor that tells
    kept = stations(lambda r, lv: [f"<td>{r[0]}</td>", f"<td><a href='/s/{r[0]}/'>{r[1]}</a></td>",
                                   f"<td>{lv}</td>", f"<td>{r[3]}</td>"])
    assert set(_corroborated(kept, {**css, "code": "td:nth-child(1)"}) or {}) == {"level"}


# -- block_copies -----------------------------------------------------------------------------------

ITEM = Blueprint(fields={
    "title": FieldSpec("title", "div.item h1.name", "str"),
    "sku": FieldSpec("sku", "div.item div.codes span.sku", "str"),
    "stock": FieldSpec("stock", "div.item div.codes span.stock", "int"),
})
ITEM_BEFORE = ("<html><body><nav><a href='/'>Tools</a></nav><main><div class='item'><h1 class='name'>Claw hammer</h1>"
               "<div class='codes'><span class='sku'>HX-2041</span><span class='stock'>12 in stock</span></div>"
               "<p>Forged steel head.</p></div></main></body></html>")


def _item(sku: str, codes: str) -> str:
    return (f"<div class='p1'><h1 class='p2'>Claw hammer</h1><div class='{codes}'><span class='c9'>{sku}</span>"
            "<span class='c8'>12 in stock</span></div><p>Forged steel head.</p></div>")


def two_items(twin_codes: str) -> str:
    """The record keeps the old SKU; a block built alike (a wrapper more) says a changed one."""
    return ("<html><body><nav><a href='/'>Tools</a></nav><main>" + _item("HX-2041", "p3") + "</main>"
            "<aside><main>" + _item("HX-2042", twin_codes) + "</main></aside></body></html>")


@pytest.mark.parametrize("twin_codes, copy", [
    ("p3", False),                                        # the twin's path exactly as like the old node's as the node's
    ("p3 codes " + " ".join(f"x{i}" for i in range(8)), False),   # a little more like it, within the margin
    ("codes", True),                                      # clearly more like it: the node read is a copy
])
def test_a_twin_is_a_sign_of_a_copy_only_when_clearly_more_like_the_old_place(twin_codes, copy):
    new = Blueprint(fields={**ITEM.fields, "sku": FieldSpec("sku", "body > main span.c9", "str")})
    found = copied_field(ITEM, new, Page(ITEM_BEFORE), Page(two_items(twin_codes)), extract(ITEM_BEFORE, ITEM).raw)
    assert (found is not None) is copy, found
    if copy:
        assert found.startswith("sku (") and "'HX-2042'" in found


# -- anchored_place ---------------------------------------------------------------------------------

LAMP = Blueprint(fields={
    "title": FieldSpec("title", "div.product h1.title"),
    "sku": FieldSpec("sku", "div.product span.sku"),
    "price": FieldSpec("price", "div.product span.price", type="float"),
})


def lamp(box: str, tag: str, cls: tuple[str, str, str], price: str, aside: str = "") -> str:
    return (f"<html><body><main><div class='{box}'><h1 class='{cls[0]}'>Walnut Desk Lamp</h1>"
            f"<{tag} class='{cls[1]}'>WDL-2231</{tag}><{tag} class='{cls[2]}'>{price}</{tag}>"
            f"<p>Ships in two days</p></div>{aside}</main></body></html>")


LAMP_BEFORE = lamp("product", "span", ("title", "sku", "price"), "49.90")
LAMP_RAW = {"title": "Walnut Desk Lamp", "sku": "WDL-2231", "price": "49.90"}
GONE_WHY = "the old value is nowhere on the page"


def _place(after_html: str, sku_kind: str, sku_css: str) -> dict:
    before, after = Page(LAMP_BEFORE), Page(after_html)
    old_nodes = {n: before.index_of(before.tree.css_first(s.css)) for n, s in LAMP.fields.items()}
    fps = {n: fingerprint(before, old_nodes[n], LAMP_RAW[n]) for n in LAMP.fields}
    decisions = {
        "title": ("healed", Candidate(after.index_of(after.tree.css_first("h1")), 1.0, 1.0, False, "exact"), "found"),
        "sku": ("healed", Candidate(after.index_of(after.tree.css_first(sku_css)), 0.6, 0.3, False, sku_kind), "found"),
        "price": ("gone", None, GONE_WHY),
    }
    placed = place_by_anchors(LAMP, before, after, old_nodes, LAMP_RAW, fps, decisions)
    return {name: (after.value(cand.node, None), why) for name, (cand, why) in placed.items()}


RESTYLED = ("Card_box", "div", ("Card_title", "Card_code", "Card_amount"))
DECOY = "<aside><h3>Related</h3><a href='/p/2'>Brass Floor Lamp</a><em>WDL-2231</em></aside>"


@pytest.mark.parametrize("kind", ["label", "moved", "shared"])
def test_a_field_found_only_in_an_unlike_place_is_no_anchor(kind):
    """The SKU's value turns up only in a related block (found there by a label, as a lone copy): it
    is no anchor, and its place says nothing against the title's, which places the new price."""
    got = _place(lamp(*RESTYLED, "54.90", aside=DECOY), kind, "aside em")
    assert got == {"price": ("54.90", f"{GONE_WHY}; placed as before relative to title "
                                      f"(new value of the old kind, likeness {got['price'][1].rsplit(' ', 1)[1]}")}
    # found by its value, the same node is an anchor, and it disagrees: nothing placed
    assert _place(lamp(*RESTYLED, "54.90", aside=DECOY), "exact", "aside em") == {}


@pytest.mark.parametrize("price, placed", [
    ("54.90", True),            # new text of the old kind at the anchored slot
    ("Ask us", False),          # another kind of value
    ("5", False),               # too short to be news
])
def test_the_text_at_the_anchored_slot_must_be_new_and_of_the_old_kind(price, placed):
    got = _place(lamp(*RESTYLED, price), "exact", "div.Card_code")
    assert (got.get("price", (None,))[0] == price) is placed, got


MANUAL = Blueprint(fields={
    "note": FieldSpec("note", "div.product p.note"),
    "title": FieldSpec("title", "div.product h1.title"),
    "sku": FieldSpec("sku", "div.product span.sku"),
    "manual": FieldSpec("manual", "div.product a.manual", attr="href"),
})
MANUAL_RAW = {"note": "Limited stock this week", "title": "Walnut Desk Lamp", "sku": "WDL-2231",
              "manual": "/docs/wdl-2231-rev1.pdf"}


def manual_card(box: str, tag: str, cls: tuple[str, ...], href: str, note: bool = True) -> str:
    said = f"<p class='{cls[3]}'>Limited stock this week</p>" if note else ""
    return (f"<html><body><main><div class='{box}'><h1 class='{cls[0]}'>Walnut Desk Lamp</h1>"
            f"<{tag} class='{cls[1]}'>WDL-2231</{tag}><a class='{cls[2]}' href='{href}'>Manual</a>"
            f"<p>Ships in two days</p>{said}</div></main></body></html>")


def test_an_attribute_field_is_placed_by_its_attribute_after_a_field_that_cannot_be():
    """Two fields gone: the note (removed: nothing at its place) and the manual's link, whose href
    changed; the note's refusal does not end the search, and the link's new href, not its old text
    ("Manual"), is the value judged and placed."""
    before = Page(manual_card("product", "span", ("title", "sku", "manual", "note"), "/docs/wdl-2231-rev1.pdf"))
    after = Page(manual_card("Card_box", "div", ("Card_t", "Card_c", "Card_m", "Card_n"), "/docs/wdl-2231-rev2.pdf",
                             note=False))
    old_nodes = {n: before.index_of(before.tree.css_first(s.css)) for n, s in MANUAL.fields.items()}
    fps = {n: fingerprint(before, old_nodes[n], MANUAL_RAW[n]) for n in MANUAL.fields}
    decisions = {
        "note": ("gone", None, GONE_WHY),
        "title": ("healed", Candidate(after.index_of(after.tree.css_first("h1")), 1.0, 1.0, False, "exact"), "found"),
        "sku": ("healed", Candidate(after.index_of(after.tree.css_first("div.Card_c")), 1.0, 1.0, False, "exact"), "f"),
        "manual": ("gone", None, GONE_WHY),
    }
    placed = place_by_anchors(MANUAL, before, after, old_nodes, MANUAL_RAW, fps, decisions)
    assert set(placed) == {"manual"}
    cand, why = placed["manual"]
    assert after.value(cand.node, "href") == "/docs/wdl-2231-rev2.pdf"
    assert why.startswith(f"{GONE_WHY}; placed as before relative to sku, title (new value of the old kind, likeness ")
    assert cand.kind == "anchored" and cand.label_match is False and cand.score == cand.sim > 0


def test_another_fields_node_or_one_holding_it_is_not_acceptable():
    before = Page(LAMP_BEFORE)
    after = Page(lamp(*RESTYLED, "54.90"))
    old = before.index_of(before.tree.css_first("span.price"))
    node = after.index_of(after.tree.css_first("div.Card_amount"))
    box = after.index_of(after.tree.css_first("div.Card_box"))
    text = after.index_of(after.tree.css_first("h1"))
    old_text = OldText(before)
    assert acceptable(before, old, "49.90", after, node, "54.90", [text], old_text)
    assert not acceptable(before, old, "49.90", after, node, "54.90", [node], old_text)
    assert not acceptable(before, old, "49.90", after, node, "54.90", [box], old_text)     # holds it


MANUAL_LINK = Blueprint(fields={
    "title": FieldSpec("title", "div.item h1.name", "str"),
    "manual": FieldSpec("manual", "div.item div.codes a.manual", "str", attr="href"),
})
REV1 = "/docs/manuals/claw-hammer-hx-2041-forged-steel-rev1.pdf"
REV2 = "/docs/manuals/claw-hammer-hx-2041-forged-steel-rev2.pdf"
LINK_BEFORE = ("<html><body><nav><a href='/'>Tools</a></nav><main><div class='item'><h1 class='name'>Claw hammer</h1>"
               f"<div class='codes'><a class='manual' href='{REV1}'>Manual</a></div>"
               "<p>Forged steel head.</p></div></main></body></html>")


def link_after(own: str = REV2) -> str:
    """Classes renamed; the record's manual link now points at rev2; a 'Recently viewed' block keeps rev1."""
    return ("<html><body><nav><a href='/'>Tools</a></nav>"
            f"<aside><h3>Recently viewed</h3><div class='r1'><a class='c9' href='{REV1}'>Manual</a></div></aside>"
            "<main><div class='p1'><h1 class='p2'>Claw hammer</h1>"
            f"<div class='p3'><a class='c9' href='{own}'>Manual</a></div>"
            "<p>Forged steel head.</p></div></main></body></html>")


def test_an_attribute_read_from_a_copy_is_told_by_its_twin_and_moved_to_it():
    from_copy = Blueprint(fields={**MANUAL_LINK.fields, "manual": FieldSpec("manual", "aside a.c9", "str", attr="href")})
    raw = extract(LINK_BEFORE, MANUAL_LINK).raw
    found = copied_field(MANUAL_LINK, from_copy, Page(LINK_BEFORE), Page(link_after()), raw)
    # the twin's href, cut to 40 characters in the one line
    assert found == ("manual (its old value is read from a copy of the record's node: the node built like it where the "
                     "old one was says '/docs/manuals/claw-hammer-hx-2041-forge…' now)")
    moved = to_twins(MANUAL_LINK, from_copy, Page(LINK_BEFORE), Page(link_after()), raw)
    assert moved is not None and moved[1] == ["manual"]
    assert extract(link_after(), moved[0]).data["manual"] == REV2
    # the record's own link unchanged: nothing read from a copy
    assert copied_field(MANUAL_LINK, from_copy, Page(LINK_BEFORE), Page(link_after(own=REV1)), raw) is None
