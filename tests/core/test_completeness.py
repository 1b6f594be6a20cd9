"""Records the items selector leaves out while the page still shows them."""

from __future__ import annotations

from healerd.core.blueprint import from_dict
from healerd.core.completeness import missing_records
from tests.support.decoypages import PLIST_BP, plist


def bp(items: str):
    return from_dict({**PLIST_BP, "url": "http://127.0.0.1:9/", "items": items})


def test_a_positional_exclusion_that_outlived_its_decoy_leaves_out_a_record():
    positional = bp("#plist tbody tr:nth-child(n+2)")
    assert missing_records(positional, plist(sponsored=True), plist(sponsored=True)) is None   # the decoy: unlike
    why = missing_records(positional, plist(sponsored=True), plist())
    assert why and "Trail Kettle" in why


def test_look_alikes_left_out_on_the_last_good_page_too_are_a_persons_choice():
    skip_first = bp("#plist tbody tr:nth-child(n+2)")
    assert missing_records(skip_first, plist(), plist()) is None
    assert missing_records(bp("#plist tbody tr"), plist(), plist()) is None
    assert missing_records(bp("#plist tbody tr"), None, plist()) is None


def test_a_positional_exclusion_is_rewritten_to_the_telling_class():
    from healerd.core.extract import extract
    from healerd.core.telling_feature import by_telling_feature, positional

    assert positional("tr:nth-child(n+2)") and positional("#t tr:not(:first-child)") and not positional("tr.row")
    rewritten = by_telling_feature(bp("tr:nth-child(n+2)"), plist(sponsored=True))
    assert rewritten is not None and rewritten.items == "tbody > tr:not(.sponsored)"
    assert len(extract(plist(), rewritten).data) == len(extract(plist(sponsored=True), rewritten).data) == 6
    # Nothing tells the left-out row apart (no class): no rewrite.
    plain = plist(sponsored=True).replace('<tr class="sponsored">', "<tr>")
    assert by_telling_feature(bp("tr:nth-child(n+2)"), plain) is None
    assert by_telling_feature(bp("#plist tbody tr"), plist(sponsored=True)) is None


def test_a_header_row_the_selector_never_read_does_not_hide_the_telling_class():
    """A classed table: a header row (no class) and a sponsored row built like the players but
    for its class, both before the records. Only the row the position leaves out of the
    classed selector counts: the rewrite excludes it by its class."""
    from healerd.core.extract import extract
    from healerd.core.telling_feature import by_telling_feature

    rows = [("Ada", 31), ("Grace", 27), ("Linus", 24), ("Margaret", 22), ("Ken", 19)]

    def page(sponsored: bool) -> str:
        body = "".join(f'<tr class="player"><td class="name">{n}</td><td class="score">{s}</td></tr>' for n, s in rows)
        decoy = ('<tr class="player promoted"><td class="name">Zed <span class="badge">Sponsored</span></td>'
                 '<td class="score">99</td></tr>') if sponsored else ""
        return (f'<html><body><table class="stats"><tr><th>Name</th><th>Score</th></tr>{decoy}{body}'
                f'</table></body></html>')

    league = from_dict({"url": "http://127.0.0.1:9/", "items": "tr.player:nth-child(n+3)",
                        "fields": {"name": {"css": "td.name"}, "score": {"css": "td.score", "type": "int"}}})
    rewritten = by_telling_feature(league, page(sponsored=True))
    assert rewritten is not None and rewritten.items == "tr.player:not(.promoted)"
    names = [r["name"] for r in extract(page(sponsored=False), rewritten).data]
    assert names == [n for n, _ in rows]   # the decoy gone again: no player left out


def test_the_judge_stages_a_repair_that_excludes_by_position():
    from healerd.core.extract import extract
    from healerd.core.judge import PROMOTE, STAGE, judge

    html = plist(sponsored=True)
    candidate, production = bp("#plist tbody tr:nth-child(n+2)"), bp("#plist tbody tr.gone")
    last_good = extract(plist(), bp("#plist tbody tr")).data
    ex = extract(html, candidate)
    assert judge(candidate, production, ex, html, last_good=last_good, confidence=0.9).action == PROMOTE
    v = judge(candidate, production, ex, html, last_good=last_good, confidence=0.9,
              by_position="the items selector leaves look-alikes out by position")
    assert v.action == STAGE and "by position" in v.reason
