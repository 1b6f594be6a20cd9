"""Each source's lifecycle: ACTIVE -> DEGRADED -> QUARANTINED -> DEAD.

One `transitions.Machine` (model=None, auto_transitions=False, queued=True) holds
the rules; each source is a `SourceLifecycle` model added to it. `fire()` runs a
trigger and persists it: the state change on `source_health` and its audit row in
`source_events` go in one SQLite transaction (a savepoint when the caller already
holds one). `transitions` never undoes a state change when a later step fails, so
`fire()` restores the model's state itself when the transaction does not commit.

    ACTIVE --fail--> DEGRADED --quarantine--> QUARANTINED
       ^                |  ^                      |
       +----recover-----+  +--quarantine_expired--+
                           +--unquarantine--------+ (also from DEAD)
    ACTIVE/DEGRADED/QUARANTINED --die--> DEAD --revive--> DEGRADED
"""

from __future__ import annotations

import threading
import time

import apsw
from transitions import Machine, MachineError

from healerd.core.errors import Refusal

ACTIVE = "ACTIVE"
DEGRADED = "DEGRADED"
QUARANTINED = "QUARANTINED"
DEAD = "DEAD"
STATES = (ACTIVE, DEGRADED, QUARANTINED, DEAD)

TRANSITIONS = (
    {"trigger": "fail", "source": ACTIVE, "dest": DEGRADED},
    {"trigger": "recover", "source": DEGRADED, "dest": ACTIVE},
    {"trigger": "quarantine", "source": DEGRADED, "dest": QUARANTINED},
    {"trigger": "quarantine_expired", "source": QUARANTINED, "dest": DEGRADED},
    {"trigger": "unquarantine", "source": [QUARANTINED, DEAD], "dest": DEGRADED},
    {"trigger": "die", "source": [ACTIVE, DEGRADED, QUARANTINED], "dest": DEAD},
    {"trigger": "revive", "source": DEAD, "dest": DEGRADED},
)
TRIGGERS = tuple(t["trigger"] for t in TRANSITIONS)


class IllegalTransition(Refusal):
    """A trigger that is not allowed from the source's current state; nothing changed."""

    def __init__(self, name: str, trigger: str, state: str):
        self.name, self.trigger, self.state = name, trigger, state
        allowed = [t for t in TRIGGERS if _allowed(trigger_name=t, state=state)]
        super().__init__(
            f"cannot {trigger} source {name!r}: it is {state}"
            + (f" (allowed: {', '.join(allowed)})" if allowed else "")
        )


_WHAT_IT_NEEDS = {
    "unquarantine": "only a QUARANTINED or DEAD source can be unquarantined",
    "recover": "only a DEGRADED source recovers",
    "quarantine": "only a DEGRADED source can be quarantined",
    "quarantine_expired": "only a QUARANTINED source has a quarantine to expire",
    "fail": "only an ACTIVE source can go DEGRADED",
    "die": "it is already DEAD",
}
_STATE_MEANS = {"ACTIVE": "it is healthy (ACTIVE), nothing to do",
                "DEGRADED": "it is DEGRADED and healing already runs",
                "QUARANTINED": "it is QUARANTINED", "DEAD": "it is DEAD"}


def human_refusal(name: str, trigger: str, state: str) -> str:
    """What a person is told when a control command asks for a transition the state does not allow."""
    need = _WHAT_IT_NEEDS.get(trigger, f"{trigger} is not possible from {state}")
    return f"{name}: {_STATE_MEANS.get(state, f'it is {state}')}; {need}"


def _allowed(trigger_name: str, state: str) -> bool:
    for t in TRANSITIONS:
        if t["trigger"] == trigger_name:
            src = t["source"] if isinstance(t["source"], list) else [t["source"]]
            if state in src:
                return True
    return False


def destination(trigger: str, state: str) -> str | None:
    """Where `trigger` leads from `state`, or None when it is illegal there."""
    for t in TRANSITIONS:
        src = t["source"] if isinstance(t["source"], list) else [t["source"]]
        if t["trigger"] == trigger and state in src:
            return t["dest"]
    return None


class SourceLifecycle:
    """The model of one source's lifecycle; `state` is set by the machine."""

    state: str

    def __init__(self, name: str):
        self.name = name


_machine_lock = threading.Lock()
MACHINE = Machine(
    model=None,
    states=list(STATES),
    transitions=[dict(t) for t in TRANSITIONS],
    initial=ACTIVE,
    auto_transitions=False,
    queued=True,
    send_event=False,
)


def make_model(name: str, state: str = ACTIVE) -> SourceLifecycle:
    if state not in STATES:
        raise ValueError(f"unknown lifecycle state {state!r}")
    model = SourceLifecycle(name)
    with _machine_lock:
        MACHINE.add_model(model, initial=state)
    return model


def drop_model(model: SourceLifecycle) -> None:
    with _machine_lock:
        MACHINE.remove_model(model)


def fire(conn: apsw.Connection, model: SourceLifecycle, trigger: str, reason: str = "",
         at: float | None = None) -> tuple[str, str]:
    """Run `trigger` on `model` and persist it with its audit event; returns (from, to).

    Raises IllegalTransition (nothing changed) when the trigger is not allowed from the
    current state. On any database error the model's state is restored and the error
    re-raised; the transaction rolls back, so state and events never disagree.
    """
    if trigger not in TRIGGERS:
        raise IllegalTransition(model.name, trigger, model.state)
    before = model.state
    if destination(trigger, before) is None:
        raise IllegalTransition(model.name, trigger, before)
    at = time.time() if at is None else at
    try:
        with conn:
            try:
                with _machine_lock:  # the machine's event queue is shared by every model
                    getattr(model, trigger)()
            except MachineError:
                raise IllegalTransition(model.name, trigger, before) from None
            after = model.state
            conn.execute(
                "UPDATE source_health SET state = ?, updated_at = ? WHERE source_name = ? AND state = ?",
                (after, at, model.name, before),
            )
            if conn.changes() != 1:
                raise RuntimeError(
                    f"source {model.name!r}: the database does not hold state {before} (it was changed elsewhere)"
                )
            conn.execute(
                "INSERT INTO source_events (source_name, from_state, to_state, trigger, reason, at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (model.name, before, after, trigger, reason[:2000], at),
            )
    except BaseException:
        if model.state != before:
            with _machine_lock:
                MACHINE.set_state(before, model=model)
        raise
    return before, after
