"""A text field whose old values now sit in an attribute: `data-*`, `title`, `content`, `value`, `datetime`, `aria-label`.

A price shown as `<span class="price">14.99</span>` is, after a frontend release, kept in
`<span class="price" data-value="14.99">` while the visible text becomes a placeholder or goes
away (the figure drawn by a script). The value is the same, the place carrying it is an
attribute. When a text field's old values are not found as text in a node like the old one (in
a listing: not in the records' text at all), the attributes that carry data are searched for
them; one attribute name doing so is the field's attribute now (in most of the records, for a
listing), and the field is located through it as through its text, at the same confidence
(several attribute names carrying it: the one on the node most like the old one; an unlike node
is a copy). Never on position alone: the old values themselves must be in the attribute.
Attributes that name, style or link a node (class, id, style, href, src) are not data here,
nor is anything in the head (a `<meta content>` there is not what the page shows).
"""

from __future__ import annotations

from healerd.core.heal.evidence import MIN_KIND_SHARE
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.page.in_body import in_head

DATA_ATTRS = frozenset({"title", "content", "value", "datetime", "aria-label"})
MIN_RECORDS = 2   # one record's value in an attribute may be chance; most of several is not


def is_data_attr(name: str) -> bool:
    """True for the attributes a page keeps data in."""
    return name in DATA_ATTRS or (name.startswith("data-") and len(name) > 5)


def _carrying(page: Page, value: str, lo: int, hi: int) -> set[str]:
    """The data attribute names whose value is `value` on the nodes lo..hi-1 outside the head."""
    return {k for i in range(lo, hi) for k, v in page.attrs[i].items()
            if v is not None and v.strip() == value and is_data_attr(k) and not in_head(page, i)}


def attrs_for_text_single(page: Page, value: str | None) -> list[str]:
    """The data attribute names now carrying a single record's old text value (sorted; the route
    tells them apart by the nodes carrying them), or [].

    A copy of the value still said as text elsewhere (a related-recipes card) does not stop the
    search: the route asks only when the text's own search found no node like the old one.
    """
    if not value or not value.strip():
        return []
    return sorted(_carrying(page, value, 0, len(page.attrs)))


def attr_for_text_listing(page: Page, containers: list[int], wants: list[str | None]) -> str | None:
    """The one data attribute name carrying the records' old text values inside their containers
    in most records (at least two, with different values), or None.

    The container's own attributes do not count: a field is read from a node inside its record.
    """
    present = [(c, v) for c, v in zip(containers, wants) if v and v.strip()]
    if len(present) < MIN_RECORDS or len({v for _c, v in present}) < MIN_RECORDS:
        return None
    if any(i != c for c, v in present for i in page.exact(v, None, within=c) if not in_head(page, i)):
        return None   # some records still say the value as text: not moved into an attribute
    counts: dict[str, int] = {}
    for c, v in present:
        for name in _carrying(page, v, c + 1, page.end[c]):
            counts[name] = counts.get(name, 0) + 1
    best = [n for n, k in counts.items() if k >= MIN_KIND_SHARE * len(present)]
    return best[0] if len(best) == 1 else None
