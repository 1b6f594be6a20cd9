"""The fleet's status a page at a time: large fleets are summarised, paged and streamed.

- the store's pages (store/status_pages.py) are slices of the whole status, in the
  attention order (DEGRADED, QUARANTINED, DEAD, then ACTIVE, each by name) or by name,
  with `after` continuing by name and `state` keeping some states;
- `healerctl status` on a fleet of more than 1000 sources shows the sources needing
  attention first, says which rows it shows and how to see more; `--limit`, `--offset`
  and `--state` page; `--json` streams every source as one array, the same text as
  before, reading the daemon a page at a time; bad paging input is one error line and
  the daemon keeps answering.
"""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from healerd.cli import calls, healerctl, sources_cmds
from healerd.control import client
from healerd.control.protocol import ControlError
from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.terminal import json_text
from healerd.store import lifecycle, sources, status_pages
from healerd.store.db import db_path, open_db

ORDER = status_pages.ATTENTION_ORDER


def _fleet(conn, n: int, *, degraded=(), quarantined=(), dead=(), first_run_at: float | None = None) -> None:
    bp = Blueprint(fields={"title": FieldSpec("title", "h1")}, url="http://user:hunter22@127.0.0.1:9/page")
    now = time.time()
    with conn:
        for i in range(n):
            sources.add(conn, f"src-{i:05d}", bp, now=now, first_run_at=first_run_at)
    for i in degraded:
        lifecycle.fire(conn, lifecycle.make_model(f"src-{i:05d}"), "fail", reason="SCHEMA_MISMATCH")
    for i in quarantined:
        model = lifecycle.make_model(f"src-{i:05d}")
        lifecycle.fire(conn, model, "fail", reason="SCHEMA_MISMATCH")
        lifecycle.fire(conn, lifecycle.make_model(f"src-{i:05d}", "DEGRADED"), "quarantine", reason="spent")
    for i in dead:
        lifecycle.fire(conn, lifecycle.make_model(f"src-{i:05d}"), "die", reason="gone")


def _objects(got: dict) -> list[dict]:
    return [dict(zip(sources.STATUS_KEYS, r, strict=True)) for r in json.loads("[" + ",".join(got["rows"]) + "]")]


def test_pages_are_slices_of_the_whole_status(tmp_path):
    conn = open_db(str(tmp_path / "healerd.db"))
    _fleet(conn, 40, degraded=(31, 5), quarantined=(17,), dead=(2, 39))
    whole = sources.status_all(conn)
    assert "hunter22" not in json.dumps(whole)
    attention = sorted(whole, key=lambda o: (ORDER.index(o["state"]), o["name"]))
    assert [o["name"] for o in attention[:5]] == ["src-00005", "src-00031", "src-00017", "src-00002", "src-00039"]
    for offset, limit in ((0, 3), (0, 5), (2, 4), (4, 10), (5, 100), (39, 5), (40, 5)):
        got = status_pages.page(conn, limit=limit, offset=offset, order="attention")
        assert _objects(got) == attention[offset:offset + limit], (offset, limit)
        assert got["total"] == 40
        got = status_pages.page(conn, limit=limit, offset=offset, order="name")
        assert _objects(got) == whole[offset:offset + limit], (offset, limit)
    # after a name: the next page by name, whatever the offset of the first
    first = status_pages.page(conn, limit=7, offset=3)
    assert first["last"] == whole[9]["name"]
    nxt = status_pages.page(conn, limit=7, after=first["last"])
    assert _objects(nxt) == whole[10:17]
    # states kept: the total counts only those
    got = status_pages.page(conn, limit=10, states=["DEAD", "QUARANTINED"], order="attention")
    assert [o["name"] for o in _objects(got)] == ["src-00017", "src-00002", "src-00039"] and got["total"] == 3
    got = status_pages.page(conn, limit=2, states=["DEAD", "QUARANTINED"], after="src-00002")
    assert [o["name"] for o in _objects(got)] == ["src-00017", "src-00039"]
    for keep in (["ACTIVE"], ["DEGRADED", "DEAD"], ["ACTIVE", "QUARANTINED"]):
        kept = [o for o in whole if o["state"] in keep]
        for offset, limit in ((0, 2), (1, 3), (3, 50)):
            got = status_pages.page(conn, limit=limit, offset=offset, states=keep)
            assert _objects(got) == kept[offset:offset + limit], (keep, offset, limit)
            after = status_pages.page(conn, limit=limit, states=keep, after=kept[offset]["name"])
            assert _objects(after) == kept[offset + 1:offset + 1 + limit], (keep, offset, limit)
    assert status_pages.page(conn, limit=5, offset=50)["rows"] == []
    with pytest.raises(ValueError):
        status_pages.page(conn, limit=5, order="newest")
    conn.close()


