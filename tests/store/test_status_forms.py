"""The fleet's status in its three forms agrees: Python objects, SQLite-built objects, and rows.

`healerctl status` asks the daemon for the table form (columns + rows) because it is less
than half the bytes of the object form at 10,000 sources; all three must carry the same
values, with paused a JSON boolean, times as UTC ISO text and next_run_at null where the
source is not scheduled.
"""

from __future__ import annotations

import json

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.store import lifecycle, sources, status_rows
from healerd.store.db import open_db
from healerd.store.status_rows import StatusRows


def _fleet(tmp_path):
    conn = open_db(str(tmp_path / "healerd.db"))
    bp = Blueprint(fields={"title": FieldSpec("title", "h1")}, url="http://127.0.0.1:9/page")
    for i, name in enumerate(("alpha", "beta", "gamma", "delta")):
        sources.add(conn, name, bp, now=1_700_000_000.0 + i)
    sources.set_paused(conn, "beta", True, now=1_700_000_100.0)
    lifecycle.fire(conn, lifecycle.make_model("gamma"), "fail", reason="SCHEMA_MISMATCH", at=1_700_000_200.0)
    lifecycle.fire(conn, lifecycle.make_model("delta"), "die", reason="gone", at=1_700_000_300.0)
    with conn:
        sources.set_health(conn, "gamma", last_error='price: "N/A" is not a number', failure_count=2,
                           last_failure_at=1_700_000_200.0)
    return conn


def test_object_and_table_forms_match_status_all(tmp_path):
    conn = _fleet(tmp_path)
    expected = sources.status_all(conn)
    objects = json.loads(status_rows.status_all_json(conn))
    rows = json.loads(status_rows.status_all_json(conn, table=True))
    assert objects == expected
    assert [dict(zip(sources.STATUS_KEYS, r, strict=True)) for r in rows] == expected
    by_name = {o["name"]: o for o in expected}
    assert [o["name"] for o in expected] == ["alpha", "beta", "delta", "gamma"]
    assert by_name["beta"]["paused"] is True and by_name["beta"]["next_run_at"] is None
    assert by_name["alpha"]["paused"] is False and by_name["alpha"]["next_run_at"].endswith("Z")
    assert by_name["gamma"]["state"] == "DEGRADED" and by_name["gamma"]["last_error"] == 'price: "N/A" is not a number'
    assert by_name["gamma"]["last_failure_at"] == "2023-11-14T22:16:40Z"
    assert by_name["delta"]["state"] == "DEAD" and by_name["delta"]["next_run_at"] is None
    conn.close()


def test_empty_fleet_is_an_empty_array_in_both_forms(tmp_path):
    conn = open_db(str(tmp_path / "healerd.db"))
    assert status_rows.status_all_json(conn) == "[]"
    assert status_rows.status_all_json(conn, table=True) == "[]"
    conn.close()


def test_large_payload_decodes_with_the_collector_restored(tmp_path):
    import gc

    import pytest

    from healerd.control import protocol

    rows = [[f"src-{i:05d}", "http://127.0.0.1/p", "ACTIVE", 1, None, None, 0, 0, None, False, None, None]
            for i in range(3000)]
    big = json.dumps({"ok": True, "result": {"columns": list(sources.STATUS_KEYS), "rows": rows}}).encode()
    assert len(big) > protocol.GC_PAUSE_BYTES
    assert gc.isenabled()
    assert protocol.decode(big)["result"]["rows"][2999][0] == "src-02999"
    assert gc.isenabled()
    # A broken large payload is a clear error, and the collector is back on after it too.
    with pytest.raises(protocol.ControlError, match="not JSON"):
        protocol.decode(big[:-10])
    assert gc.isenabled()


def test_fix_attempts_24h_counts_the_last_day_since_an_unquarantine(tmp_path):
    from healerd.store import fixes

    conn = _fleet(tmp_path)
    now = 1_700_100_000.0
    with conn:
        for at, outcome in ((now - 90_000, "rejected"),    # older than a day: aged out
                            (now - 3_600, "rejected"), (now - 1_800, "error"),
                            (now - 900, "declined")):       # spent no attempt
            fixes.record(conn, source_name="gamma", error_type="SCHEMA_MISMATCH", strategy="builtin",
                         outcome=outcome, reason="x", now=at)
    def counted():
        one = sources.status_one(conn, "gamma", now=now)["fix_attempts_24h"]
        fleet = {o["name"]: o for o in sources.status_all(conn, now=now)}["gamma"]["fix_attempts_24h"]
        rows = json.loads(status_rows.status_all_json(conn, table=True, now=now))
        table = {r[0]: r[sources.STATUS_KEYS.index("fix_attempts_24h")] for r in rows}["gamma"]
        return one, fleet, table
    assert counted() == (2, 2, 2)
    assert sources.status_one(conn, "gamma", now=now + 86_400)["fix_attempts_24h"] == 0   # a day later
    with conn:
        sources.set_health(conn, "gamma", attempts_since=now - 2_000)   # an unquarantine in between
    assert counted() == (1, 1, 1)
    conn.close()


