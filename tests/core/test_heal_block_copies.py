"""A single record's field read from a copy of a block, its own node changed in place (healerd.core.heal.checks.block_copies)."""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.checks.block_copies import TWIN_CONFIDENCE, copied_field, copied_group, to_twins
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.pipeline import heal
from healerd.core.judge import LOW_CONFIDENCE

BP = Blueprint(fields={
    "title": FieldSpec("title", "div.item h1.name", "str"),
    "sku": FieldSpec("sku", "div.item div.codes span.sku", "str"),
    "stock": FieldSpec("stock", "div.item div.codes span.stock", "int"),
})

BEFORE = ("<html><body><nav><a href='/'>Tools</a></nav><main><div class='item'><h1 class='name'>Claw hammer</h1>"
          "<div class='codes'><span class='sku'>HX-2041</span><span class='stock'>12 in stock</span></div>"
          "<p>Forged steel head.</p></div></main></body></html>")


def after(sku: str = "HX-2042", stock: str = "12 in stock", aside: str = "<span class='c9'>HX-2041</span>") -> str:
    """Classes renamed; the record's own SKU changed in place; a 'Recently viewed' block keeps copies."""
    return ("<html><body><nav><a href='/'>Tools</a></nav>"
            f"<aside><h3>Recently viewed</h3><div class='r1'>{aside}</div></aside>"
            "<main><div class='p1'><h1 class='p2'>Claw hammer</h1>"
            f"<div class='p3'><span class='c9'>{sku}</span><span class='c8'>{stock}</span></div>"
            "<p>Forged steel head.</p></div></main></body></html>")


def test_a_stale_copy_of_a_changed_value_is_left_for_the_record_s_node_and_staged():
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, after())
    assert res.ok, res.reason
    assert extract(after(), res.blueprint).data["sku"] == "HX-2042"
    # staged for a person, unless the alignment with the fields found again corroborates the place
    assert TWIN_CONFIDENCE < LOW_CONFIDENCE
    assert res.confidence <= TWIN_CONFIDENCE or "corroborated" in res.reason, res.reason
    assert "left only in a copy of a block" in res.reason


def test_the_field_read_from_the_copy_is_moved_to_the_record_s_node():
    old_raw = extract(BEFORE, BP).raw
    page = Page(after())
    from_copy = Blueprint(fields={**BP.fields, "sku": FieldSpec("sku", "aside span.c9", "str")})
    moved = to_twins(BP, from_copy, Page(BEFORE), page, old_raw)
    assert moved is not None and moved[1] == ["sku"]
    assert extract(after(), moved[0]).data["sku"] == "HX-2042"
    assert copied_field(BP, moved[0], Page(BEFORE), page, old_raw) is None


def test_the_copy_is_told_by_its_twin_where_the_old_node_was():
    before, page = Page(BEFORE), Page(after())
    copy = page.index_of(page.tree.css_first("aside span.c9"))
    assert copy is not None
    new = Blueprint(fields={**BP.fields, "sku": FieldSpec("sku", "aside span.c9", "str")})
    old_raw = extract(BEFORE, BP).raw
    assert copied_field(BP, new, before, page, old_raw) is not None
    # the same copy, the record's own value unchanged: nothing stale, nothing refused
    same = Page(after(sku="HX-2041"))
    assert copied_field(BP, new, before, same, old_raw) is None


def test_a_value_the_last_good_page_showed_is_no_changed_twin():
    """The node built alike says a value already on the last good page: another node, not this one changed."""
    before = BEFORE.replace("<p>Forged steel head.</p>", "<p>Forged steel head.</p><span class='sku'>HX-2042</span>")
    page = Page(after())
    new = Blueprint(fields={**BP.fields, "sku": FieldSpec("sku", "aside span.c9", "str")})
    assert copied_field(BP, new, Page(before), page, extract(before, BP).raw) is None


def test_a_number_field_whose_number_stayed_is_no_changed_twin():
    """A label merged into the record's node ('Stock: 12 in stock') changes no number: no stale copy."""
    page = Page(after(sku="HX-2041", stock="Stock: 12 in stock", aside="<span class='c8'>12 in stock</span>"))
    new = Blueprint(fields={**BP.fields, "stock": FieldSpec("stock", "aside span.c8", "int")})
    old_raw = extract(BEFORE, BP).raw
    assert copied_field(BP, new, Page(BEFORE), page, old_raw) is None
    changed = Page(after(sku="HX-2041", stock="13 in stock", aside="<span class='c8'>12 in stock</span>"))
    assert copied_field(BP, new, Page(BEFORE), changed, old_raw) is not None


