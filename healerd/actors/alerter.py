"""Alerter: the alert log.

Every alert becomes one JSON line in <log-dir>/alerts.jsonl, one `ALERT ...` line
on stderr (journald sees it) and a row in the alerts table (through the StoreWriter),
which a thread of its own delivers to the webhook, when one is configured, at least
once and in order (healerd.actors.alert_delivery): neither the actor nor the log line
ever waits for it. The same event for the same source is not
repeated within the dedupe window unless the source's state changed in between.
Secrets are masked before anything leaves.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path

import pykka

from healerd.actors.alert_delivery import AlertDelivery, Target, WebhookTarget
from healerd.actors.base import fetch_config
from healerd.actors.messages import Alert, ForgetAlerts, Ping
from healerd.actors.registry import ActorRegistry
from healerd.adapters.notify import AppriseTarget, shown_url
from healerd.config import ALERT_EVENTS, Config
from healerd.core.sanitize import blueprint_secrets, mask_mapping, mask_text, reveal
from healerd.core.terminal import json_text, visible
from healerd.core.timeutil import iso
from healerd.store import alerts as alerts_store
from healerd.store import sources
from healerd.store.db import connect, open_db
from healerd.store.ledger import Ledger

log = logging.getLogger("healerd.alerter")

EVENTS = ALERT_EVENTS


class AlertDeduper:
    """Decides whether an alert is a repeat: same (source, event) within the window, no state change between."""

    def __init__(self, window: float):
        self.window = window
        self._generation: dict[str | None, int] = {}
        self._state: dict[str | None, str | None] = {}
        self._sent: dict[tuple, tuple[float, int]] = {}

    def should_send(self, source: str | None, event: str, state: str | None, now: float) -> bool:
        if state is not None and self._state.get(source) != state:
            self._state[source] = state
            self._generation[source] = self._generation.get(source, 0) + 1
        gen = self._generation.get(source, 0)
        last = self._sent.get((source, event))
        if last is not None and now - last[0] < self.window and last[1] == gen:
            return False
        self._sent[(source, event)] = (now, gen)
        return True

    def forget(self, source: str) -> None:
        """Drop what was sent for `source`: a removed source's alerts are not a new source's repeats."""
        self._state.pop(source, None)
        self._generation.pop(source, None)
        for key in [k for k in self._sent if k[0] == source]:
            del self._sent[key]

    def remember(self, source: str | None, event: str, at: float, state: str | None) -> None:
        """An alert sent before this deduper existed (read back from the store after a restart or
        a config reload), with the source's state now: a repeat in the same state stays quiet."""
        if state is not None and source not in self._state:
            self._state[source] = state
        gen = self._generation.get(source, 0)
        last = self._sent.get((source, event))
        if last is None or last[0] < at:
            self._sent[(source, event)] = (at, gen)


def format_line(alert: dict) -> str:
    """The stderr line of an alert: always one line."""
    src = visible(alert.get("source") or "-")
    message = visible(alert["message"])   # a page's or a healer's text: its escape sequences shown, not acted on
    return f"ALERT {alert['ts']} {alert['level'].upper()} {src} {visible(alert['event'])}: {message}"


