"""Loading a sources directory registers its sources a batch per transaction (Ledger.add_sources).

One commit per source made 100,000 files take 81 s to load; a batch is one transaction with
each source in its own savepoint, so one that cannot be added is reported and the others kept.
The real daemon loads a directory larger than one batch, and names what it could not add.
"""

from __future__ import annotations

import json

from healerd.config import Config
from healerd.core.blueprint import from_dict
from healerd.daemon import ADD_BATCH
from healerd.store import sources
from healerd.store.db import open_db
from healerd.store.ledger import Ledger
from healerd.store.sql import scalar

BP = {"url": "http://127.0.0.1:9/p", "fields": {"title": {"css": "h1"}}}


def test_a_batch_keeps_the_sources_it_can_add(tmp_path):
    conn = open_db(str(tmp_path / "healerd.db"))
    ledger = Ledger(conn, Config())
    bp = from_dict(BP)
    sources.add(conn, "taken", bp)
    fx = ledger.add_sources([("a", bp), ("taken", bp), ("b", bp)], "sources_dir")
    assert fx.result["added"] == ["a", "b"]
    assert list(fx.result["errors"]) == ["taken"] and "exists already" in fx.result["errors"]["taken"]
    assert sources.get(conn, "a")["origin"] == "sources_dir" and sources.get(conn, "taken")["origin"] == "cli"
    assert scalar(conn, "SELECT count(*) FROM parser_versions WHERE source_name IN ('a', 'b')") == 2
    assert sources.status_one(conn, "b")["state"] == "ACTIVE"
    conn.close()


def test_the_daemon_loads_more_than_a_batch(daemon_factory):
    d = daemon_factory()
    folder = d.tmp / "sources"
    folder.mkdir()
    n = ADD_BATCH + 7
    for i in range(n):
        (folder / f"s{i:05d}.json").write_text(json.dumps(dict(BP, url=f"http://127.0.0.1:9/p?{i}", every="1d")))
    (folder / "broken.json").write_text("{")
    d.config_path.write_text(d.config_path.read_text().replace("[daemon]", f'[daemon]\nsources_dir = "{folder}"'))
    d.start(wait=60)
    listed = d.ctl_json("status")
    assert len(listed) == n and listed[0]["name"] == "s00000" and listed[-1]["name"] == f"s{n - 1:05d}"
    assert "broken.json" in d.log()


def test_a_batch_adds_what_add_adds(tmp_path):
    """The rows of a batch are the rows `sources.add` writes for one source (the status, the
    production version, the registration event), and a name twice in a batch is added once."""
    conn = open_db(str(tmp_path / "healerd.db"))
    bp = from_dict(BP)
    sources.add(conn, "one", bp, origin="sources_dir", now=1_700_000_000.0)
    refused = sources.add_many(conn, [("two", bp), ("two", bp)], origin="sources_dir", now=1_700_000_000.0)
    assert refused == {"two": "a source named 'two' exists already"}
    one, two = (sources.status_one(conn, n, now=1_700_000_100.0) for n in ("one", "two"))
    assert {**one, "name": "two"} == two
    for table, key in (("sources", "name"), ("source_health", "source_name"), ("parser_versions", "source_name")):
        rows = {r[key]: {k: v for k, v in r.items() if k != "id"} for r in _rows(conn, f"SELECT * FROM {table}")}
        assert {**rows["one"], key: "two"} == rows["two"], table
    events = _rows(conn, "SELECT source_name, from_state, to_state, trigger, reason FROM source_events")
    assert [e[1:] for e in events] == [("NEW", "ACTIVE", "register", "registered (sources_dir)")] * 2
    conn.close()


def _rows(conn, sql):
    cur = conn.execute(sql)
    desc = None
    out: list = []
    for r in cur:
        desc = desc or [d[0] for d in cur.getdescription()]
        out.append(r if "source_events" in sql else dict(zip(desc, r)))
    return out


def test_a_reload_over_several_batches_reports_every_file(daemon_factory):
    """The writer registers one batch while the next files are read: every batch's sources are
    reported added, in file order, the last partial one included, and a bad file between
    batches is named without stopping the others. A name is the file name without its last
    suffix (dots before it kept)."""
    d = daemon_factory()
    folder = d.tmp / "sources"
    folder.mkdir()
    d.config_path.write_text(d.config_path.read_text().replace("[daemon]", f'[daemon]\nsources_dir = "{folder}"'))
    d.start(wait=60)
    n = 2 * ADD_BATCH + 5
    for i in range(n):
        (folder / f"s{i:05d}.v1.json").write_text(json.dumps(dict(BP, url=f"http://127.0.0.1:9/p?{i}", every="1d")))
    (folder / f"s{ADD_BATCH + 3:05d}.broken.json").write_text('{"fields": {}}')
    (folder / "notes.txt").write_text("not a blueprint")
    r = d.ctl("reload")
    assert r.returncode == 1, r.stderr
    added = r.stdout.split("added ", 1)[1].split(";", 1)[0].split(", ")
    assert added == [f"s{i:05d}.v1" for i in range(n)]
    assert f"s{ADD_BATCH + 3:05d}.broken.json" in r.stderr and "notes" not in r.stderr
    listed = d.ctl_json("status")
    assert len(listed) == n and listed[-1]["name"] == f"s{n - 1:05d}.v1"