def test_a_large_fleet_is_paged_and_streamed(daemon_factory, monkeypatch):
    d = daemon_factory()
    d.state.mkdir(parents=True, exist_ok=True)
    conn = open_db(str(db_path(str(d.state))))
    n = 1012
    _fleet(conn, n, degraded=(700, 12), dead=(1011,), first_run_at=time.time() + 86400)   # nothing scrapes
    conn.close()
    d.start()

    r = d.ctl("status")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    table = [ln for ln in lines if ln.startswith("src-")]
    assert len(table) == 1000
    assert [ln.split()[0] for ln in table[:4]] == ["src-00012", "src-00700", "src-01011", "src-00000"]
    assert "rows 1-1000 of 1012 (needing attention first, then by name); more with --offset 1000" in r.stdout
    assert f"{n} sources: 1009 ACTIVE, 2 DEGRADED, 1 DEAD" in r.stdout.replace("\x1b", "")

    r = d.ctl("status", "--offset", "1000")
    table = [ln.split()[0] for ln in r.stdout.splitlines() if ln.startswith("src-")]
    assert len(table) == 12 and table[-1] == "src-01010"
    assert "rows 1001-1012 of 1012" in r.stdout and "more with" not in r.stdout

    r = d.ctl("status", "--state", "dead", "--state", "DEGRADED", "--limit", "2")
    assert [ln.split()[0] for ln in r.stdout.splitlines() if ln.startswith("src-")] == ["src-00012", "src-00700"]
    assert "rows 1-2 of 3" in r.stdout

    # --json: every source, by name, the same text as the whole array printed at once
    whole = client.call(d.socket, "status", {})["sources"]
    assert len(whole) == n
    r = d.ctl("status", "--json")
    assert r.returncode == 0, r.stderr
    assert r.stdout == json_text(whole, indent=2) + "\n"   # what printing the whole list prints
    # ... read a page at a time (small pages here, in this process, against the same daemon)
    asked: list[dict] = []
    real_call = calls.call

    def counting(path, op, args=None, timeout=30.0):
        asked.append(dict(args or {}))
        return real_call(path, op, args, timeout=timeout)

    monkeypatch.setattr(sources_cmds, "STATUS_JSON_PAGE", 100)
    monkeypatch.setattr(calls, "call", counting)
    out = CliRunner().invoke(healerctl.cli, ["--socket", d.socket, "status", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output) == whole
    assert len(asked) == 11 and all(a["limit"] == 100 for a in asked) and asked[1]["after"] == "src-00099"
    asked.clear()
    out = CliRunner().invoke(healerctl.cli, ["--socket", d.socket, "status", "--json", "--offset", "850",
                                             "--limit", "150"])
    assert json.loads(out.output) == whole[850:1000]
    assert [a["limit"] for a in asked] == [100, 50]
    out = CliRunner().invoke(healerctl.cli, ["--socket", d.socket, "status", "--json", "--state", "dead"])
    assert [o["name"] for o in json.loads(out.output)] == ["src-01011"]

    # bad input: one clear error, and the daemon keeps answering
    for bad in ({"limit": 0}, {"limit": "ten"}, {"offset": -1}, {"state": ["ASLEEP"]}, {"order": "newest"},
                {"order": "attention", "after": "src-00001"}, {"after": "../x"}):
        with pytest.raises(ControlError) as err:
            client.call(d.socket, "status", bad)
        assert err.value.code == "bad_request", bad
    r = d.ctl("status", "src-00001", "--limit", "3")
    assert r.returncode == 2 and "not with NAME" in r.stderr
    assert d.ctl("status", "src-00001").returncode == 0


def test_kept_rows_page_by_name_and_follow_writes(tmp_path):
    """The daemon pages the whole fleet by name from one kept StatusRows: its pages are slices of
    the whole status, and a page read after a write shows it."""
    from healerd.store.status_rows import StatusRows

    conn = open_db(str(tmp_path / "healerd.db"))
    _fleet(conn, 25, degraded=(3,))
    kept = StatusRows(table=True)
    whole = sources.status_all(conn)

    def objects(texts):
        return [dict(zip(sources.STATUS_KEYS, r, strict=True)) for r in json.loads("[" + ",".join(texts) + "]")]

    texts, last, total = kept.page(conn, 10)
    assert objects(texts) == whole[:10] and last == "src-00009" and total == 25
    texts, last, _ = kept.page(conn, 10, after=last)
    assert objects(texts) == whole[10:20]
    assert objects(kept.page(conn, 4, offset=2, after="src-00019")[0]) == whole[22:25]
    sources.set_paused(conn, "src-00021", True)
    lifecycle.fire(conn, lifecycle.make_model("src-00022"), "die", reason="gone")
    texts, last, _ = kept.page(conn, 10, after="src-00019")
    assert objects(texts) == sources.status_all(conn)[20:25] and last == "src-00024"
    assert objects(texts)[1]["paused"] is True and objects(texts)[2]["state"] == "DEAD"
    conn.close()


def test_a_page_read_in_one_step_keeps_every_row_whole(tmp_path):
    """A page comes from SQLite as one row (its names, its rows joined by newlines): a value
    holding a newline, a comma, quotes or a non-ASCII character stays in its row, in every order."""
    conn = open_db(str(tmp_path / "healerd.db"))
    _fleet(conn, 7, degraded=(2, 5))
    with conn:
        conn.execute("UPDATE source_health SET last_error = ? WHERE source_name IN ('src-00002', 'src-00005')",
                     ('line one\nline two, "quoted" caf\u00e9 \u2028 end',))
    whole = {o["name"]: o for o in sources.status_all(conn)}
    for order in ("name", "attention"):
        for states in (None, ["DEGRADED", "ACTIVE"]):
            got = status_pages.page(conn, limit=100, order=order, states=states)
            assert len(got["rows"]) == 7
            assert {o["name"]: o for o in _objects(got)} == whole
    got = status_pages.page(conn, limit=3, order="name", after="src-00001")
    assert [o["name"] for o in _objects(got)] == ["src-00002", "src-00003", "src-00004"] and got["last"] == "src-00004"
    assert _objects(got)[0]["last_error"].startswith("line one\nline two")
    assert status_pages.page(conn, limit=3, order="name", after="src-99999") == {
        "rows": [], "total": 7, "by_state": got["by_state"], "last": None}
    conn.close()
