"""Values changed in place: a heal that moves a field onto a stale copy of its old values.

A redesign may change the records' own values while a copy of the old ones stays elsewhere on
the page (a "related" block, a link that always carried the same URL, a cached summary). The
healer, looking for the old values, finds that copy and moves the field there. But when the
old selector still reads, in every record, a value of the old kind from a node in the old
node's place (the same tags on the way down from the record, the node's own tag) and that
value is not the old one, the old node is still the field and its value changed: the copy is
stale. `kept_in_place` names such fields so that the heal keeps their old selectors.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.heal.checks.placeholders import PLACEHOLDER
from healerd.core.heal.evidence import HealResult, is_weak, split_confidence, value_kind
from healerd.core.heal.page.extraction import extract_on
from healerd.core.heal.page.fingerprint import Page, fingerprint, similarity

# On a single record the path is read from the node up this many levels (the record's own
# container is not known; a wrapper added far above the field does not count against it).
SINGLE_LEVELS = 3
# Look-alikes of the old node weighed at most (the nodes of its tag, in document order).
LOOK_ALIKES = 400
# How much more like the old node the look-alike must be than the heal's node (the carriers of the old
# value already fell by one: the field's node changed).
LOOK_MARGIN = 0.05


def _tag_path(page: Page, container: int, i: int, limit: int) -> tuple[str, ...]:
    """Tags from i up to (not including) container, or `limit` levels at most."""
    out = [page.tags[i]]
    p = page.parent[i]
    while p >= 0 and p != container and len(out) <= limit:
        out.append(page.tags[p])
        p = page.parent[p]
    return tuple(out)


def _same_place(old: tuple[str, ...], new: tuple[str, ...]) -> bool:
    """The node's own tag kept, and the old tags down from the record all still there, in order
    (wrappers added between them are a redesign's, not another place)."""
    if not old or not new or old[0] != new[0]:
        return False
    rest = iter(new[1:])
    return all(tag in rest for tag in old[1:])


def _others_nodes(spec: FieldSpec, old_bp: Blueprint, new_bp: Blueprint, page: Page, container: int) -> set[int]:
    """The nodes the other fields read in this record, by their old selectors or their repaired ones
    (a field read from the same node by the same old selector, a link's href beside its text, is no other)."""
    out = set()
    for name, other in old_bp.fields.items():
        if other.css is None or other.css == spec.css:
            continue
        repaired = new_bp.fields.get(name)
        for css in {other.css, repaired.css if repaired is not None else None} - {None}:
            assert css is not None
            i = page.first_in(container, css)
            if i is not None:
                out.add(i)
    return out


def _record_values(page: Page, container: int, attr: str | None) -> set[str]:
    """Every value the record's nodes gave (their texts, or the attribute read)."""
    out = set()
    for i in range(container, page.end[container]):
        v = page.value(i, attr)
        if v:
            out.add(v)
    return out


def _words_of(text: str) -> str:
    return " ".join("".join(c if c.isalnum() else " " for c in text.casefold()).split())


def _reworded_label(page: Page, container: int, old_node: int, got: str, want: str) -> bool:
    """`got` is the text of another node of the old node's tag in the old record, reworded: its words
    whole and in order in it, in another case or with words added ("Your test id", "Test ID (current)"),
    at least half of its words. A label's text changed, not the field's value: the selector slid onto it."""
    new, own = _words_of(got), _words_of(want)
    if not new or new == own:
        return False
    tag = page.tags[old_node]
    for i in range(container, page.end[container]):
        if i == old_node or page.tags[i] != tag:
            continue
        old = _words_of(page.texts[i])
        if len(old) >= 4 and old != own and f" {old} " in f" {new} " and 2 * old.count(" ") >= new.count(" "):
            return True
    return False


def _containers(page: Page, items: str | None) -> list[int]:
    if not items:
        return [0]
    return [i for i in (page.index_of(n) for n in page.tree.css(items)) if i is not None]


def _in_place(spec: FieldSpec, old_bp: Blueprint, new_bp: Blueprint, before: Page, after: Page,
              old_values: list) -> bool:
    """The old selector reads, in every record, a changed value of the old kind from the old node's place."""
    assert spec.css is not None
    olds = _containers(before, old_bp.items)
    news = _containers(after, new_bp.items)
    if not olds or len(olds) != len(news) or len(olds) != len(old_values):
        return False
    limit = SINGLE_LEVELS if not old_bp.items else 1000
    changed = 0
    for oc, nc, want in zip(olds, news, old_values):
        if not isinstance(want, str) or not want.strip():
            return False
        o, n = before.first_in(oc, spec.css), after.first_in(nc, spec.css)
        if o is None or n is None:
            return False
        got = after.value(n, spec.attr)
        if not got or not got.strip() or value_kind(got) != value_kind(want):
            return False
        if not _same_place(_tag_path(before, oc, o, limit), _tag_path(after, nc, n, limit + 2)):
            return False
        if before.sibling_index(o) != after.sibling_index(n):
            return False  # another node of the record now matched (a class it was told apart by renamed)
        if got in _record_values(before, oc, spec.attr):
            return False  # a value the old record already had elsewhere: the selector slid onto it
        if not spec.attr and _reworded_label(before, oc, o, got, want):
            return False  # ... or a label the old record had, reworded ("Test ID:" now "TEST ID")
        if n in _others_nodes(spec, old_bp, new_bp, after, nc):
            return False  # another field's node (a column reordered, the field's own node emptied)
        changed += got != want
    # At least one value changed in place (the others read the old value there, as the copy does).
    return changed > 0


def kept_in_place(old_bp: Blueprint, new_bp: Blueprint, before: Page, after: Page,
                  old_raw: dict | list[dict], new_raw: dict | list[dict]) -> list[str]:
    """The fields the heal moved onto their old values whose old selectors still read them, changed in place."""
    rows = old_raw if isinstance(old_raw, list) else [old_raw]
    got = new_raw if isinstance(new_raw, list) else [new_raw]
    out = []
    for name, spec in old_bp.fields.items():
        now = new_bp.fields.get(name)
        if now is None or spec.css is None or (now.css, now.attr) == (spec.css, spec.attr):
            continue
        if len(got) != len(rows) or any(g.get(name) != r.get(name) for g, r in zip(got, rows)):
            continue  # the heal reads other values than the old ones: not a copy of them
        if spec.attr is None and now.attr is not None and _hidden_on_old_node(spec, now, new_bp, after):
            continue  # the value left the old node's text for an attribute on it or inside it: not a copy
        if _in_place(spec, old_bp, new_bp, before, after, [r.get(name) for r in rows]):
            out.append(name)
    # A field read from the same node as one kept (a link's text and its href) was moved with it:
    # it goes back with it.
    moved = {(old_bp.fields[n].css, new_bp.fields[n].css) for n in out}
    out += [n for n, spec in old_bp.fields.items() if n not in out and n in new_bp.fields
            and (spec.css, new_bp.fields[n].css) in moved]
    return out


def _hidden_on_old_node(spec: FieldSpec, now: FieldSpec, new_bp: Blueprint, after: Page) -> bool:
    """In every record the heal reads an attribute of the old selector's node or of a node inside it,
    and that node's text is now nothing or a placeholder: the value hidden in an attribute, not changed."""
    assert spec.css is not None and now.css is not None
    for c in _containers(after, new_bp.items):
        o, n = after.first_in(c, spec.css), after.first_in(c, now.css)
        if o is None or n is None or not after.contains(o, n):
            return False
        text = after.value(o, None)
        if text and not PLACEHOLDER.match(text):
            return False
    return True


def _carriers(page: Page, value: str, attr: str | None) -> int:
    """How many innermost elements carry `value` (a wrapper with the same text is not one more)."""
    hits = page.exact(value, attr)
    return sum(1 for k, i in enumerate(hits) if not (k + 1 < len(hits) and page.contains(i, hits[k + 1])))


def stale_copies(old_bp: Blueprint, new_bp: Blueprint, before: Page, after: Page,
                 old_raw: dict | list[dict], new_raw: dict | list[dict]) -> list[str]:
    """The fields the heal reads from copies the last good page already had besides the field.

    The heal found a field's old values again; but on the last good page each of them was carried
    by more places than now, one fewer: the field's own node changed its value, and what is left
    are the copies it always had (a permalink repeating a post's URL, a "Next: Changelog" link
    repeating a table of contents' entry). A copy then is a copy still, not the field's new home.
    """
    rows = old_raw if isinstance(old_raw, list) else [old_raw]
    got = new_raw if isinstance(new_raw, list) else [new_raw]
    out = []
    for name, spec in old_bp.fields.items():
        now = new_bp.fields.get(name)
        if now is None or (now.css, now.attr) == (spec.css, spec.attr) and new_bp.items == old_bp.items:
            continue
        values = [v for g in got if isinstance(v := g.get(name), str) and not is_weak(v)]
        if not values or len(values) != len(got):
            continue
        olds = {r.get(name) for r in rows}
        if not all(v in olds and 0 < _carriers(after, v, spec.attr) < _carriers(before, v, spec.attr) for v in values):
            continue
        if _look_alike_changed(spec, now, old_bp, new_bp, before, after, values):
            out.append(name)
    return out


def _look_alike_changed(spec: FieldSpec, now: FieldSpec, old_bp: Blueprint, new_bp: Blueprint, before: Page,
                        after: Page, values: list) -> bool:
    """In the first record, a node clearly more like the old node than the heal's, saying another value
    of the old kind: the field's node, its value changed (else a copy dropped by the redesign)."""
    assert spec.css is not None and now.css is not None
    olds, news = _containers(before, old_bp.items), _containers(after, new_bp.items)
    if not olds or not news:
        return False
    o, h = before.first_in(olds[0], spec.css), after.first_in(news[0], now.css)
    if o is None or h is None:
        return False
    want = values[0]
    fp = fingerprint(before, o, want)
    mine = similarity(fp, after, h, want)
    best = 0.0
    for i in after.by_tag.get(before.tags[o], [])[:LOOK_ALIKES]:
        got = after.value(i, spec.attr)
        if i == h or not got or got == want or value_kind(got) != value_kind(want):
            continue
        best = max(best, similarity(fp, after, i, got))
    return best >= mine + LOOK_MARGIN


def keep_in_place(bp: Blueprint, res: HealResult, kept: list[str], after: Page, now: Any) -> tuple[HealResult, Any]:
    """The heal with the fields whose values changed in place read by their old selectors again."""
    assert res.blueprint is not None
    why = f"values changed in place: {', '.join(kept)} still read by the old selector"
    fields = {**res.blueprint.fields, **{n: bp.fields[n] for n in kept}}
    if fields == bp.fields and res.blueprint.items == bp.items:
        return HealResult(True, bp, f"the blueprint still works: {why}", {}, unchanged=True, confidence=1.0), now
    new_bp = replace(res.blueprint, fields=fields)
    changed = {k: v for k, v in res.changed.items() if k not in kept}
    head, confidence = split_confidence(res.reason)
    parts = [p for p in head.split("; ") if p.split(" ", 1)[0].rstrip(":") not in kept]
    reason = "; ".join([*parts, why]) + confidence
    res = replace(res, blueprint=new_bp, changed=changed, reason=reason)
    return res, extract_on(after, new_bp).raw
