"""The deploy judge (healerd.core.judge): boundaries a mutation tool found no test for.

A field that worked under production may change under a candidate when production lost the
distinction between records (it reads what they share: a group's heading) and the candidate gives
it back: at least three distinct last good values, production at most half as many, the candidate
as many as the last good.
"""

from __future__ import annotations

import pytest

from healerd.core.judge import _lost_distinction

GOOD3 = ["/a", "/b", "/c"]
GOOD4 = ["/a", "/b", "/c", "/d"]


@pytest.mark.parametrize("production, candidate, last_good, lost", [
    (["/g", "/g", "/g"], GOOD3, GOOD3, True),               # three distinct last good values: the least that counts
    (["/g", "/g"], ["/a", "/b"], ["/a", "/b"], False),      # two are too few to tell
    (["/g", "/g", "/h", "/h"], GOOD4, GOOD4, True),         # production exactly half as many: lost
    (["/g", "/g", "/h", "/i"], GOOD4, GOOD4, False),        # three of four: more than half, not lost
    (["/g", "/h", "/h"], GOOD3, GOOD3, False),              # two of three: more than half
    (["/g", "/g", "/g"], ["/a", "/b", "/b"], GOOD3, False),  # the candidate tells fewer apart than the last good
    (["/g", "/g", "/g"], ["/a", "/b", "/c"], ["/x", "/y", "/z"], True),   # as many distinct values, not the same ones
    (["/g", "/g", "/g", "/g"], GOOD4 + ["/e"], GOOD4, False),             # not the same number of records
    (["/g", "/g", "/g"], GOOD3, ["/a", "/b", None], False),   # an empty last good value is no distinct value
    (["", "", "/g"], GOOD3, GOOD3, True),                      # production's empty values are none
    ([" /g ", "/g", "/g\n"], GOOD3, GOOD3, True),               # whitespace aside, one value
])
def test_lost_distinction_boundaries(production, candidate, last_good, lost):
    assert _lost_distinction(production, candidate, last_good) is lost
