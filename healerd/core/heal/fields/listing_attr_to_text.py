"""A listing's attribute field whose attribute was dropped while the node's text still says the same.

A navigation link read as `a[title]` showed its title twice on the last good page: in the
attribute and as its text ("Home" and "Home"). A release that drops the redundant attribute
keeps the text, so the records' old values are nowhere in the attribute but all still there.
The field follows its text only when that copy was exact in every record of the last good page
(the text was the same data, not a caption beside it) and the attribute carries none of the old
values in the current records; the text then has to give the old values themselves in most
records (not merely values of the old kind), and the field search chooses the selector as for
any field. A lower confidence than a value found in place.
"""

from __future__ import annotations

from healerd.core.blueprint import FieldSpec
from healerd.core.heal.evidence import MIN_KIND_SHARE
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.page.selectors import lexbor_first_in

MIN_RECORDS = 2   # one record's text equal to its attribute may be chance; every one of several is not


def text_was_a_copy(before: Page, old_containers: list[int], after: Page, containers: list[int],
                    records: list[int], old_raw: list, name: str, spec: FieldSpec) -> bool:
    """True when the attribute no longer carries the old values and the old nodes' text always equalled them."""
    if not spec.attr or not spec.css:
        return False
    wants = [old_raw[r].get(name) for r in records]
    if any(v and after.exact(v, spec.attr, within=c) for v, c in zip(wants, containers)):
        return False   # the attribute still carries some: not a dropped attribute
    seen = 0
    for r, rec in enumerate(old_raw):
        value = rec.get(name)
        if not value:
            continue
        if r >= len(old_containers):
            return False
        node = lexbor_first_in(before, old_containers[r], spec.css)
        if node is None or before.value(node, None) != value:
            return False
        seen += 1
    if seen < MIN_RECORDS:
        return False
    # the text still gives the old values (not merely values of the old kind) in most records
    present = [(v, c) for v, c in zip(wants, containers) if v]
    found = sum(1 for v, c in present if after.exact(v, None, within=c))
    return bool(present) and found >= MIN_KIND_SHARE * len(present)