def test_a_neighbour_in_a_list_of_alike_nodes_is_no_twin():
    """Two rows of one list hang alike from the list: a close value in the next row is another record's."""
    bp = Blueprint(fields={"code": FieldSpec("code", "ul.codes li.main", "str")})
    before = "<html><body><ul class='codes'><li class='main'>HX-2041</li></ul></body></html>"
    # the row read keeps the old value; the next row, whose path is the old one's to the class, says a close one
    now = "<html><body><ul class='codes'><li class='x'>HX-2041</li><li class='main'>HX-2042</li></ul></body></html>"
    new = Blueprint(fields={"code": FieldSpec("code", "ul.codes > li:nth-child(1)", "str")})
    assert copied_field(bp, new, Page(before), Page(now), extract(before, bp).raw) is None


def test_a_twin_farther_from_the_old_place_than_the_node_read_is_no_copy():
    """The record's node read where it was; a look-alike with a close value sits in a new block elsewhere."""
    page = Page(after(sku="HX-2041", aside="<span class='c9'>HX-2042</span>"))
    new = Blueprint(fields={**BP.fields, "sku": FieldSpec("sku", "main span.c9", "str")})
    assert copied_field(BP, new, Page(BEFORE), page, extract(BEFORE, BP).raw) is None


LIST = Blueprint(items="ul.tags li", fields={
    "tag": FieldSpec("tag", "a.tag", "str"),
    "href": FieldSpec("href", "a.tag", "str", attr="href"),
})

LIST_BEFORE = ("<html><body><main><h1>Post</h1><ul class='tags'>"
               "<li><a class='tag' href='/t/incidents.html'>incidents</a></li>"
               "<li><a class='tag' href='/t/telemetry.html'>telemetry</a></li></ul></main></body></html>")


def list_after(cls: str = "tag") -> str:
    """The tags renamed in place (another edition); a 'Related' block keeps copies of the old ones."""
    copies = ("<li><a class='tag' href='/t/telemetry.html'>telemetry</a></li>"
              "<li><a class='tag' href='/t/incidents.html'>incidents</a></li>")
    return ("<html><body><aside class='related'><h3>Related</h3><div class='list'>" + copies + "</div></aside>"
            f"<main><h1>Post</h1><ul class='tags'><li><a class='{cls}' href='/t/incidents.html?v=2'>incidents 2nd ed.</a></li>"
            f"<li><a class='{cls}' href='/t/telemetry.html?v=2'>telemetry 2nd ed.</a></li></ul></main></body></html>")


def test_a_list_read_again_from_its_copy_keeps_the_old_blueprint_when_it_reads_the_records_in_place():
    old = extract(LIST_BEFORE, LIST).data
    res = heal(LIST, LIST_BEFORE, old, list_after())
    assert res.ok and res.unchanged, res.reason
    assert res.blueprint is LIST


def test_a_list_read_again_from_its_copy_is_refused_when_the_old_selectors_miss_the_records():
    old = extract(LIST_BEFORE, LIST).data
    res = heal(LIST, LIST_BEFORE, old, list_after(cls="x7"))
    assert not res.ok, res.reason
    assert "copy of the list 'ul.tags li'" in res.reason


DOC = Blueprint(fields={
    "source": FieldSpec("source", "div.page-source a", "str", attr="href"),
    "title": FieldSpec("title", "article h1", "str"),
})
DOC_BEFORE = ("<html><body><div class='layout'><article><h1>API reference</h1><p>Text.</p></article>"
              "<div class='page-source'><a class='muted' href='_sources/api.txt'>Show source</a></div></div></body></html>")
# the heading removed from the page; a "Related" block copies the record's nodes, the heading's too
DOC_AFTER = ("<html><body><div class='layout'><aside><h3>Related</h3>"
             "<div class='item'><a class='muted' href='_sources/api.txt'>Show source</a></div>"
             "<div class='item'><h1>API reference</h1></div></aside><article><p>Text.</p></article>"
             "<div class='page-source'><a class='muted' href='_sources/api.txt'>Show source</a></div></div></body></html>")


