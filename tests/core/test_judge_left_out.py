"""judge.left_out: a listing candidate that leaves out a last good record the page still shows."""

from __future__ import annotations

from healerd.core.blueprint import from_dict
from healerd.core.judge import left_out

BP = from_dict({"items": "li", "fields": {"title": {"css": "a"}, "author": {"css": "span"}}})
OLD = [{"title": "Honing versus sharpening", "author": "Tomas"}, {"title": "Stocking a pantry", "author": "Mara"},
       {"title": "Rye crackers", "author": "Tomas"}]
PAGE = ("<aside><a>Honing versus sharpening</a> by <span>Tomas</span></aside><ol><li><a>Stocking a pantry</a>"
        "<span>Mara</span></li><li><a>Rye crackers</a><span>Tomas</span></li></ol>")


def test_a_record_still_on_the_page_but_not_in_the_candidate_is_named():
    why = left_out(BP, OLD[1:], OLD, PAGE)
    assert why is not None and "1 last good record" in why and "Honing versus sharpening" in why


def test_every_record_kept_gone_from_the_page_or_a_single_record_is_not():
    assert left_out(BP, OLD, OLD, PAGE) is None
    assert left_out(BP, OLD[1:], OLD, PAGE.replace("Honing versus sharpening", "Something else")) is None
    assert left_out(BP, OLD[0], OLD[0], PAGE) is None
    # a value shared by other records (an author) tells no record apart
    assert left_out(BP, [{"title": "New", "author": "Tomas"}], [{"title": "Old one", "author": "Tomas"},
                                                               {"title": "Old two", "author": "Tomas"}],
                    "<p>Tomas</p>") is None
