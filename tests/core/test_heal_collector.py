"""The healer pauses the cyclic collector while it runs and always resumes it as it found it."""

from __future__ import annotations

import gc
import threading

import pytest

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.heal import gc_pause
from healerd.core.heal.pipeline import heal

BEFORE = "<ul>" + "".join(f"<li class='p'><a class='n'>Item {k}</a></li>" for k in range(30)) + "</ul>"
AFTER = "<div>" + "".join(f"<article class='c'><a class='t'>Item {k}</a></article>" for k in range(30)) + "</div>"
BP = Blueprint(items="ul li.p", fields={"name": FieldSpec("name", "a.n")})
OLD = [{"name": f"Item {k}"} for k in range(30)]


@pytest.fixture(autouse=True)
def _collector_back_on():
    yield
    gc.enable()


def test_heal_runs_paused_and_resumes() -> None:
    seen = []
    real = gc_pause.pause

    def spy() -> None:
        real()
        seen.append(gc.isenabled())
    gc_pause.pause = spy          # type: ignore[assignment]
    try:
        res = heal(BP, BEFORE, OLD, AFTER)
    finally:
        gc_pause.pause = real     # type: ignore[assignment]
    assert res.ok and res.blueprint is not None and res.blueprint.items != BP.items
    assert seen == [False]
    assert gc.isenabled()


def test_a_collector_someone_disabled_stays_disabled() -> None:
    gc.disable()
    assert heal(BP, BEFORE, OLD, AFTER).ok
    assert not gc.isenabled()


def test_resumed_when_the_heal_raises() -> None:
    @gc_pause.collector_paused
    def boom() -> None:
        assert not gc.isenabled()
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError):
        boom()
    assert gc.isenabled()


def test_overlapping_heals_resume_once_the_last_ends() -> None:
    inside = threading.Barrier(2)
    first_done = threading.Event()
    states: dict[str, bool] = {}

    @gc_pause.collector_paused
    def work(name: str) -> None:
        inside.wait(timeout=10)
        if name == "late":
            first_done.wait(timeout=10)
            states["late, after the first ended"] = gc.isenabled()

    late = threading.Thread(target=work, args=("late",))
    late.start()
    work("first")
    first_done.set()
    late.join(timeout=10)
    assert states == {"late, after the first ended": False}
    assert gc.isenabled()
