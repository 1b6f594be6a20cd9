"""Waiters: control-socket requests blocked until an actor reports an outcome.

`healerctl run` and `healerctl heal` wait for a result that arrives later from
another actor; the control thread registers a waiter and the actor resolves it.
Thread-safe, never blocks an actor.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any


class Waiters:
    def __init__(self):
        self._lock = threading.Lock()
        self._slots: dict[str, list] = {}
        self._closed: Any = None

    def new(self) -> str:
        rid = uuid.uuid4().hex
        with self._lock:
            slot = [threading.Event(), self._closed]
            if self._closed is not None:  # shutting down: answer at once
                slot[0].set()
            self._slots[rid] = slot
        return rid

    def resolve(self, request_id: str | None, result: Any) -> None:
        if not request_id:
            return
        with self._lock:
            slot = self._slots.get(request_id)
        if slot is not None:
            slot[1] = result
            slot[0].set()

    def wait(self, request_id: str, timeout: float) -> tuple[bool, Any]:
        with self._lock:
            slot = self._slots.get(request_id)
        if slot is None:
            return False, None
        done = slot[0].wait(timeout)
        with self._lock:
            self._slots.pop(request_id, None)
        return done, slot[1]

    def fail_all(self, result: Any) -> int:
        """Resolve every pending waiter with `result` (the actors holding their work are gone)."""
        with self._lock:
            slots = [s for s in self._slots.values() if not s[0].is_set()]
        for slot in slots:
            slot[1] = result
            slot[0].set()
        return len(slots)

    def close(self, result: Any) -> None:
        """Shutdown: fail every pending waiter with `result`, and every later one at once."""
        with self._lock:
            self._closed = result
        self.fail_all(result)

    def cancel(self, request_id: str) -> None:
        with self._lock:
            self._slots.pop(request_id, None)
