"""The source lifecycle: every trigger from every state, persisted on a real SQLite file.

Each (state, trigger) pair is its own test case. A legal pair must move the model and
the database to the destination and write exactly one source_events row; an illegal
pair must raise IllegalTransition and change nothing. Database failures inside
`fire` must leave the model, the state and the audit log as they were.
"""

from __future__ import annotations

import sys
import threading

import apsw
import pytest

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.store import lifecycle, sources
from healerd.store.db import connect, open_db
from healerd.store.lifecycle import ACTIVE, DEAD, DEGRADED, QUARANTINED, IllegalTransition
from healerd.store.sql import row, rows, scalar

NAME = "shop"

# The rules, written out independently of lifecycle.TRANSITIONS.
LEGAL = {
    (ACTIVE, "fail"): DEGRADED,
    (DEGRADED, "recover"): ACTIVE,
    (DEGRADED, "quarantine"): QUARANTINED,
    (QUARANTINED, "quarantine_expired"): DEGRADED,
    (QUARANTINED, "unquarantine"): DEGRADED,
    (DEAD, "unquarantine"): DEGRADED,
    (ACTIVE, "die"): DEAD,
    (DEGRADED, "die"): DEAD,
    (QUARANTINED, "die"): DEAD,
    (DEAD, "revive"): DEGRADED,
}
# Legal triggers that drive a fresh (ACTIVE) source into each state.
PATH = {ACTIVE: [], DEGRADED: ["fail"], QUARANTINED: ["fail", "quarantine"], DEAD: ["die"]}
PAIRS = [(s, t) for s in lifecycle.STATES for t in lifecycle.TRIGGERS]


def blueprint(url: str = "http://127.0.0.1:9/page") -> Blueprint:
    return Blueprint(fields={"title": FieldSpec("title", "h1")}, url=url)


def db_state(conn, name: str = NAME) -> str | None:
    return scalar(conn, "SELECT state FROM source_health WHERE source_name = ?", (name,))


def event_count(conn, name: str = NAME) -> int:
    return scalar(conn, "SELECT count(*) FROM source_events WHERE source_name = ?", (name,))


@pytest.fixture
def made():
    """Models made by a test, dropped from the shared machine afterwards."""
    models = []

    def make(name: str, state: str = ACTIVE):
        m = lifecycle.make_model(name, state)
        models.append(m)
        return m

    yield make
    for m in models:
        lifecycle.drop_model(m)


def source_in(conn, made, state: str, name: str = NAME):
    sources.add(conn, name, blueprint(), now=1000.0)
    model = made(name)
    for trig in PATH[state]:
        lifecycle.fire(conn, model, trig, reason=f"setup {trig}", at=1001.0)
    assert model.state == state and db_state(conn, name) == state
    return model


def test_the_rules_cover_the_documented_machine():
    assert set(lifecycle.TRIGGERS) == {t for _s, t in LEGAL}
    assert set(lifecycle.STATES) == {ACTIVE, DEGRADED, QUARANTINED, DEAD}
    assert len(PAIRS) == 28
    for state, trig in PAIRS:
        assert lifecycle.destination(trig, state) == LEGAL.get((state, trig))


@pytest.mark.parametrize("state,trigger", PAIRS, ids=[f"{s}-{t}" for s, t in PAIRS])
def test_trigger_from_state(tmp_path, conn, made, state, trigger):
    model = source_in(conn, made, state)
    events_before = event_count(conn)
    health_before = row(conn, "SELECT * FROM source_health WHERE source_name = ?", (NAME,))
    dest = LEGAL.get((state, trigger))

    if dest is not None:
        got = lifecycle.fire(conn, model, trigger, reason=f"because {trigger}", at=2000.5)
        assert got == (state, dest)
        assert model.state == dest
        assert db_state(conn) == dest
        assert event_count(conn) == events_before + 1
        last = row(conn, "SELECT * FROM source_events WHERE source_name = ? ORDER BY id DESC LIMIT 1", (NAME,))
        assert (last["from_state"], last["to_state"], last["trigger"], last["reason"], last["at"]) == (
            state, dest, trigger, f"because {trigger}", 2000.5)
        assert scalar(conn, "SELECT updated_at FROM source_health WHERE source_name = ?", (NAME,)) == 2000.5
        # Committed: a second connection sees the same.
        other = connect(tmp_path / "healerd.db")
        try:
            assert db_state(other) == dest
            assert event_count(other) == events_before + 1
        finally:
            other.close()
    else:
        with pytest.raises(IllegalTransition) as exc:
            lifecycle.fire(conn, model, trigger, reason="should not happen", at=2000.5)
        err = exc.value
        assert (err.name, err.trigger, err.state) == (NAME, trigger, state)
        msg = str(err)
        assert msg.startswith(f"cannot {trigger} source {NAME!r}: it is {state}")
        allowed = [t for t in lifecycle.TRIGGERS if (state, t) in LEGAL]
        assert f"(allowed: {', '.join(allowed)})" in msg
        assert model.state == state
        assert db_state(conn) == state
        assert event_count(conn) == events_before
        assert row(conn, "SELECT * FROM source_health WHERE source_name = ?", (NAME,)) == health_before


