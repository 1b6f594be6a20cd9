"""Where actors find each other. The main thread replaces a crashed actor here,
so every sender looks its peer up at send time instead of keeping a stale ref."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, overload

import pykka

from healerd.adapters.metrics import NO_METRICS, NoMetrics

if TYPE_CHECKING:
    from healerd.store.ledger import Ledger
    from healerd.store.outcomes import Effects

P = ParamSpec("P")
R = TypeVar("R")
WRITE_TIMEOUT = 30.0


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
        self.trials = None    # the daemon's healerd.adapters.trials.Trials: untrusted selectors, in a worker
        self.metrics: NoMetrics = NO_METRICS   # the daemon's healerd.adapters.metrics.Metrics with [metrics] listen

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

    # Writes name the Ledger method itself (`write(Ledger.record_fix, name=...)`), so grep and
    # mypy link each call to its method and check its arguments. A method returning Effects
    # gives its caller `Effects.result` (the StoreWriter hands the alerts to the Alerter).
    @overload
    def write(self, method: Callable[Concatenate[Ledger, P], Effects], /, *args: P.args,
              **kwargs: P.kwargs) -> Any: ...

    @overload
    def write(self, method: Callable[Concatenate[Ledger, P], R], /, *args: P.args, **kwargs: P.kwargs) -> R: ...

    def write(self, method: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Ask the StoreWriter to run `method` (a Ledger method) on its Ledger; re-raises its exception here."""
        from healerd.actors.messages import WriteJob

        result = self.get("writer").ask(WriteJob(method, args, kwargs), timeout=WRITE_TIMEOUT)
        if isinstance(result, Failure):
            raise result.exc
        return result

    def write_soon(self, method: Callable[Concatenate[Ledger, P], Effects], /, *args: P.args,
                   **kwargs: P.kwargs) -> Callable[[], Any]:
        """Like `write`, without waiting: the write is queued now, and the function returned waits
        for its result (re-raising its exception) when called."""
        from healerd.actors.messages import WriteJob

        future = self.get("writer").ask(WriteJob(method, args, kwargs), block=False)

        def result() -> Any:
            found = future.get(timeout=WRITE_TIMEOUT)
            if isinstance(found, Failure):
                raise found.exc
            return found

        return result

    def write_later(self, method: Callable[Concatenate[Ledger, P], object], /, *args: P.args,
                    **kwargs: P.kwargs) -> None:
        """Tell the StoreWriter to run `method` (a Ledger method); nobody waits for it."""
        from healerd.actors.messages import WriteJob

        self.tell("writer", WriteJob(method, args, kwargs))

    def write_then(self, then: tuple[str, object], request_id: str | None,
                   method: Callable[Concatenate[Ledger, P], object], /, *args: P.args, **kwargs: P.kwargs) -> None:
        """Like write_later; `then` = (role, message) is told once the write is done (committed or not)
        and the waiter `request_id` is resolved with its result."""
        from healerd.actors.messages import WriteJob

        self.tell("writer", WriteJob(method, args, kwargs, request_id=request_id, then=then))
