"""What the control ops use of the running daemon, as a protocol: its configuration, its
database file, its actors' registry, the waiters a request blocks on, its start time and a
reload. `healerd.daemon.Daemon` is the one implementation; the ops name this protocol rather
than the class, so the daemon (which builds the ops) and the ops do not import each other."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from healerd.actors.registry import ActorRegistry
    from healerd.config import Config
    from healerd.waiters import Waiters


class DaemonHost(Protocol):
    config: Config
    db_path: str
    registry: ActorRegistry
    waiters: Waiters
    started_at: float

    def reload_and_wait(self, timeout: float = 25.0) -> dict:
        """The same reload as SIGHUP, done by the daemon's main loop; what changed."""
        ...
