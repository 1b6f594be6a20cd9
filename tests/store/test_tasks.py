"""The task queue on a real SQLite file: enqueue, claim order, retries, recovery."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading

import pytest

from healerd.store import tasks
from healerd.store.db import connect, open_db
from healerd.store.sql import row, scalar
from healerd.store.tasks import FIX_SOURCE, SCRAPE_SOURCE

T0 = 1_700_000_000.0


@pytest.fixture
def path(tmp_path):
    return tmp_path / "healerd.db"


@pytest.fixture
def conn(path):
    c = open_db(path)
    yield c
    c.close()


def task(conn, task_id: int) -> dict:
    return row(conn, "SELECT * FROM task_queue WHERE task_id = ?", (task_id,))


def test_enqueue_stores_the_task(conn):
    tid = tasks.enqueue(conn, SCRAPE_SOURCE, "shop", {"url": "http://x/", "n": 2}, priority=3, max_retries=5, now=T0)
    t = task(conn, tid)
    assert (t["type"], t["target"], t["state"], t["priority"], t["max_retries"], t["retry_count"], t["created_at"]) == (
        SCRAPE_SOURCE, "shop", "PENDING", 3, 5, 0, T0)
    assert json.loads(t["context_json"]) == {"url": "http://x/", "n": 2}
    assert tasks.list_tasks(conn)[0]["context"] == {"url": "http://x/", "n": 2}


def test_enqueue_dedupes_pending_and_running_work(conn):
    a = tasks.enqueue(conn, SCRAPE_SOURCE, "shop", now=T0)
    assert tasks.enqueue(conn, SCRAPE_SOURCE, "shop", now=T0 + 1) == a
    assert tasks.claim(conn, "w1", now=T0 + 2)["task_id"] == a
    assert tasks.enqueue(conn, SCRAPE_SOURCE, "shop", now=T0 + 3) == a  # IN_PROGRESS still counts
    other_type = tasks.enqueue(conn, FIX_SOURCE, "shop", now=T0 + 3)
    other_target = tasks.enqueue(conn, SCRAPE_SOURCE, "news", now=T0 + 3)
    forced = tasks.enqueue(conn, SCRAPE_SOURCE, "shop", dedupe=False, now=T0 + 3)
    assert len({a, other_type, other_target, forced}) == 4
    tasks.complete(conn, a, now=T0 + 4)
    tasks.complete(conn, forced, now=T0 + 4)
    again = tasks.enqueue(conn, SCRAPE_SOURCE, "shop", now=T0 + 5)
    assert again not in (a, forced)
    assert scalar(conn, "SELECT count(*) FROM task_queue") == 5
    assert tasks.pending_for(conn, SCRAPE_SOURCE, "shop")["task_id"] == again


def test_claim_order_is_priority_then_age(conn):
    ids = {}
    for i, (name, prio) in enumerate([("a", 5), ("b", 1), ("c", 5), ("d", 1), ("e", 9), ("f", 0)]):
        ids[name] = tasks.enqueue(conn, SCRAPE_SOURCE, name, priority=prio, now=T0 + i)
    order = []
    while (t := tasks.claim(conn, "w", now=T0 + 100)) is not None:
        assert t["state"] == "IN_PROGRESS" and t["claimed_by"] == "w" and t["started_at"] == T0 + 100
        order.append(t["target"])
    assert order == ["f", "b", "d", "a", "c", "e"]
    assert tasks.claim(conn, "w", now=T0 + 100) is None


def test_claim_respects_not_before(conn):
    later = tasks.enqueue(conn, SCRAPE_SOURCE, "later", priority=0, not_before=T0 + 60, now=T0)
    now_ = tasks.enqueue(conn, SCRAPE_SOURCE, "now", priority=9, now=T0)
    assert tasks.claim(conn, "w", now=T0 + 1)["task_id"] == now_
    assert tasks.claim(conn, "w", now=T0 + 59.9) is None
    assert tasks.claim(conn, "w", now=T0 + 60)["task_id"] == later


def test_claim_by_type_and_by_id(conn):
    s = tasks.enqueue(conn, SCRAPE_SOURCE, "a", priority=1, now=T0)
    f = tasks.enqueue(conn, FIX_SOURCE, "a", priority=9, now=T0)
    assert tasks.claim(conn, "fixer", types=(FIX_SOURCE,), now=T0)["task_id"] == f
    assert tasks.claim(conn, "fixer", types=(FIX_SOURCE,), now=T0) is None
    assert tasks.claim_by_id(conn, s, "w", now=T0)["task_id"] == s
    assert tasks.claim_by_id(conn, s, "w2", now=T0) is None  # already taken
    assert task(conn, s)["claimed_by"] == "w"


def test_complete_keeps_the_result(conn):
    tid = tasks.enqueue(conn, SCRAPE_SOURCE, "a", {"x": 1}, now=T0)
    tasks.claim(conn, "w", now=T0)
    tasks.complete(conn, tid, {"records": 3}, now=T0 + 2)
    t = tasks.list_tasks(conn, "COMPLETED")[0]
    assert (t["task_id"], t["completed_at"], t["context"]) == (tid, T0 + 2, {"records": 3})


def test_fail_retries_then_fails_keeping_the_error(conn):
    tid = tasks.enqueue(conn, SCRAPE_SOURCE, "a", max_retries=2, now=T0)
    for attempt in (1, 2):
        assert tasks.claim(conn, "w", now=T0 + attempt)["task_id"] == tid
        assert tasks.fail(conn, tid, f"boom {attempt}", now=T0 + attempt) == "PENDING"
        t = task(conn, tid)
        assert (t["state"], t["retry_count"], t["error_message"], t["claimed_by"], t["completed_at"]) == (
            "PENDING", attempt, f"boom {attempt}", None, None)
    assert tasks.claim(conn, "w", now=T0 + 3)["task_id"] == tid
    assert tasks.fail(conn, tid, "boom 3", now=T0 + 3) == "FAILED"
    t = task(conn, tid)
    assert (t["state"], t["retry_count"], t["error_message"], t["completed_at"]) == ("FAILED", 3, "boom 3", T0 + 3)
    assert tasks.claim(conn, "w", now=T0 + 4) is None


def test_fail_without_retry_and_with_a_delay(conn):
    a = tasks.enqueue(conn, SCRAPE_SOURCE, "a", now=T0)
    b = tasks.enqueue(conn, SCRAPE_SOURCE, "b", now=T0)
    tasks.claim(conn, "w", now=T0)
    tasks.claim(conn, "w", now=T0)
    assert tasks.fail(conn, a, "bad blueprint", retry=False, now=T0) == "FAILED"
    assert task(conn, a)["error_message"] == "bad blueprint"
    assert tasks.fail(conn, b, "429", not_before=T0 + 30, now=T0) == "PENDING"
    assert tasks.claim(conn, "w", now=T0 + 29) is None
    assert tasks.claim(conn, "w", now=T0 + 30)["task_id"] == b
    assert tasks.fail(conn, 9999, "nothing there") == "MISSING"


def test_release_gives_the_task_back_untouched(conn):
    tid = tasks.enqueue(conn, SCRAPE_SOURCE, "a", now=T0)
    tasks.claim(conn, "w", now=T0)
    tasks.release(conn, tid, not_before=T0 + 10)
    t = task(conn, tid)
    assert (t["state"], t["claimed_by"], t["retry_count"], t["not_before"]) == ("PENDING", None, 0, T0 + 10)
    assert tasks.claim(conn, "w", now=T0 + 5) is None
    assert tasks.claim(conn, "w2", now=T0 + 10)["claimed_by"] == "w2"
    tasks.complete(conn, tid, now=T0 + 11)
    tasks.release(conn, tid)  # only a claimed task can be released
    assert task(conn, tid)["state"] == "COMPLETED"


def test_recover_in_progress_requeues_or_gives_up(conn):
    fresh = tasks.enqueue(conn, SCRAPE_SOURCE, "fresh", now=T0)
    worn = tasks.enqueue(conn, SCRAPE_SOURCE, "worn", max_retries=3, now=T0)
    waiting = tasks.enqueue(conn, SCRAPE_SOURCE, "waiting", priority=9, now=T0)
    done = tasks.enqueue(conn, SCRAPE_SOURCE, "done", priority=0, now=T0)
    assert tasks.claim(conn, "w", now=T0)["task_id"] == done
    tasks.complete(conn, done, now=T0)
    for i in range(3):  # worn: three failed runs, still PENDING (3 <= max_retries)
        assert tasks.claim_by_id(conn, worn, "w", now=T0)["task_id"] == worn
        assert tasks.fail(conn, worn, f"timeout {i}", now=T0) == "PENDING"
    assert tasks.claim_by_id(conn, worn, "crashed", now=T0)
    assert tasks.claim_by_id(conn, fresh, "crashed", now=T0)

    got = tasks.recover_in_progress(conn, now=T0 + 50)
    assert got == {"requeued": [fresh], "failed": [worn]}
    f = task(conn, fresh)
    assert (f["state"], f["retry_count"], f["claimed_by"], f["error_message"]) == (
        "PENDING", 1, None, "interrupted by a restart")
    w = task(conn, worn)
    assert (w["state"], w["retry_count"], w["claimed_by"], w["completed_at"]) == ("FAILED", 4, None, T0 + 50)
    assert w["error_message"] == "timeout 2 (gave up after 4 tries)"
    assert task(conn, waiting)["state"] == "PENDING" and task(conn, waiting)["retry_count"] == 0
    assert task(conn, done)["state"] == "COMPLETED"
    assert tasks.recover_in_progress(conn, now=T0 + 60) == {"requeued": [], "failed": []}


def test_purge_finished_keeps_live_and_recent_tasks(conn):
    old = tasks.enqueue(conn, SCRAPE_SOURCE, "old", now=T0)
    tasks.claim(conn, "w", now=T0)
    tasks.complete(conn, old, now=T0)
    recent = tasks.enqueue(conn, SCRAPE_SOURCE, "recent", now=T0)
    tasks.claim(conn, "w", now=T0)
    tasks.complete(conn, recent, now=T0 + 100)
    live = tasks.enqueue(conn, SCRAPE_SOURCE, "live", now=T0)
    assert tasks.purge_finished(conn, older_than=T0 + 50) == 1
    assert [t["task_id"] for t in tasks.list_tasks(conn)] == [recent, live]


def test_claim_is_atomic_across_threads(path, conn):
    n_tasks, n_workers = 600, 4
    with conn:
        ids = [tasks.enqueue(conn, SCRAPE_SOURCE, f"t{i}", dedupe=False, now=T0) for i in range(n_tasks)]
    conns = [connect(path) for _ in range(n_workers)]
    claimed: list[list[int]] = [[] for _ in range(n_workers)]
    errors: list[str] = []
    start = threading.Barrier(n_workers)

    def work(i: int) -> None:
        c = conns[i]
        try:
            start.wait()
            while (t := tasks.claim(c, f"w{i}", now=T0 + 1)) is not None:
                claimed[i].append(t["task_id"])
                tasks.complete(c, t["task_id"], {"by": f"w{i}"}, now=T0 + 2)
        except Exception as exc:  # collected and asserted below
            errors.append(f"w{i}: {exc!r}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in conns:
        c.close()
    assert errors == []
    everything = [tid for got in claimed for tid in got]
    assert sorted(everything) == sorted(ids)  # each exactly once
    done = {t["task_id"]: t for t in tasks.list_tasks(conn, "COMPLETED")}
    assert set(done) == set(ids)
    for i, got in enumerate(claimed):
        for tid in got:
            assert done[tid]["claimed_by"] == f"w{i}" and done[tid]["context"] == {"by": f"w{i}"}


CLAIMER = textwrap.dedent("""
    import sys
    from healerd.store import db, tasks
    conn = db.connect(sys.argv[1])
    got = []
    sys.stdout.write("r"); sys.stdout.flush()
    sys.stdin.read(1)
    while (t := tasks.claim(conn, sys.argv[2])) is not None:
        got.append(t["task_id"])
        tasks.complete(conn, t["task_id"])
    print(" ".join(map(str, got)))
""")


def test_claim_is_atomic_across_processes(tmp_path, path, conn):
    n_tasks = 800
    with conn:
        ids = [tasks.enqueue(conn, SCRAPE_SOURCE, f"t{i}", dedupe=False, now=T0) for i in range(n_tasks)]
    procs = [subprocess.Popen([sys.executable, "-c", CLAIMER, str(path), f"p{i}"], cwd=tmp_path,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    try:
        for p in procs:
            assert p.stdout.read(1) == "r", p.stderr.read()
        for p in procs:  # go together
            p.stdin.write("g")
            p.stdin.flush()
        outs = [p.communicate(timeout=60) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    claimed = []
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        claimed.append([int(x) for x in out.split()])
    assert sorted(claimed[0] + claimed[1]) == sorted(ids)
    assert scalar(conn, "SELECT count(*) FROM task_queue WHERE state = 'COMPLETED'") == n_tasks
    for i, got in enumerate(claimed):
        if got:
            assert scalar(conn, f"SELECT count(*) FROM task_queue WHERE claimed_by = 'p{i}'") == len(got)
