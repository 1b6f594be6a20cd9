"""Change sets between two consecutive stored scrapes of one source (pure).

A scrape's records are one object (a blueprint without `items`) or a list of objects. With a
blueprint `key` (one field name, or several), a record is identified across scrapes by the
values of those fields: a record whose key is only in the new scrape is `added`, only in the
old one `removed`, in both with other values `changed` (only the fields that differ, before
and after). Without a key, records are matched whole: `added` and `removed` only.

The comparison looks at the data alone, never at the parser version that produced it: a
scrape right after a promoted fix is compared like any other, so a redesign that healed with
the same data shows no change.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from typing import Any

ChangeSet = dict[str, list[Any]]


def empty() -> ChangeSet:
    return {"added": [], "removed": [], "changed": []}


def size(changes: ChangeSet) -> int:
    """How many records the change set names (0: nothing changed)."""
    return len(changes["added"]) + len(changes["removed"]) + len(changes["changed"])


def as_records(data: Any) -> list[Any]:
    """A scrape's data as a list of records: nothing stored yet is none, one object is one."""
    if data is None:
        return []
    if isinstance(data, list):
        return data
    return [data]


def _frozen(value: Any) -> Any:
    """A hashable stand-in for a JSON value, equal for equal values whatever the order of an
    object's keys (scalars stand for themselves: the common case costs nothing)."""
    if isinstance(value, dict):
        try:
            return frozenset(value.items())     # flat records (the usual ones): one C call
        except TypeError:                       # a value is a list or an object
            return ("{", frozenset((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("[", tuple(_frozen(v) for v in value))
    return value


def key_of(record: Any, key: Sequence[str]) -> Any:
    """The key a record is known by: the field's value for one field, an object of the fields'
    values for several. A record that is not an object has no fields: its key is None."""
    get = record.get if isinstance(record, dict) else (lambda _name: None)
    if len(key) == 1:
        return get(key[0])
    return {name: get(name) for name in key}


def _field_diff(before: Any, after: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return {"value": before}, {"value": after}
    b: dict[str, Any] = {}
    a: dict[str, Any] = {}
    for name in list(before) + [n for n in after if n not in before]:
        old, new = before.get(name), after.get(name)
        if old != new:
            b[name] = old
            a[name] = new
    return b, a


def change_set(before: Any, after: Any, key: Sequence[str] = ()) -> ChangeSet:
    """What changed from the scrape `before` (None: there was none) to the scrape `after`.

    Records sharing one key (or, without a key, equal records) are paired in the order they
    appear; the unpaired ones are added or removed. Order of the result: the order of `after`
    for added and changed records, of `before` for removed ones."""
    old, new = as_records(before), as_records(after)
    out = empty()
    if not old or not new:
        out["added"], out["removed"] = list(new), list(old)
        return out
    one = key[0] if len(key) == 1 else None

    def ident(rec: Any) -> Any:
        if not key:
            return _frozen(rec)
        if not isinstance(rec, dict):
            return None
        if one is not None:
            return _frozen(rec.get(one))
        return tuple(_frozen(rec.get(k)) for k in key)
    pending: defaultdict[Any, deque[int]] = defaultdict(deque)
    for i, rec in enumerate(old):
        pending[ident(rec)].append(i)
    for rec in new:
        queue = pending.get(ident(rec))
        if not queue:
            out["added"].append(rec)
            continue
        was = old[queue.popleft()]
        if key and was != rec:
            b, a = _field_diff(was, rec)
            out["changed"].append({"key": key_of(rec, key), "before": b, "after": a})
    left = sorted(i for queue in pending.values() for i in queue)
    out["removed"] = [old[i] for i in left]
    return out
