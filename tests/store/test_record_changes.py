"""The change set row records.insert stores (healerd/store/records.py), on a real SQLite file: its
shortcuts for the common scrapes write exactly the row the full comparison would."""

from __future__ import annotations

import json

import pytest

from healerd.core.blueprint import from_dict
from healerd.core.changes import change_set, size
from healerd.store import records, sources

ROWS = [{"sku": "a-1", "price": 9.5, "name": "Kettle \u00e9 \u2028"}, {"sku": "b-2", "price": None, "name": "Lamp"}]


def stored_changes(conn, name):
    return [(r[0], r[1]) for r in conn.execute(
        "SELECT size, body FROM record_changes WHERE source_name = ? ORDER BY record_id", (name,))]


def expected(before, after, key=()):
    found = change_set(before, after, key)
    return size(found), records.to_json(found)


@pytest.mark.parametrize("scrapes", [
    [ROWS],                                    # a listing's first records: all added
    [ROWS[0]],                                 # a single record's first
    [{}],                                      # an empty object is one record
    [[]],                                      # no records at all
    [ROWS, ROWS],                              # the same records again
    [ROWS, ROWS[::-1]],                        # reordered: no change
    [ROWS, ROWS[:1]],                          # one removed
    [ROWS, []],                                # all removed
    [ROWS, [dict(ROWS[0], price=8.0), ROWS[1]]],   # one changed
    [ROWS[0], dict(ROWS[0], price=1.0)],
])
@pytest.mark.parametrize("key", [(), ("sku",)])
def test_the_stored_change_set_is_the_full_comparisons(conn, scrapes, key):
    sources.add(conn, "shop", from_dict({"url": "https://shop.example/", "items": "li",
                                         "fields": {"sku": {"css": "b"}}}), now=999.0)
    for n, data in enumerate(scrapes):
        records.insert(conn, "shop", data, 1, 50, now=1000.0 + n, key=key)
    want = [expected(None if n == 0 else scrapes[n - 1], data, key) for n, data in enumerate(scrapes)]
    assert stored_changes(conn, "shop") == want
    first = json.loads(stored_changes(conn, "shop")[0][1])
    assert first["added"] == ([] if scrapes[0] == [] else
                              scrapes[0] if isinstance(scrapes[0], list) else [scrapes[0]])