def test_a_field_said_only_in_a_block_copying_the_record_is_refused():
    """The source read from the copy (the same value where the old node was tells it is one): the
    heading, said nowhere but in that block, is a copy of data gone from the record."""
    from_copy = Blueprint(fields={"source": FieldSpec("source", "aside div.item a", "str", attr="href"),
                                  "title": FieldSpec("title", "aside h1", "str")})
    why = copied_field(DOC, from_copy, Page(DOC_BEFORE), Page(DOC_AFTER), extract(DOC_BEFORE, DOC).raw)
    assert why is not None and why.startswith("title") and "block copying the record" in why
    # the heading still said by the record too: reading it from the copy gives its value, nothing refused
    kept = DOC_AFTER.replace("<article><p>", "<article><h1>API reference</h1><p>")
    assert copied_field(DOC, from_copy, Page(DOC_BEFORE), Page(kept), extract(DOC_BEFORE, DOC).raw) is None
    # the source read where the old node was: its copy in the block still tells the block is one
    in_place = Blueprint(fields={"source": FieldSpec("source", "div.page-source a", "str", attr="href"),
                                 "title": FieldSpec("title", "aside h1", "str")})
    assert copied_field(DOC, in_place, Page(DOC_BEFORE), Page(DOC_AFTER), extract(DOC_BEFORE, DOC).raw) is not None
    # a block copying no other field's node is not known to be a copy: nothing refused by this check
    alone = DOC_AFTER.replace("<div class='item'><a class='muted' href='_sources/api.txt'>Show source</a></div>", "")
    assert copied_field(DOC, in_place, Page(DOC_BEFORE), Page(alone), extract(DOC_BEFORE, DOC).raw) is None


def test_the_heal_refuses_a_heading_left_only_in_a_block_copying_the_record():
    res = heal(DOC, DOC_BEFORE, extract(DOC_BEFORE, DOC).data, DOC_AFTER)
    assert not res.ok and res.reason.startswith("cannot heal: title"), res.reason


def test_a_field_beside_the_copying_block_is_not_read_from_it():
    """The block's copy of the source sits in a section that also holds the record's own heading, beside
    the block, not in one of its slots: the heading is the record's, nothing refused."""
    beside = ("<html><body><div class='layout'><section><aside><h3>Related</h3>"
              "<div class='item'><a class='muted' href='_sources/api.txt'>Show source</a></div></aside>"
              "<h1>API reference</h1><p>Text.</p></section>"
              "<div class='page-source'><a class='muted' href='_sources/api.txt'>Show source</a></div></div></body></html>")
    new = Blueprint(fields={"source": FieldSpec("source", "div.page-source a", "str", attr="href"),
                            "title": FieldSpec("title", "section > h1", "str")})
    assert copied_field(DOC, new, Page(DOC_BEFORE), Page(beside), extract(DOC_BEFORE, DOC).raw) is None


POSTS = Blueprint(items="main article", fields={"title": FieldSpec("title", "h2 a", "str"),
                                                "author": FieldSpec("author", "span.by", "str")})


def post(title: str, author: str) -> str:
    return f"<article><h2><a href='#'>{title}</a></h2><span class='by'>{author}</span></article>"


POSTS_BEFORE = ("<html><body><main><section class='featured'>" + post("Honing knives", "Mara") + "</section><ul>"
                + "".join(f"<li>{post(t, a)}</li>" for t, a in (("Rye crackers", "Tomas"), ("Pantry basics", "Ana")))
                + "</ul></main></body></html>")


def test_records_apart_from_the_list_repeating_old_records_whole_are_a_copy():
    """A featured post and a list, their titles changed in place; a 'Recommended' list repeats two old records."""
    after = ("<html><body><main><section class='featured'>" + post("Honing knives II", "Mara") + "</section><ul>"
             + "".join(f"<li>{post(t, a)}</li>" for t, a in (("Rye crackers II", "Tomas"), ("Pantry basics II", "Ana")))
             + "</ul><aside><h3>Recommended</h3><div class='list'>" + post("Rye crackers", "Tomas")
             + post("Honing knives", "Mara") + "</div></aside></main></body></html>")
    old = extract(POSTS_BEFORE, POSTS).raw
    got = extract(after, POSTS).raw
    assert len(got) == 5    # the old blueprint reads the copies as records too
    why = copied_group(POSTS, POSTS, Page(POSTS_BEFORE), Page(after), old, got)
    assert why is not None and "2 of the records read" in why
    # the same block saying the records' new values: not copies of old records, nothing known
    fresh = after.replace("<a href='#'>Rye crackers</a>", "<a href='#'>Rye crackers II</a>")
    assert copied_group(POSTS, POSTS, Page(POSTS_BEFORE), Page(fresh), old, extract(fresh, POSTS).raw) is None
    # and the heal refuses
    assert not heal(POSTS, POSTS_BEFORE, extract(POSTS_BEFORE, POSTS).data, after).ok


def test_new_records_in_a_second_list_are_no_copy_when_they_are_new():
    """A second list of records saying values no old record had whole: records, not copies."""
    before, page = Page(POSTS_BEFORE), Page(POSTS_BEFORE.replace("</ul>", "</ul><div class='more'>"
                                                                + post("Sourdough", "Ana") + "</div>"))
    old = extract(POSTS_BEFORE, POSTS).raw
    got = extract(page.tree, POSTS).raw
    assert copied_group(POSTS, POSTS, before, page, old, got) is None
