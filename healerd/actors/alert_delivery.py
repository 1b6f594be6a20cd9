"""Alert delivery: the alerts table handed to the alert targets (the [alerts] webhook) at least once, in order.

Every alert the Alerter raises is a row of the alerts table (written by the StoreWriter). One
thread per target reads the rows after the target's cursor (`alert_cursors`, in SQLite) oldest
first, sends them one at a time, and has the StoreWriter move the cursor past each one the target
confirmed: an alert raised while the target is down waits in the database, across outages and
restarts, and the ones after it wait behind it (in order). While the target fails the thread
retries the same alert with exponential backoff and jitter; the outage raises one SYSTEMIC_HALT
alert (and one log line) when it starts and one RECOVERED when it ends
(Ledger.alert_delivery_failed / alerts_delivered), not one per alert or per retry.

A target is anything with `name`, `wants(alert)` and `send(alert) -> error or None`: the
webhook is `WebhookTarget`, each [[notify]] table an Apprise target (healerd.adapters.notify).
"""

from __future__ import annotations

import logging
import random
import threading
from typing import Protocol

from healerd.actors.feeds import backoff
from healerd.actors.registry import ActorRegistry
from healerd.adapters.fetch import FetchConfig, Fetcher, FetchError
from healerd.core.sanitize import mask_text, mask_url, secret_values
from healerd.core.terminal import json_text
from healerd.store import alert_cursors
from healerd.store.db import connect
from healerd.store.ledger import Ledger

log = logging.getLogger("healerd.alerter")

BATCH = 50              # alerts read at once
POLL_S = 0.25           # how often an idle target looks for new alerts
RETRY_MAX_S = 60.0      # the longest wait between two tries while a target fails
RESTART_S = 5.0         # after an unexpected error in a target's loop (the database, the writer)
WEBHOOK_TIMEOUT_S = 5.0  # a POST's read timeout (and its connect timeout at most)
ANSWER_LIMIT = 65_536   # bytes of a webhook's answer read at most


class Target(Protocol):
    name: str

    def wants(self, alert: dict) -> bool: ...

    def send(self, alert: dict) -> str | None: ...

    def close(self) -> None: ...


class WebhookTarget:
    """POSTs each alert as the alert log's JSON object; delivered means a 2xx answer. The alert's
    id goes in the `X-Healerd-Alert-Id` header, so a receiver can drop the rare repeat (a daemon
    killed between a POST and its cursor's write sends that alert again)."""

    name = "webhook"

    def __init__(self, url: str, fetch: FetchConfig):
        self.url = url
        self.shown = mask_url(url)
        self._secrets = secret_values(url)
        self.fetcher = Fetcher(FetchConfig(timeout=WEBHOOK_TIMEOUT_S,
                                           connect_timeout=min(WEBHOOK_TIMEOUT_S, fetch.connect_timeout),
                                           max_bytes=ANSWER_LIMIT, user_agent=fetch.user_agent, max_redirects=0))

    def wants(self, alert: dict) -> bool:
        return True

    def send(self, alert: dict) -> str | None:
        body = {k: v for k, v in alert.items() if k != "id"}
        try:
            # json_text: C1 characters escaped too (a receiver may well print the body).
            status, answer = self.fetcher.post(self.url, json_text(body, default=str).encode("utf-8"),
                                               headers={"X-Healerd-Alert-Id": str(alert["id"])}, limit=ANSWER_LIMIT)
        except FetchError as exc:
            return mask_text(" ".join(f"POST to {self.shown} failed: {exc.message}".split()), self._secrets)
        if not 200 <= status < 300:
            snippet = " ".join(answer[:120].decode("utf-8", "replace").split())
            said = f": {snippet}" if snippet else ""
            return mask_text(f"webhook answered HTTP {status} from {self.shown}{said}", self._secrets)
        return None

    def close(self) -> None:
        self.fetcher.close()


class AlertDelivery(threading.Thread):
    """One target's delivery loop (see the module's docstring). `since`: the Alerter's start, where
    a target configured for the first time begins."""

    def __init__(self, target: Target, db_path: str, registry: ActorRegistry, since: float,
                 targets: list[str] | None = None):
        super().__init__(name=f"healerd-alerts-{target.name[:40]}", daemon=True)
        self.target = target
        self.targets = targets if targets is not None else [target.name]   # every target configured
        self.db_path = db_path
        self.registry = registry
        self.since = since
        self.stop_event = threading.Event()
        self.rng = random.Random()

    def stop(self, wait: float = 1.0) -> None:
        """Stop after the alert in hand (its cursor written); a POST still held past `wait` is left to its deadline."""
        self.stop_event.set()
        if self.is_alive() and self is not threading.current_thread():
            self.join(timeout=wait)

    def run(self) -> None:
        try:
            self._keep_cursor()
            while not self.stop_event.is_set():
                try:
                    self._serve()
                except Exception:   # the database unreadable for a moment, the writer refusing: start over
                    log.exception("alert %s: delivery loop failed; starting it again in %.0f s",
                                  self.target.name, RESTART_S)
                    self.stop_event.wait(RESTART_S)
        finally:
            self.target.close()

    def _keep_cursor(self) -> None:
        attempt = 0
        while not self.stop_event.is_set():
            try:
                self.registry.write(Ledger.sync_alert_targets, self.targets, self.since)
                return
            except Exception as exc:   # the StoreWriter refusing writes for a while (a full disk)
                if attempt == 0:
                    log.warning("alert %s: cannot record its cursor yet (%s); retrying", self.target.name, exc)
                self.stop_event.wait(backoff(attempt, 30.0, self.rng))
                attempt += 1

    def _serve(self) -> None:
        target, stop = self.target, self.stop_event
        conn = connect(self.db_path, readonly=True)
        try:
            state = alert_cursors.get(conn, target.name)
            if state is None:
                raise RuntimeError(f"no cursor stored for alert target {target.name}")
            cursor = state["cursor"]
            failing = state["failing_since"] is not None   # an outage already told (before a restart)
            attempt = 0
            while not stop.is_set():
                batch = alert_cursors.pending(conn, cursor, BATCH)
                if not batch:
                    stop.wait(POLL_S)
                    continue
                skipped = cursor
                for alert in batch:
                    if stop.is_set():
                        return
                    if not target.wants(alert):   # not for this target: dealt with, written with the next
                        skipped = alert["id"]
                        continue
                    error = target.send(alert)
                    if error is None:
                        cursor = skipped = alert["id"]
                        self.registry.write(Ledger.alerts_delivered, target.name, cursor, 1)
                        attempt, failing = 0, False
                        continue
                    if not failing:
                        log.warning("alert %s: %s; retrying with backoff, nothing is lost", target.name, error)
                        failing = True
                    else:
                        log.debug("alert %s still failing: %s", target.name, error)
                    self.registry.write(Ledger.alert_delivery_failed, target.name, error)
                    stop.wait(backoff(attempt, RETRY_MAX_S, self.rng))
                    attempt += 1
                    break   # the same alert again, first
                if skipped > cursor:
                    cursor = skipped
                    self.registry.write(Ledger.alerts_delivered, target.name, cursor, 0)
        finally:
            conn.close()
