"""Where actors find each other. The main thread replaces a crashed actor here,
so every sender looks its peer up at send time instead of keeping a stale ref."""

from __future__ import annotations

import itertools
import threading

import pykka


class Failure:
    """An exception carried back from the StoreWriter instead of killing it."""

    def __init__(self, exc: BaseException):
        self.exc = exc


class ActorRegistry:
    def __init__(self):
        self._lock = threading.Lock()
        self._refs: dict[str, pykka.ActorRef] = {}
        self._scrapers: list[pykka.ActorRef] = []
        self._rr = itertools.count()
        self.browser = None   # the daemon's healerd.adapters.browser.BrowserPool, shared by every actor's Fetcher

    def set(self, role: str, ref: pykka.ActorRef) -> None:
        with self._lock:
            self._refs[role] = ref

    def get(self, role: str) -> pykka.ActorRef:
        with self._lock:
            return self._refs[role]

    def roles(self) -> dict[str, pykka.ActorRef]:
        with self._lock:
            return dict(self._refs)

    def set_scrapers(self, refs: list[pykka.ActorRef]) -> None:
        with self._lock:
            self._scrapers = list(refs)

    def replace_scraper(self, index: int, ref: pykka.ActorRef) -> None:
        with self._lock:
            self._scrapers[index] = ref

    def scrapers(self) -> list[pykka.ActorRef]:
        with self._lock:
            return list(self._scrapers)

    def tell(self, role: str, message) -> None:
        try:
            self.get(role).tell(message)
        except (KeyError, pykka.ActorDeadError):
            pass  # shutting down, or being replaced: the work is re-found from SQLite

    def write(self, method: str, *args, timeout: float = 30.0, **kwargs):
        """Ask the StoreWriter to run Ledger.<method>; re-raises its exception here."""
        from healerd.actors.messages import WriteJob

        result = self.get("writer").ask(WriteJob(method, args, kwargs), timeout=timeout)
        if isinstance(result, Failure):
            raise result.exc
        return result

    def write_later(self, method: str, *args, request_id: str | None = None, then: tuple | None = None,
                    **kwargs) -> None:
        """Tell the StoreWriter to run Ledger.<method>; `then` = (role, message) is told once it is done."""
        from healerd.actors.messages import WriteJob

        self.tell("writer", WriteJob(method, args, kwargs, request_id=request_id, then=then))
