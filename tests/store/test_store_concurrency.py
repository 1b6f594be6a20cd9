"""Every write the StoreWriter runs is safe against another connection committing in between.

A transaction begun deferred reads first and upgrades to a writer at its first write; if
another connection committed since the read, SQLite refuses the upgrade at once ("database is
locked", no busy wait). These tests put a rival connection's commit before every statement the
writer executes — the worst interleaving — through the real StoreWriter message handler on a
real SQLite file, for each Ledger method that reads and then writes.
"""

from __future__ import annotations

import hashlib

import apsw
import pytest

from healerd.actors.messages import WriteJob
from healerd.actors.registry import ActorRegistry, Failure
from healerd.actors.store_writer import StoreWriter
from healerd.config import Config
from healerd.core import errors
from healerd.core.blueprint import from_dict
from healerd.store.db import connect, open_db
from healerd.store.fix_bundles import make_selector_bundle
from healerd.store.ledger import Ledger
from healerd.store.memory import FixMemory
from healerd.store.outcomes import ScrapeOutcome
from healerd.store.sql import row, rows, scalar
from healerd.waiters import Waiters

BP = {"url": "http://shop.example/shop", "every": 600, "items": "li.p",
      "fields": {"name": {"css": ".n"}, "price": {"css": ".v", "type": "float"}}}
FIXED = dict(BP, items="div.card", fields={"name": {"css": "h3"}, "price": {"css": ".cost", "type": "float"}})


