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
from healerd.store.db import open_db, scalar
from healerd.store.ledger import Ledger

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
