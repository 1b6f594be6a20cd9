"""The cyclic garbage collector paused while the healer runs.

Healing a big listing builds tens of thousands of small containers (the two pages' indexes:
an attribute dict and a child list per element, the values' hit lists, the candidates'
tallies), none of them in a reference cycle. Each 25 % growth of the long-lived heap sets off
a full collection over all of them: on a 1 MB page of 5,000 records four of them ran during
one heal, freed nothing and cost about 100 ms of its 600. So the collector is paused for the
heal (reference counting still frees everything as usual) and resumed after it, as the
control protocol does while it decodes a large answer.

The pause is process-wide: it is counted, so heals running in several threads at once resume
the collector only when the last of them ends, and only if it was running when the first began.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_lock = threading.Lock()
_depth = 0
_resume = False


def pause() -> None:
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1


def resume() -> None:
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0 and _resume:
            gc.enable()


def collector_paused(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn` run with the cyclic collector paused (see the module's docstring)."""
    @wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        pause()
        try:
            return fn(*args, **kwargs)
        finally:
            resume()
    return run
