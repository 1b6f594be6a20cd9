"""Is a field's data gone from the page? The check that tells a refusal that is right from a failed heal.

A refusal of the built-in healer is either a healer's limit (the data is on the page, the
healer could not tell where) or the right answer (the data is no longer there: no fix can
bring it back). Only the first is a failed fix attempt; the second is counted apart
(`data_gone` in `healerctl stats`) and the report tells the person what works: make the
field optional or remove it.

A field's data is gone when, on the current page:

- none of the raw values the field had on the last good page is there, whole as an
  element's text or attribute, or inside a longer text (values of 4 characters or more);
- and the label that named it on the last good page (a column header, a <label>, a <dt>, a
  preceding heading) is nowhere either (a field without a label is judged by its values).

Plain functions over the two pages: no database, no actors.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from healerd.core.blueprint import Blueprint
from healerd.core.extract import extract
from healerd.core.heal.page.fingerprint import Page, norm_label

MAX_VALUES = 50   # of a field's old values looked for (a listing's first records say enough)


def _old_values(raw: Any, name: str) -> list[str]:
    rows = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for r in rows:
        v = r.get(name) if isinstance(r, dict) else None
        if isinstance(v, str) and v.strip() and v not in out:
            out.append(v)
        if len(out) >= MAX_VALUES:
            break
    return out


def _labels(before: Page, bp: Blueprint, name: str) -> set[str]:
    spec = bp.fields[name]
    labels: set[str] = set()
    if spec.css is None:
        return labels
    if bp.items:
        nodes = [n for c in before.tree.css(bp.items)[:MAX_VALUES] if (n := c.css_first(spec.css)) is not None]
    else:
        nodes = before.tree.css(spec.css)[:MAX_VALUES]
    counts: dict[str, int] = {}
    for node in nodes:
        i = before.index_of(node)
        if i is not None:
            label = before.label(i)
            if label:
                counts[label] = counts.get(label, 0) + 1
    # In a listing, a label names the field when the records share it (a column header, "Price:");
    # one of each record's own (the card's heading before the value) is another field's value.
    shared = 1 if not bp.items or len(nodes) < 2 else max(2, len(nodes) // 2)
    labels.update(label for label, n in counts.items() if n >= shared)
    return labels


def _value_present(after: Page, value: str, attr: str | None) -> bool:
    if after.exact(value, attr):
        return True
    return bool(after.near(value, attr, limit=1)) if len(value) >= 4 else False


def _label_present(after: Page, labels: set[str]) -> bool:
    if not labels:
        return False
    return any(norm_label(t) in labels for t in after.text_index if len(t) <= 80)


def gone_fields(bp: Blueprint, before_html: str, after_html: str, names: Iterable[str] | None = None) -> list[str]:
    """The fields (of `names`, default all) whose data is gone from `after_html`, judged against
    what `bp` read on `before_html` (the last good page). A field with no old value to look for
    is never called gone: there is no evidence either way."""
    wanted = [n for n in (bp.fields if names is None else names) if n in bp.fields]
    if not wanted or bp.parser or not before_html or not after_html:
        return []
    before = Page(before_html)
    after = Page(after_html)
    raw = extract(before.tree, bp).raw
    gone = []
    for name in wanted:
        spec = bp.fields[name]
        values = _old_values(raw, name)
        if not values:
            continue
        if any(_value_present(after, v, spec.attr) for v in values):
            continue
        if _label_present(after, _labels(before, bp, name)):
            continue
        gone.append(name)
    return gone


def refused_fields(details: dict | None) -> list[str]:
    """The fields a refusal of the built-in healer names (its details: field -> {"status", "why"})."""
    return sorted(k for k, d in (details or {}).items()
                  if k != "items" and isinstance(d, dict) and d.get("status") in ("gone", "ambiguous"))
