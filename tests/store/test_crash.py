"""The crash test: a writer killed with SIGKILL at random moments, over and over.

A child process cycles several sources through legal transitions and works the task
queue (the work's result row and the task's completion in one transaction, and every
few tasks a transition in that same transaction too). It is killed with SIGKILL a few
milliseconds after it starts writing, many times over the same database, so damage
would accumulate. After every kill the database must be intact: integrity_check ok,
each source's state equal to its last event, every event a legal step from the one
before, no task lost or duplicated, work recorded exactly for the completed tasks.
At the end, start-up recovery plus one child that drains the queue completes every
task exactly once.
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import textwrap

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.store import lifecycle, sources, tasks
from healerd.store.db import connect, open_db
from healerd.store.sql import rows, scalar

KILLS = 60
N_SOURCES = 6
POOL = 300  # pending tasks topped up before each run

CHILD = textwrap.dedent("""
    import os, random, sys
    from healerd.store import lifecycle
    from healerd.store import db, sources, tasks

    path, worker, mode, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    rng = random.Random(seed)
    conn = db.open_db(path)
    models = {n: lifecycle.make_model(n, s) for n, s in sources.states(conn).items()}
    names = sorted(models)

    def step_source():
        m = models[rng.choice(names)]
        legal = [t for t in lifecycle.TRIGGERS if lifecycle.destination(t, m.state)]
        lifecycle.fire(conn, m, rng.choice(legal), reason=worker)

    def finish(task):
        conn.execute("INSERT INTO work_done (task_id, worker) VALUES (?, ?)", (task["task_id"], worker))
        tasks.complete(conn, task["task_id"], {"by": worker})

    os.write(1, b"r")
    if mode == "drain":
        while (t := tasks.claim(conn, worker)) is not None:
            with conn:
                finish(t)
        conn.close()
        sys.exit(0)
    i = 0
    while True:
        i += 1
        step_source()
        t = tasks.claim(conn, worker)
        if t is None:
            continue
        with conn:
            if i % 3 == 0:
                step_source()  # a transition committed together with the work
            finish(t)
""")

LEGAL = {(s, t): lifecycle.destination(t, s) for s in lifecycle.STATES for t in lifecycle.TRIGGERS
         if lifecycle.destination(t, s)}


def spawn(tmp_path, db_path, worker: str, mode: str, seed: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, str(db_path), worker, mode, str(seed)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_ready(p: subprocess.Popen) -> None:
    ready, _, _ = select.select([p.stdout], [], [], 60)
    got = os.read(p.stdout.fileno(), 1) if ready else b""
    if got != b"r":
        p.kill()
        _, err = p.communicate()
        raise AssertionError(f"child did not start: {err.decode(errors='replace')}")


def check(db_path, enqueued: set[int]) -> dict:
    """Every invariant that must hold after a crash; returns a few counts."""
    conn = connect(db_path)
    try:
        assert scalar(conn, "PRAGMA integrity_check") == "ok"
        assert rows(conn, "PRAGMA foreign_key_check") == []

        states = sources.states(conn)
        assert len(states) == N_SOURCES
        last_to: dict[str, str] = {}
        for e in rows(conn, "SELECT source_name, from_state, to_state, trigger FROM source_events ORDER BY id"):
            name = e["source_name"]
            if e["trigger"] == "register":
                assert name not in last_to and e["to_state"] == "ACTIVE"
            else:
                assert e["from_state"] == last_to[name], e
                assert LEGAL.get((e["from_state"], e["trigger"])) == e["to_state"], e
            last_to[name] = e["to_state"]
        assert last_to == states

        all_tasks = rows(conn, "SELECT task_id, state, claimed_by FROM task_queue")
        ids = [t["task_id"] for t in all_tasks]
        assert len(ids) == len(set(ids)) and set(ids) == enqueued
        completed = {t["task_id"]: t for t in all_tasks if t["state"] == "COMPLETED"}
        work = rows(conn, "SELECT task_id, worker FROM work_done")
        assert len(work) == len({w["task_id"] for w in work})
        assert {w["task_id"] for w in work} == set(completed)
        for w in work:
            assert completed[w["task_id"]]["claimed_by"] == w["worker"]
        running = [t["claimed_by"] for t in all_tasks if t["state"] == "IN_PROGRESS"]
        assert len(running) == len(set(running))  # one task at a time per child
        assert {t["state"] for t in all_tasks} <= {"PENDING", "IN_PROGRESS", "COMPLETED"}
        return {"completed": len(completed), "in_progress": len(running),
                "events": scalar(conn, "SELECT count(*) FROM source_events")}
    finally:
        conn.close()


def test_sigkill_at_random_moments_loses_nothing(tmp_path):
    db_path = tmp_path / "healerd.db"
    conn = open_db(db_path)
    bp = Blueprint(fields={"title": FieldSpec("title", "h1")}, url="http://127.0.0.1:9/page")
    with conn:
        for i in range(N_SOURCES):
            sources.add(conn, f"src{i}", bp)
        conn.execute("CREATE TABLE work_done (task_id INTEGER NOT NULL UNIQUE, worker TEXT NOT NULL)")
    enqueued: set[int] = set()
    rng = random.Random(7)
    serial = 0

    def top_up():
        nonlocal serial
        with conn:
            missing = POOL - scalar(conn, "SELECT count(*) FROM task_queue WHERE state = 'PENDING'")
            for _ in range(missing):
                serial += 1
                enqueued.add(tasks.enqueue(conn, tasks.SCRAPE_SOURCE, f"job{serial}", dedupe=False))

    for k in range(KILLS):
        top_up()
        p = spawn(tmp_path, db_path, f"w{k}", "burst", k)
        try:
            wait_ready(p)
            time_to_live = rng.uniform(0.005, 0.080)
            select.select([], [], [], time_to_live)
            os.kill(p.pid, signal.SIGKILL)
            _, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert p.returncode == -signal.SIGKILL, f"child {k} ended by itself: {err.decode(errors='replace')}"
        check(db_path, enqueued)

    seen = check(db_path, enqueued)
    assert seen["completed"] > 0 and seen["events"] > N_SOURCES  # the children did write

    running = {t["task_id"]: t["retry_count"] for t in tasks.list_tasks(conn, "IN_PROGRESS")}
    got = tasks.recover_in_progress(conn)
    assert sorted(got["requeued"]) == sorted(running) and got["failed"] == []
    for t in tasks.list_tasks(conn):
        if t["task_id"] in running:
            assert t["state"] == "PENDING" and t["retry_count"] == running[t["task_id"]] + 1

    p = spawn(tmp_path, db_path, "drain", "drain", 0)
    try:
        wait_ready(p)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err.decode(errors="replace")

    final = check(db_path, enqueued)
    assert final["completed"] == len(enqueued) and final["in_progress"] == 0
    assert scalar(conn, "SELECT count(*) FROM work_done") == len(enqueued)
    assert scalar(conn, "SELECT count(*) FROM task_queue WHERE state != 'COMPLETED'") == 0
    conn.close()
