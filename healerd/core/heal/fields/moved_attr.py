"""An attribute field whose old value now sits in another attribute.

A date read from `abbr.published[title]` is, after a theme change, in `time[datetime]`: the
value is the same, the attribute carrying it is not. When the old attribute no longer carries a
field's old value anywhere, the other attributes are searched for it; one attribute name doing
so (in most records, for a listing) is the field's attribute now, and the field is located again
through it as through the old one. Values that occur by chance (short, plain numbers) are not
followed, and neither are the attributes that name or style a node (class, id, style).
"""

from __future__ import annotations

from healerd.core.heal.evidence import MIN_KIND_SHARE, is_weak
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.page.in_body import in_head

_NOT_DATA = frozenset({"class", "id", "style"})


def _names_carrying(page: Page, value: str, old_attr: str, within: int | None = None) -> set[str]:
    """The attribute names other than `old_attr` whose value is `value` (on the page, or inside `within`)."""
    rng = range(within, page.end[within]) if within is not None else range(len(page.attrs))
    return {k for i in rng for k, v in page.attrs[i].items()
            if v == value and k != old_attr and k not in _NOT_DATA}


def other_attr_single(page: Page, value: str | None, old_attr: str | None) -> str | None:
    """The one other attribute now carrying a single record's old value, or None (none, or several)."""
    if not old_attr or not value or is_weak(value) or page.exact(value, old_attr):
        return None
    names = _names_carrying(page, value, old_attr)
    return next(iter(names)) if len(names) == 1 else None


def other_attr_listing(page: Page, containers: list[int], wants: list[str | None], old_attr: str | None) -> str | None:
    """The one other attribute carrying the records' old values inside their containers in most records, or None."""
    if not old_attr:
        return None
    present = [(c, v) for c, v in zip(containers, wants) if v and not is_weak(v)]
    if not present or any(page.exact(v, old_attr, within=c) for c, v in present):
        return None
    counts: dict[str, int] = {}
    for c, v in present:
        for name in _names_carrying(page, v, old_attr, within=c):
            counts[name] = counts.get(name, 0) + 1
    best = [n for n, k in counts.items() if k >= MIN_KIND_SHARE * len(present)]
    return best[0] if len(best) == 1 else None


def lone_carrier(page: Page, value: str, attr: str) -> int | None:
    """The one node outside the head whose `attr` carries `value`, or None (none, or several)."""
    nodes = [i for i in page.exact(value, attr) if not in_head(page, i)]
    return nodes[0] if len(nodes) == 1 else None
