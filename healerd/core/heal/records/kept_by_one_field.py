"""The old items selector still finds the records when one field still reads every record's old value.

A report's links changed (every "More info" address now names the release) while its findings
did not: fewer than most of the old values are found in the old containers, but the old items
selector finds as many records as before and one field's old selector reads, record by record
and in order, exactly the old values (not one value repeated). Those containers are the records;
looking for others by the values left (some repeated, "blacklist:" ten times) would find fewer.
"""

from __future__ import annotations

from healerd.core.blueprint import Blueprint
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.page.selectors import lexbor_first_in


def one_field_reads_every_record(after: Page, cur: list, old_raw: list, bp: Blueprint) -> str | None:
    """The name of a field whose old selector gives every record's old value in the old containers, or None."""
    if len(old_raw) < 2 or not cur or len(cur) != len(old_raw) or any(c is None for c in cur):
        return None
    for name, spec in bp.fields.items():
        wants = [r.get(name) for r in old_raw]
        if any(not w for w in wants) or len(set(wants)) < 2 or spec.css is None:
            continue
        if all(after.value(n, spec.attr) == w if n is not None else False
               for n, w in ((lexbor_first_in(after, c, spec.css), w) for c, w in zip(cur, wants))):
            return name
    return None