class Rival:
    """A second connection that tries to commit before each statement the writer executes.

    With busy timeout 0 it commits whenever the writer holds no write lock, and is refused
    (BusyError) when it does — it never waits, so it can run inside the writer's own thread."""

    def __init__(self, path):
        self.conn = connect(path)
        self.conn.set_busy_timeout(0)
        self.committed = self.refused = 0
        self.n = 0

    def __call__(self, cursor, sql, bindings):
        self.n += 1
        try:
            with self.conn:
                self.conn.execute("INSERT INTO daemon_state (key, value) VALUES ('rival', ?) "
                                  "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (str(self.n),))
            self.committed += 1
        except apsw.BusyError:
            self.refused += 1
        return True


@pytest.fixture
def writer(tmp_path):
    path = tmp_path / "healerd.db"
    w = StoreWriter(str(path), Config(), ActorRegistry(), Waiters())
    w.conn = open_db(path)   # what on_start does on the actor's thread
    w.started()
    rival = Rival(path)
    w.rival = rival
    yield w
    w.conn.exec_trace = None
    w.ledger.resync_models()
    rival.conn.close()
    w.conn.close()


def write(w: StoreWriter, method, *args, contended: bool = True, **kwargs):
    """Run one write through the StoreWriter's handler, with the rival committing in between if `contended`."""
    w.conn.exec_trace = w.rival if contended else None
    try:
        result = w.handle(WriteJob(method, args, kwargs))
    finally:
        w.conn.exec_trace = None
    if isinstance(result, Failure):
        raise result.exc
    return result


def outcome(name: str, ok: bool, **kw) -> ScrapeOutcome:
    html = "<ul><li class=p>x</li></ul>" if ok else "<html><body>redesigned</body></html>"
    base = dict(name=name, url=BP["url"], ok=ok, started_at=1.0, finished_at=1.2, version=1, status=200,
                html=html, page_sha=hashlib.sha256(html.encode()).hexdigest())
    if ok:
        base.update(data=[{"name": "a", "price": 1.0}], item_count=1)
    else:
        base.update(error_type=errors.PARSE_ERROR, error="no items", fingerprint="PARSE_ERROR:x")
    base.update(kw)
    return ScrapeOutcome(**base)


def degraded(w: StoreWriter, name: str = "shop") -> None:
    """A source with a good past (so its failure queues a fix), now failing: DEGRADED."""
    write(w, Ledger.add_source, name, from_dict(BP), contended=False)
    write(w, Ledger.record_scrape, outcome(name, ok=True), contended=False)
    write(w, Ledger.record_scrape, outcome(name, ok=False), contended=False)


def state(w: StoreWriter, name: str = "shop") -> str:
    return scalar(w.conn, "SELECT state FROM source_health WHERE source_name = ?", (name,))


def memory_args(source: str) -> dict:
    return dict(error_type="PARSE_ERROR", host="shop.example", diff_sig="d1", template_sig="t1",
                broken_selectors=["li.p"], fix_bundle=make_selector_bundle(from_dict(BP), from_dict(FIXED)),
                source_name=source, title="shop.example: cards redesigned", root_cause="the markup changed")


def test_the_rival_really_interleaves_with_a_deferred_transaction(writer):
    """The harness itself: a plain deferred read-then-write loses to the rival's commit."""
    degraded(writer)
    conn = writer.conn
    conn.exec_trace = writer.rival
    with pytest.raises(apsw.BusyError):
        with conn:
            conn.execute("SELECT count(*) FROM fix_history").fetchall()
            conn.execute("UPDATE source_health SET fix_attempts_today = 1")
    conn.exec_trace = None
    assert writer.rival.committed >= 1


def test_record_fix_counts_the_attempt_once_under_a_rival_commit(writer):
    degraded(writer)
    got = write(writer, Ledger.record_fix, name="shop", error_type="PARSE_ERROR", strategy="builtin",
                outcome="rejected", reason="no items on the live page")
    assert got["attempts_used"] == 1
    assert scalar(writer.conn, "SELECT count(*) FROM fix_history WHERE source_name = 'shop'") == 1
    assert scalar(writer.conn, "SELECT fix_attempts_today FROM source_health WHERE source_name = 'shop'") == 1
    assert writer.rival.refused >= 1   # the rival tried while the writer held the lock, and waited its turn


def test_stage_then_promote_under_a_rival_commit_leaves_one_production_version(writer):
    degraded(writer)
    v = write(writer, Ledger.stage_version, "shop", from_dict(FIXED), "builtin", "repair")
    assert v == 2
    got = write(writer, Ledger.promote, "shop", v, {"ok": True})
    assert got == {"version": 2, "previous": 1}
    got = rows(writer.conn, "SELECT version, status FROM parser_versions WHERE source_name = 'shop' ORDER BY version")
    assert got == [{"version": 1, "status": "archived"}, {"version": 2, "status": "production"}]
    assert scalar(writer.conn, "SELECT current_version FROM sources WHERE name = 'shop'") == 2


def test_approve_and_rollback_under_a_rival_commit(writer):
    degraded(writer)
    v = write(writer, Ledger.stage_version, "shop", from_dict(FIXED), "external", "repair", contended=False)
    assert write(writer, Ledger.approve, "shop", v) == {"version": v}
    assert write(writer, Ledger.rollback, "shop") == {"version": 1, "previous": v}
    assert scalar(writer.conn, "SELECT current_version FROM sources WHERE name = 'shop'") == 1


@pytest.mark.parametrize("method", ["record_scrape_failure", "record_scrape_success", "enqueue_fix", "claim_fix",
                                    "fail_task", "recover_tasks", "flag_for_review", "unquarantine",
                                    "expire_quarantines", "update_blueprint", "set_paused", "add_source"])
def test_every_other_read_then_write_survives_a_rival_commit(writer, method):
    degraded(writer)
    w = writer
    if method == "record_scrape_failure":
        write(w, Ledger.record_scrape, outcome("shop", ok=False))
        assert scalar(w.conn, "SELECT consecutive_failures FROM source_health WHERE source_name = 'shop'") == 2
    elif method == "record_scrape_success":
        write(w, Ledger.record_scrape, outcome("shop", ok=True))
        assert state(w) == "ACTIVE"
    elif method == "enqueue_fix":
        tid = write(w, Ledger.enqueue_fix, "shop", {"why": "test"})
        assert rows(w.conn, "SELECT task_id FROM task_queue WHERE target = 'shop'") == [{"task_id": tid}]
    elif method == "claim_fix":
        got = write(w, Ledger.claim_fix, "doctor")
        assert got is not None and got["target"] == "shop"
    elif method == "fail_task":
        tid = write(w, Ledger.claim_fix, "doctor", contended=False)["task_id"]
        write(w, Ledger.fail_task, tid, "boom")
        assert row(w.conn, "SELECT state, retry_count FROM task_queue WHERE task_id = ?", (tid,)) == \
            {"state": "PENDING", "retry_count": 1}
    elif method == "recover_tasks":
        tid = write(w, Ledger.claim_fix, "doctor", contended=False)["task_id"]
        write(w, Ledger.recover_tasks)
        assert scalar(w.conn, "SELECT state FROM task_queue WHERE task_id = ?", (tid,)) == "PENDING"
    elif method == "flag_for_review":
        write(w, Ledger.flag_for_review, "shop", "changed too often")
        assert scalar(w.conn, "SELECT flagged_for_review FROM source_health WHERE source_name = 'shop'") == 1
    elif method in ("unquarantine", "expire_quarantines"):
        budget = w.config.doctor.max_fix_attempts
        for _ in range(budget):
            write(w, Ledger.record_fix, name="shop", error_type="PARSE_ERROR", strategy="builtin", outcome="rejected",
                  reason="no", contended=False)
        assert state(w) == "QUARANTINED"
        if method == "unquarantine":
            write(w, Ledger.unquarantine, "shop", "by a test")
        else:
            w.conn.execute("UPDATE source_health SET quarantine_until = 1 WHERE source_name = 'shop'")
            write(w, Ledger.expire_quarantines)
        assert state(w) == "DEGRADED"
    elif method == "update_blueprint":
        write(w, Ledger.update_blueprint, "shop", from_dict(dict(BP, every=300)))
        assert scalar(w.conn, "SELECT every_s FROM sources WHERE name = 'shop'") == 300
    elif method == "set_paused":
        write(w, Ledger.set_paused, "shop", True)
        assert scalar(w.conn, "SELECT paused FROM sources WHERE name = 'shop'") == 1
    elif method == "add_source":
        write(w, Ledger.add_source, "other", from_dict(BP))
        assert state(w, "other") == "ACTIVE"
    assert w.rival.refused >= 1


def test_fix_memory_writes_survive_a_rival_commit(writer):
    degraded(writer)
    w = writer
    first = write(w, Ledger.memory, FixMemory.submit, **memory_args("shop"))
    again = write(w, Ledger.memory, FixMemory.submit, **memory_args("shop-2"))
    assert again["issue_id"] == first["issue_id"] and again["verification_count"] == 2
    found = write(w, Ledger.memory, FixMemory.search, error_type="PARSE_ERROR", host="shop.example", broken_selectors=["li.p"],
                  diff_sig="d1", template_sig="t1", source_name="shop-3")
    assert [m.issue_id for m in found] == [first["issue_id"]]
    write(w, Ledger.memory, FixMemory.get_fix_bundle, issue_id=first["issue_id"], source_name="shop-3")
    got = write(w, Ledger.memory, FixMemory.confirm, issue_id=first["issue_id"], source_name="shop-3", success=False)
    assert got["updated_verification_count"] == 2
    write(w, Ledger.memory, FixMemory.forget, issue_id=first["issue_id"])
    assert scalar(w.conn, "SELECT count(*) FROM memory_issues") == 0
    assert w.rival.refused >= 1


def test_a_failed_write_rolls_back_whole_and_the_writer_goes_on(writer):
    """A write that raises half-way leaves nothing behind, and the next write starts clean."""
    degraded(writer)
    w = writer
    w.conn.execute("CREATE TRIGGER no_promote BEFORE UPDATE OF status ON parser_versions "
                   "WHEN NEW.status = 'production' BEGIN SELECT RAISE(ABORT, 'promotion refused'); END")
    v = write(w, Ledger.stage_version, "shop", from_dict(FIXED), "builtin", "repair", contended=False)
    with pytest.raises(apsw.ConstraintError):
        write(w, Ledger.promote, "shop", v, {"ok": True})
    assert rows(w.conn, "SELECT version, status FROM parser_versions WHERE source_name = 'shop' ORDER BY version") == \
        [{"version": 1, "status": "production"}, {"version": 2, "status": "staging"}]
    assert not w.conn.in_transaction
    write(w, Ledger.reject_version, "shop", v, "promotion failed")
    assert scalar(w.conn, "SELECT status FROM parser_versions WHERE source_name = 'shop' AND version = 2") == "rejected"


def test_a_failed_promotion_leaves_no_staging_version_behind(tmp_path, site):
    """The Deployer stages a candidate, proves it on the live page, then promotes it; if the
    promotion fails, the staged version is rejected — else the same candidate would be declined
    as "already staged" on every later attempt."""
    from healerd.actors.deployer import Deploy, Deployer

    cards = "".join(f'<div class="card"><h3>Widget {i}</h3><span class="cost">{i}.50</span></div>' for i in range(5))
    site.page("/shop", f"<html><body>{cards}</body></html>")
    path = tmp_path / "healerd.db"
    # The database exists before the actors start, as the daemon's prepare_database makes it:
    # two actors opening a new file at once both try to turn on WAL, and SQLite can refuse one
    # of them without waiting (SQLITE_BUSY), which stopped the StoreWriter in one CI run.
    open_db(path).close()
    cfg, reg = Config(), ActorRegistry()
    reg.set("writer", StoreWriter.start(str(path), cfg, reg, Waiters()))
    reg.set("deployer", Deployer.start(str(path), cfg, reg))
    try:
        reg.write(Ledger.add_source, "shop", from_dict(dict(BP, url=site.url("/shop"))))
        conn = connect(path)
        with conn:
            conn.execute("CREATE TRIGGER no_promote BEFORE UPDATE OF status ON parser_versions "
                         "WHEN NEW.status = 'production' BEGIN SELECT RAISE(ABORT, 'promotion refused'); END")
        candidate = from_dict(dict(FIXED, url=site.url("/shop"))).to_json()
        got = reg.get("deployer").ask(Deploy("shop", candidate, "builtin", "repair"), timeout=30)
        assert got["outcome"] == "error" and "promotion refused" in got["reason"]
        assert rows(conn, "SELECT version, status FROM parser_versions WHERE source_name = 'shop' ORDER BY version") == \
            [{"version": 1, "status": "production"}, {"version": 2, "status": "rejected"}]
        with conn:
            conn.execute("DROP TRIGGER no_promote")
        again = reg.get("deployer").ask(Deploy("shop", candidate, "builtin", "repair"), timeout=30)
        assert again["outcome"] == "promoted" and again["version"] == 3
        conn.close()
    finally:
        for role in ("deployer", "writer"):
            reg.get(role).stop()