def test_unknown_trigger_is_illegal_and_changes_nothing(conn, made):
    model = source_in(conn, made, DEGRADED)
    before = event_count(conn)
    with pytest.raises(IllegalTransition, match=r"cannot explode source 'shop': it is DEGRADED \(allowed: recover, quarantine, die\)"):
        lifecycle.fire(conn, model, "explode")
    assert model.state == DEGRADED and db_state(conn) == DEGRADED and event_count(conn) == before


def test_register_writes_the_first_event(conn):
    sources.add(conn, NAME, blueprint(), now=1000.0)
    assert rows(conn, "SELECT from_state, to_state, trigger FROM source_events WHERE source_name = ?", (NAME,)) == [
        {"from_state": "NEW", "to_state": ACTIVE, "trigger": "register"}]
    assert db_state(conn) == ACTIVE


def test_long_reason_is_truncated_not_refused(conn, made):
    model = source_in(conn, made, ACTIVE)
    lifecycle.fire(conn, model, "fail", reason="x" * 5000)
    assert scalar(conn, "SELECT length(reason) FROM source_events ORDER BY id DESC LIMIT 1") == 2000


def test_model_rebuilt_after_reopen_is_in_the_persisted_state(tmp_path, made):
    path = tmp_path / "healerd.db"
    c = open_db(path)
    states = {}
    for name, state in (("a", ACTIVE), ("b", DEGRADED), ("c", QUARANTINED), ("d", DEAD)):
        source_in(c, made, state, name)
        states[name] = state
    c.close()

    c = open_db(path)
    try:
        persisted = sources.states(c)
        assert persisted == states
        rebuilt = {name: made(name, persisted[name]) for name in persisted}
        for name, model in rebuilt.items():
            assert model.state == states[name]
        # The rebuilt models carry on from there.
        assert lifecycle.fire(c, rebuilt["c"], "quarantine_expired") == (QUARANTINED, DEGRADED)
        assert lifecycle.fire(c, rebuilt["d"], "revive") == (DEAD, DEGRADED)
        with pytest.raises(IllegalTransition):
            lifecycle.fire(c, rebuilt["a"], "recover")
        assert sources.states(c) == {"a": ACTIVE, "b": DEGRADED, "c": DEGRADED, "d": DEGRADED}
    finally:
        c.close()


def test_make_model_refuses_an_unknown_state():
    with pytest.raises(ValueError, match="unknown lifecycle state 'ZOMBIE'"):
        lifecycle.make_model("x", "ZOMBIE")


def test_health_row_deleted_behind_its_back(conn, made):
    model = source_in(conn, made, ACTIVE)
    before = event_count(conn)
    conn.execute("DELETE FROM source_health WHERE source_name = ?", (NAME,))
    with pytest.raises(RuntimeError, match="does not hold state ACTIVE"):
        lifecycle.fire(conn, model, "fail")
    assert model.state == ACTIVE
    assert event_count(conn) == before
    assert db_state(conn) is None


def test_state_changed_by_another_connection(tmp_path, conn, made):
    model = source_in(conn, made, ACTIVE)
    other = connect(tmp_path / "healerd.db")
    try:
        with other:
            other.execute("UPDATE source_health SET state = 'DEAD' WHERE source_name = ?", (NAME,))
    finally:
        other.close()
    before = event_count(conn)
    with pytest.raises(RuntimeError, match="changed elsewhere"):
        lifecycle.fire(conn, model, "fail")
    assert model.state == ACTIVE
    assert db_state(conn) == DEAD
    assert event_count(conn) == before


def freeze_events(conn):
    conn.execute("CREATE TRIGGER freeze_events BEFORE INSERT ON source_events "
                 "BEGIN SELECT RAISE(ABORT, 'the audit log is frozen'); END")


