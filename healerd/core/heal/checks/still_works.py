"""Is there anything to heal? The old blueprint may still give the old records, or the records may give nothing to heal towards.

`consistent`: the old blueprint gives the last good records again on the current page (nothing to
heal), unless a single record's field now reads one of several nodes saying different values
(`newly_torn`: a copy placed before the record may hold the old value). `records_match_shape` and
`holds_values`: the last good records fit the blueprint and hold a value to find again.
"""

from __future__ import annotations

from typing import Any

from healerd.core.blueprint import Blueprint
from healerd.core.heal.page.fingerprint import Page


def consistent(now: Any, old: Any, bp: Blueprint) -> bool:
    """True when the old blueprint gives the old records again on the current page."""
    if bp.items:
        if not isinstance(now, list) or len(now) != len(old) or not now:
            return False
        pairs = list(zip(now, old))
    else:
        pairs = [(now, old)]
    for got, want in pairs:
        for name, spec in bp.fields.items():
            if want.get(name) is None:
                if got.get(name) is None and spec.required and not bp.items:
                    return False
                continue
            if not _same_value(got.get(name), want.get(name), spec.type):
                return False
    return True


def _same_value(a: Any, b: Any, ftype: str) -> bool:
    if ftype == "str":
        return a == b
    return a is not None and b is not None and float(a) == float(b)


def records_match_shape(records: Any, bp: Blueprint) -> bool:
    if bp.items:
        return isinstance(records, list) and all(isinstance(r, dict) for r in records)
    return isinstance(records, dict)


def holds_values(records: Any, bp: Blueprint) -> bool:
    """At least one field value in the old records: without one there is nothing to heal towards."""
    rows = records if bp.items else [records]
    return any(r.get(name) is not None for r in rows for name in bp.fields)


def newly_torn(bp: Blueprint, before: Page, after: Page) -> str | None:
    """A field whose selector matched one node and now matches several with different values, or None.

    The first of them still gives the old value, but it may be a copy placed before the record (a
    "related" block repeating the old value while the record's own changed): which one is the
    field cannot be told, so the page is not taken as unchanged.
    """
    for name, spec in bp.fields.items():
        if spec.css is None or len(before.tree.css(spec.css)) != 1:    # a code blueprint is never healed here
            continue
        nodes = after.tree.css(spec.css)
        values = {after.value(i, spec.attr) for i in map(after.index_of, nodes) if i is not None}
        if len(nodes) > 1 and len(values - {None, ""}) > 1:
            return (f"{name} (its selector matched one node and now matches {len(nodes)} with different values: "
                    f"a copy such as a 'related' block may hold the old value)")
    return None