def test_status_works_on_a_fresh_read_only_connection(tmp_path):
    from healerd.store.db import connect

    conn = _fleet(tmp_path)
    fresh = connect(str(tmp_path / "healerd.db"), readonly=True)
    fleet = json.loads(StatusRows(table=True).json(fresh))
    assert [r[1] for r in fleet] == ["http://127.0.0.1:9/page"] * 4
    fresh.close()
    conn.close()


def test_a_changed_url_shows_masked_in_every_form_on_the_same_connection(tmp_path):
    """The status queries mask URLs through a per-connection table of URLs masked before: a URL
    that changes afterwards (a permanent redirect, a person's update) must show its new value,
    masked, not the old one nor the raw one."""
    conn = _fleet(tmp_path)
    kept = StatusRows()
    assert {o["url"] for o in sources.status_all(conn)} == {"http://127.0.0.1:9/page"}
    assert {o["url"] for o in json.loads(kept.json(conn))} == {"http://127.0.0.1:9/page"}
    secret = "http://ann:hunter2pw@127.0.0.1:9/moved?api_key=abc123456"
    with conn:
        conn.execute("UPDATE sources SET url = ? WHERE name = 'beta'", (secret,))
    forms = [sources.status_all(conn), json.loads(status_rows.status_all_json(conn)),
             [dict(zip(sources.STATUS_KEYS, r, strict=True)) for r in json.loads(status_rows.status_all_json(conn, True))]]
    with conn:   # changed again, and re-read by a kept StatusRows (no refresh of the table): masked in the query
        conn.execute("UPDATE sources SET url = ? WHERE name = 'beta'", (secret + "&v=2",))
    stale = json.loads(kept.json(conn))
    assert {o["name"]: o for o in stale}["beta"]["url"] == "http://***:***@127.0.0.1:9/moved?api_key=***&v=2"
    with conn:
        conn.execute("UPDATE sources SET url = ? WHERE name = 'beta'", (secret,))
    for form in forms:
        beta = {o["name"]: o for o in form}["beta"]["url"]
        assert beta == "http://***:***@127.0.0.1:9/moved?api_key=***"
    assert "hunter2pw" not in json.dumps(forms) and "abc123456" not in json.dumps(forms)
    for _ in range(3):   # many changes: the table of masked URLs stays bounded by the fleet it serves
        with conn:
            for i in range(1500):
                conn.execute("UPDATE sources SET url = ? WHERE name = 'alpha'", (f"http://127.0.0.1:9/p{i}",))
                sources.masked_urls(conn)
    masked = conn.execute("SELECT count(*) FROM temp.masked_urls").fetchall()[0][0]
    assert masked <= 2 * 4 + 1000 + 1


def test_the_table_of_masked_urls_is_filled_in_one_pass(tmp_path):
    """URLs not masked yet are read as one JSON text, masked in Python and written back as one
    (no SQL function called per URL): each ends up masked as mask_url masks it, a URL shared by
    two sources once, odd characters intact, and a second pass adds nothing."""
    from healerd.core.blueprint import from_dict
    from healerd.core.sanitize import mask_url

    conn = open_db(str(tmp_path / "healerd.db"))
    urls = ["http://user:hunter2@127.0.0.1:9/a?token=s3cr3t&page=2", "http://127.0.0.1:9/caf\u00e9?q=\"x\"",
            "http://127.0.0.1:9/plain", "http://127.0.0.1:9/plain"]
    for i, url in enumerate(urls):
        sources.add(conn, f"s{i}", from_dict({"url": url, "fields": {"t": {"css": "h1"}}}))
    sources.masked_urls(conn)
    kept = dict(conn.execute("SELECT url, masked FROM temp.masked_urls").fetchall())
    assert kept == {u: mask_url(u) for u in urls}
    assert "hunter2" not in kept[urls[0]] and "s3cr3t" not in kept[urls[0]]
    sources.masked_urls(conn)
    assert conn.execute("SELECT count(*) FROM temp.masked_urls").fetchall()[0][0] == 3
    shown = {r["name"]: r["url"] for r in sources.status_all(conn)}
    assert shown == {f"s{i}": mask_url(u) for i, u in enumerate(urls)}
    conn.close()
