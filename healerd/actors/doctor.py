"""Doctor: one fix attempt per FIX_SOURCE task, decided by the healing ladder.

The ladder (healerd.core.ladder: breakers, diagnosis, routing, the rungs memory -> builtin ->
external, relocation, the best guess, the outcome recorded) knows nothing of actors or the
database: the Doctor wires its ports (healerd.actors.doctor_ports) to its own read connection,
its fetcher, the trial worker, the StoreWriter, the Deployer and the Alerter, hands it each
task, resolves the waiter and tells the Scheduler it is idle again.

The Doctor asks the StoreWriter and the Deployer, neither of which ever asks it back.
"""

from __future__ import annotations

import logging
import time

from healerd.actors.base import ServiceActor, page_limits
from healerd.actors.doctor_ports import (
    ActorDeployer,
    ExternalClient,
    LivePages,
    StoreReads,
    TrialWorker,
    WriterMemory,
    WriterOutcomes,
)
from healerd.actors.messages import HealTask, Ping
from healerd.actors.registry import ActorRegistry
from healerd.actors.scheduler import DoctorIdle
from healerd.config import Config
from healerd.core.ladder.ladder import HealingLadder, last_rung, one_line, rung_of
from healerd.core.ladder.ports import LadderPorts, LadderSettings
from healerd.waiters import Waiters

__all__ = ["Doctor", "last_rung", "ladder_settings", "one_line", "rung_of"]

log = logging.getLogger("healerd.doctor")


def ladder_settings(config: Config) -> LadderSettings:
    """What the ladder reads of the configuration ([doctor], [healer], the page bounds)."""
    d, h = config.doctor, config.healer
    return LadderSettings(enabled=d.enabled, max_fix_attempts=d.max_fix_attempts, attempt_window=d.attempt_window,
                          ladder=tuple(d.ladder), healer_configured=bool(h.url), healer_kind=h.kind,
                          healer_cycles=h.cycles, healer_timeouts=tuple(h.timeouts),
                          daily_budget_per_source=h.daily_budget_per_source, daily_budget_total=h.daily_budget_total,
                          limits=page_limits(config))


class Doctor(ServiceActor):
    fetches = True

    def __init__(self, db_path: str, config: Config, registry: ActorRegistry, waiters: Waiters):
        super().__init__(db_path, config, registry)
        self.waiters = waiters
        self.ladder: HealingLadder | None = None

    def started(self) -> None:
        ports = LadderPorts(reads=StoreReads(self.conn), pages=LivePages(self.fetcher), trials=TrialWorker(self),
                            memory=WriterMemory(self.registry), healer=ExternalClient(self.config, self.registry),
                            deployer=ActorDeployer(self.registry), outcomes=WriterOutcomes(self.registry),
                            clock=time.time)
        self.ladder = HealingLadder(ports, ladder_settings(self.config))

    def handle(self, message):
        if isinstance(message, Ping):
            return True
        if isinstance(message, HealTask):
            result = None
            try:
                assert self.ladder is not None   # set up in started(), on the actor's thread
                try:
                    result = self.ladder.treat(message.name, message.task_id, message.context)
                except Exception as exc:
                    log.exception("the Doctor failed on %s", message.name)
                    result = self.ladder.crashed(message.name, message.task_id, message.context, exc)
            finally:
                # Told, not asked: nothing may escape this handler, and the Scheduler must hear of it.
                self.waiters.resolve(message.request_id, result)
                self.registry.tell("scheduler", DoctorIdle())
        return None