def test_failing_event_insert_rolls_back_the_state_change(conn, made):
    model = source_in(conn, made, DEGRADED)
    before = event_count(conn)
    updated_before = scalar(conn, "SELECT updated_at FROM source_health WHERE source_name = ?", (NAME,))
    freeze_events(conn)
    with pytest.raises(apsw.ConstraintError, match="the audit log is frozen"):
        lifecycle.fire(conn, model, "quarantine", at=5000.0)
    assert model.state == DEGRADED
    assert db_state(conn) == DEGRADED  # the UPDATE that ran first was rolled back
    assert scalar(conn, "SELECT updated_at FROM source_health WHERE source_name = ?", (NAME,)) == updated_before
    assert event_count(conn) == before
    assert not conn.in_transaction
    # Once the log accepts events again, the same model fires normally.
    conn.execute("DROP TRIGGER freeze_events")
    assert lifecycle.fire(conn, model, "quarantine") == (DEGRADED, QUARANTINED)
    assert db_state(conn) == QUARANTINED


def test_failing_fire_inside_an_outer_transaction_undoes_only_its_own_part(conn, made):
    model = source_in(conn, made, ACTIVE)
    before = event_count(conn)
    freeze_events(conn)
    with conn:
        sources.set_health(conn, NAME, last_error="timeout")
        with pytest.raises(apsw.ConstraintError):
            lifecycle.fire(conn, model, "fail")
        assert model.state == ACTIVE
    assert scalar(conn, "SELECT last_error FROM source_health WHERE source_name = ?", (NAME,)) == "timeout"
    assert db_state(conn) == ACTIVE
    assert event_count(conn) == before


def test_fire_in_an_outer_transaction_commits_with_it(conn, made):
    model = source_in(conn, made, ACTIVE)
    before = event_count(conn)
    with conn:
        lifecycle.fire(conn, model, "fail")
        lifecycle.fire(conn, model, "quarantine")
        sources.set_health(conn, NAME, quarantine_until=9999.0)
    assert db_state(conn) == QUARANTINED
    assert event_count(conn) == before + 2


def test_outer_transaction_rolled_back_leaves_nothing_but_the_model_moved(conn, made):
    """A rollback of the caller's transaction undoes the state and its event in the
    database, but `fire` has already returned: the model stays at the destination.
    The caller must restore it (rebuild from the database, or MACHINE.set_state)."""
    model = source_in(conn, made, ACTIVE)
    before = event_count(conn)

    class Abandon(Exception):
        pass

    with pytest.raises(Abandon):
        with conn:
            assert lifecycle.fire(conn, model, "fail") == (ACTIVE, DEGRADED)
            assert db_state(conn) == DEGRADED  # visible inside the transaction
            raise Abandon()
    assert db_state(conn) == ACTIVE
    assert event_count(conn) == before
    assert model.state == DEGRADED  # not restored: that is the caller's job

    # Left as is, the stale model cannot write: the database does not hold its state.
    with pytest.raises(RuntimeError, match="does not hold state DEGRADED"):
        lifecycle.fire(conn, model, "recover")
    assert model.state == DEGRADED and db_state(conn) == ACTIVE and event_count(conn) == before

    # Restoring it from the database puts everything back in step.
    lifecycle.MACHINE.set_state(db_state(conn), model=model)
    assert lifecycle.fire(conn, model, "fail") == (ACTIVE, DEGRADED)
    assert db_state(conn) == DEGRADED and event_count(conn) == before + 1


def test_threads_firing_on_their_own_sources_do_not_mix_up(tmp_path, conn, made):
    """One machine serves every model; triggers fired from several threads at once must
    each move their own model, and each event must be a real change."""
    n_threads, rounds = 6, 150
    for i in range(n_threads):
        sources.add(conn, f"t{i}", blueprint(), now=1000.0)
    models = [made(f"t{i}") for i in range(n_threads)]
    errors: list[str] = []
    start = threading.Barrier(n_threads)

    def work(i: int) -> None:
        c = connect(tmp_path / "healerd.db")
        try:
            start.wait()
            for _ in range(rounds):
                for trig in ("fail", "recover"):
                    frm, to = lifecycle.fire(c, models[i], trig)
                    if frm == to:
                        errors.append(f"t{i}: {trig} recorded {frm} -> {to}")
        except Exception as exc:  # collected and asserted below
            errors.append(f"t{i}: {exc!r}")
        finally:
            c.close()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []
    for i, m in enumerate(models):
        assert m.state == ACTIVE
        assert db_state(conn, f"t{i}") == ACTIVE
        assert event_count(conn, f"t{i}") == 1 + 2 * rounds
    assert scalar(conn, "SELECT count(*) FROM source_events WHERE from_state = to_state") == 0


def test_a_refused_command_is_said_in_words():
    from healerd.store.lifecycle import human_refusal

    msg = human_refusal("products", "unquarantine", "ACTIVE")
    assert msg == "products: it is healthy (ACTIVE), nothing to do; only a QUARANTINED or DEAD source can be unquarantined"
    assert "allowed:" not in human_refusal("p", "unquarantine", "DEGRADED")