class Alerter(pykka.ThreadingActor):
    def __init__(self, log_dir: str, config: Config, registry: ActorRegistry, db_path: str | None = None):
        super().__init__()
        self.db_path = db_path
        self.path = Path(log_dir) / "alerts.jsonl"
        self.config = config
        self.registry = registry
        self.deduper = AlertDeduper(config.alerts.dedupe_window)
        self.fh = None
        self._conn = None
        self.deliveries: list[AlertDelivery] = []

    def on_start(self) -> None:
        if self.db_path and self.config.alerts.dedupe_window > 0:
            self._seed_dedupe()
        if self.db_path:
            try:   # opened now, with the others: opening one later re-plans every other connection's statements
                self._conn = connect(self.db_path)
            except Exception:
                log.exception("could not open the database to read sources' secrets; alerts masked by pattern only")
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # Owner-only whatever the umask, and never through a symlink someone planted.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        self.fh = open(fd, "a", encoding="utf-8")
        self._start_deliveries()

    def _targets(self) -> list[Target]:
        """The webhook and each [[notify]] table (one that cannot be set up is one error line)."""
        targets: list[Target] = []
        if self.config.alerts.webhook:
            targets.append(WebhookTarget(self.config.alerts.webhook, fetch_config(self.config)))
        for n in self.config.notify:
            try:
                target = AppriseTarget(reveal(n.url), n.events, n.sources)
            except Exception as exc:   # checked with the configuration: only a broken install gets here
                log.error("[[notify]] %s cannot be served: %s", shown_url(reveal(n.url)), type(exc).__name__)
                continue
            log.info("alerts notified through Apprise to %s", target.shown)
            targets.append(target)
        return targets

    def _start_deliveries(self) -> None:
        """A delivery thread per target, from the cursors in SQLite; the cursors of targets no longer
        configured are dropped (one configured again starts afresh)."""
        if not self.db_path:
            if self.config.alerts.webhook or self.config.notify:
                log.warning("no database: alerts are not delivered to the webhook or [[notify]]")
            return
        since = time.time()
        targets = self._targets()
        names = [t.name for t in targets]
        self.deliveries = [AlertDelivery(t, self.db_path, self.registry, since=since, targets=names) for t in targets]
        for d in self.deliveries:
            d.start()
        if not targets:
            threading.Thread(target=self._forget_targets, name="healerd-alerts-forget", daemon=True).start()

    def _forget_targets(self) -> None:
        try:
            self.registry.write(Ledger.sync_alert_targets, [], time.time())
        except Exception as exc:   # a stale cursor only matters if a target is configured again
            log.warning("could not drop the alert targets' cursors: %s", exc)

    def _seed_dedupe(self) -> None:
        """The dedupe window outlives the actor: alerts of the last window whose source has not
        changed state since are remembered, so a restart does not repeat them."""
        try:
            conn = open_db(self.db_path)
            try:
                for r in alerts_store.unchanged_since_sent(conn, time.time() - self.config.alerts.dedupe_window):
                    self.deduper.remember(r["source"], r["event"], r["ts"], r["state"])
            finally:
                conn.close()
        except Exception:  # without the history the Alerter still works; it may repeat an alert once
            log.exception("could not read recent alerts for de-duplication")

    def _source_secrets(self, source: str | None) -> list[str]:
        """The source's own secret values (cookies, secret headers, URL credentials), masked as
        literals in its alerts: a page or an error may echo them."""
        if not source or not self.db_path:
            return []
        try:
            if self._conn is None:
                return []
            found = sources.blueprint_json(self._conn, source)
        except Exception:
            log.warning("could not read the secrets of %s to mask its alert; masking by pattern only", source)
            return []
        return blueprint_secrets(found) if found is not None else []

    def on_stop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self.fh:
            self.fh.close()
        for d in self.deliveries:
            d.stop_event.set()
        for d in self.deliveries:
            d.stop()

    def on_receive(self, message):
        if isinstance(message, Ping):
            return True
        if isinstance(message, ForgetAlerts):
            self.deduper.forget(message.name)
            return None
        if isinstance(message, Alert):
            try:
                self._emit(message)
            except Exception:  # an alert that cannot be written must not stop the Alerter
                log.exception("could not emit alert %s", message.event)
        return None

    def _emit(self, a: Alert) -> None:
        now = time.time()
        # An automatic rollback is other news than the fix it undoes, and a storage fault other news
        # than a network outage: each is deduplicated on its own; each storage episode is news too.
        details = a.details or {}
        kind = "rollback" if details.get("rollback") else details.get("cause")
        if details.get("feed"):   # each feed's outage is its own news
            kind = f"{kind}:{details['feed']}"
        key = f"{a.event}/{kind}" if kind else a.event
        if details.get("episode") is not None:
            key = f"{key}/{details['episode']}"
        if not self.deduper.should_send(a.source, key, a.state, now):
            log.debug("alert %s for %s deduplicated", a.event, a.source)
            return
        alert = {
            "ts": iso(now),
            "level": a.level,
            "source": a.source,
            "event": a.event,
            "message": mask_text(a.message, secrets := self._source_secrets(a.source)),
            "details": mask_mapping(a.details or {}, secrets),
        }
        self.registry.metrics.alert(a.event)
        self.fh.write(json_text(alert, default=str) + "\n")   # C1 characters escaped too, for whoever tails it
        self.fh.flush()
        # One write call: print() writes the text and the newline apart, and a log line from
        # another thread could land between them.
        sys.stderr.write(format_line(alert) + "\n")
        sys.stderr.flush()
        # The row is what the webhook delivers (healerd.actors.alert_delivery), at least once and in order.
        self.registry.write_later(Ledger.insert_alert, alert, now)
