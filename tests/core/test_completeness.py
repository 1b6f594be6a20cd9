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
