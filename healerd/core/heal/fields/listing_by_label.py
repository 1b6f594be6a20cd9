"""A listing field whose values all changed, placed again by the label that named it.

A report's "More info:" link now follows a new CWE link, so the old `a:nth-of-type(2)` reads
another link, and its every address changed (they name the release now): no old value is left
to find. The label before the old node in the record (a <b>, <dt> or <label> ending in ":"; not
a column's header, which stays when its column is removed) still names it. The node of the old
tag carrying the old label in a sample record (a label's own <b>, or the next label's, is no
value) gives selectors relative to its record; the cheapest one that, in most records, finds a
node under the same label giving a value of the old kind, and never a node under another label,
is the field's selector.
"""

from __future__ import annotations

from healerd.core.blueprint import FieldSpec
from healerd.core.heal.evidence import MIN_KIND_SHARE, STRONG_LABEL_KINDS
from healerd.core.heal.page.fingerprint import Fingerprint, Page
from healerd.core.heal.page.selectors import lexbor_first_in, relative_selectors
from healerd.core.heal.records.old_kinds import _OldKind, _spread

MAX_TRIED = 12
# labels that sit in the record beside the value; not a column's header, which stays when its
# column is removed and then names the next column sliding under it
_IN_RECORD = tuple(k for k in STRONG_LABEL_KINDS if k != "column")


def by_old_label(after: Page, containers: list[int], spec: FieldSpec, fp: Fingerprint | None,
                 kind: _OldKind) -> str | None:
    """A selector reading, in most records, the node the old label names; None when none does clearly."""
    if fp is None or not fp.label or fp.label_kind not in _IN_RECORD or not containers or not kind.kinds:
        return None
    for c in _spread(containers, 3):
        named = [i for i in range(c + 1, after.end[c])
                 if after.tags[i] == fp.tag and after.label(i) == fp.label and kind.fits(after.value(i, spec.attr))]
        if len(named) != 1:
            continue
        for sel in relative_selectors(after, c, named[0], avoid_attr=spec.attr)[:MAX_TRIED]:
            css = sel.css()
            if _reads_the_label(after, containers, css, spec, fp, kind):
                return css
        return None
    return None


def _reads_the_label(after: Page, containers: list[int], css: str, spec: FieldSpec, fp: Fingerprint,
                     kind: _OldKind) -> bool:
    good = 0
    for c in containers:
        node = lexbor_first_in(after, c, css)
        if node is None:
            continue
        if after.label(node) != fp.label:
            return False
        good += kind.fits(after.value(node, spec.attr))
    return good >= MIN_KIND_SHARE * len(containers)


def no_old_value_left(after: Page, old_raw: list, name: str, attr: str | None) -> bool:
    """None of the field's old values is anywhere on the page (they all changed, or the data is gone)."""
    return not any(after.exact(v, attr) for v in {r.get(name) for r in old_raw} if v)
