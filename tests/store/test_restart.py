"""A real restart: one process writes state and exits, others open the same file.

The first child registers sources, fires transitions, enqueues tasks, claims some
(leaving two IN_PROGRESS, as a crash would) and exits without closing anything. This
process and a second child then read the same states, events and tasks; after
`recover_in_progress` the interrupted tasks are PENDING again with retry_count + 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from healerd.store import sources, tasks
from healerd.store.db import open_db
from healerd.store.sql import rows

WRITER = textwrap.dedent("""
    import json, os, sys
    from healerd.store import lifecycle
    from healerd.core.blueprint import Blueprint, FieldSpec
    from healerd.store import db, sources, tasks

    conn = db.open_db(sys.argv[1])
    bp = Blueprint(fields={"title": FieldSpec("title", "h1")}, url="http://127.0.0.1:9/page")
    plan = {
        "calm": [],
        "shaky": ["fail"],
        "locked": ["fail", "quarantine"],
        "gone": ["die"],
        "back": ["fail", "recover"],
        "phoenix": ["fail", "quarantine", "die", "revive", "quarantine"],
    }
    for i, name in enumerate(plan):
        sources.add(conn, name, bp, now=1000.0 + i)
    for name, triggers in plan.items():
        model = lifecycle.make_model(name)
        for k, trig in enumerate(triggers):
            lifecycle.fire(conn, model, trig, reason=f"{name} step {k}", at=2000.0 + k)
    ids = {name: tasks.enqueue(conn, "SCRAPE_SOURCE", name, {"n": i}, priority=i % 3, now=3000.0 + i)
           for i, name in enumerate(plan)}
    fix = tasks.enqueue(conn, "FIX_SOURCE", "shaky", now=3100.0)
    done = tasks.claim(conn, "first-run", now=3200.0)
    tasks.complete(conn, done["task_id"], {"ok": True}, now=3201.0)
    interrupted = [tasks.claim(conn, "first-run", now=3300.0)["task_id"] for _ in range(2)]
    print(json.dumps({"done": done["task_id"], "interrupted": interrupted, "fix": fix, "ids": ids}))
    sys.stdout.flush()
    os._exit(0)  # no close, no cleanup: the database must already hold everything
""")

READER = textwrap.dedent("""
    import json, sys
    from healerd.store import lifecycle
    from healerd.store import db, sources, sql, tasks

    conn = db.open_db(sys.argv[1])
    out = {
        "states": sources.states(conn),
        "events": sql.rows(conn, "SELECT source_name, from_state, to_state, trigger, reason, at "
                                "FROM source_events ORDER BY id"),
        "tasks": sql.rows(conn, "SELECT task_id, type, target, state, retry_count, claimed_by "
                               "FROM task_queue ORDER BY task_id"),
    }
    # A model rebuilt from the persisted state carries on.
    model = lifecycle.make_model("shaky", out["states"]["shaky"])
    out["fired"] = lifecycle.fire(conn, model, "recover", reason="second run", at=4000.0)
    conn.close()
    print(json.dumps(out))
""")

EXPECTED_STATES = {"calm": "ACTIVE", "shaky": "DEGRADED", "locked": "QUARANTINED", "gone": "DEAD",
                   "back": "ACTIVE", "phoenix": "QUARANTINED"}


def run_child(code: str, tmp_path, db_path) -> dict:
    done = subprocess.run([sys.executable, "-c", code, str(db_path)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_state_survives_a_restart(tmp_path):
    db_path = tmp_path / "state" / "healerd.db"
    first = run_child(WRITER, tmp_path, db_path)
    assert len(first["interrupted"]) == 2

    conn = open_db(db_path)
    try:
        assert sources.states(conn) == EXPECTED_STATES
        events = rows(conn, "SELECT source_name, from_state, to_state, trigger, reason, at FROM source_events ORDER BY id")
        phoenix = [(e["from_state"], e["to_state"], e["trigger"]) for e in events if e["source_name"] == "phoenix"]
        assert phoenix == [("NEW", "ACTIVE", "register"), ("ACTIVE", "DEGRADED", "fail"),
                           ("DEGRADED", "QUARANTINED", "quarantine"), ("QUARANTINED", "DEAD", "die"),
                           ("DEAD", "DEGRADED", "revive"), ("DEGRADED", "QUARANTINED", "quarantine")]
        assert [e["reason"] for e in events if e["source_name"] == "phoenix"][1:] == [
            f"phoenix step {k}" for k in range(5)]
        for name, state in EXPECTED_STATES.items():
            mine = [e for e in events if e["source_name"] == name]
            assert mine[-1]["to_state"] == state
            assert all(a["to_state"] == b["from_state"] for a, b in zip(mine, mine[1:]))

        by_state = {s: [t["task_id"] for t in tasks.list_tasks(conn, s)] for s in ("PENDING", "IN_PROGRESS", "COMPLETED")}
        assert by_state["COMPLETED"] == [first["done"]]
        assert sorted(by_state["IN_PROGRESS"]) == sorted(first["interrupted"])
        all_ids = sorted(list(first["ids"].values()) + [first["fix"]])
        assert sorted(by_state["PENDING"] + by_state["IN_PROGRESS"] + by_state["COMPLETED"]) == all_ids
        assert tasks.list_tasks(conn, "COMPLETED")[0]["context"] == {"ok": True}

        # A second process sees exactly what this one sees.
        second = run_child(READER, tmp_path, db_path)
        assert second["states"] == EXPECTED_STATES
        assert second["events"] == events
        assert second["tasks"] == rows(conn, "SELECT task_id, type, target, state, retry_count, claimed_by "
                                             "FROM task_queue ORDER BY task_id")
        # ...and what it wrote is here.
        assert second["fired"] == ["DEGRADED", "ACTIVE"]
        assert sources.states(conn)["shaky"] == "ACTIVE"
        assert sources.events(conn, "shaky", limit=1)[0]["reason"] == "second run"

        # Start-up recovery: the interrupted tasks go back to the queue.
        before = {t["task_id"]: t for t in tasks.list_tasks(conn)}
        got = tasks.recover_in_progress(conn)
        assert sorted(got["requeued"]) == sorted(first["interrupted"]) and got["failed"] == []
        after = {t["task_id"]: t for t in tasks.list_tasks(conn)}
        for tid in first["interrupted"]:
            assert after[tid]["state"] == "PENDING"
            assert after[tid]["retry_count"] == before[tid]["retry_count"] + 1
            assert after[tid]["claimed_by"] is None
        for tid, t in after.items():
            if tid not in first["interrupted"]:
                assert (t["state"], t["retry_count"]) == (before[tid]["state"], before[tid]["retry_count"])
        assert tasks.list_tasks(conn, "IN_PROGRESS") == []
        # The recovered tasks can be claimed again like any other.
        claimed = set()
        while (t := tasks.claim(conn, "second-run")) is not None:
            claimed.add(t["task_id"])
        assert set(first["interrupted"]) <= claimed
        assert claimed == set(all_ids) - {first["done"]}
    finally:
        conn.close()
