"""The Ledger: every write healerd makes, as plain methods on one connection.

The StoreWriter actor owns the only writing connection and calls these methods
one message at a time, so writes never contend. Each public method is one
transaction; lifecycle triggers run inside it (lifecycle.fire nests as a
savepoint), so a state change, its audit event and the data that caused it
commit together or not at all.

Methods return `Effects`: the alerts to raise, which the actor hands to the
Alerter after the commit. The Ledger knows nothing of actors or sockets.

The class is made of one class per kind of write, each in its own module: the
sources' own rows here; scrape outcomes in `scrape_writes`, parser versions in
`version_writes`, fix tasks and attempts in `fix_writes`, the lifecycle models
and the health transitions (systemic halt, quarantine, review) in
`health_writes`; what goes in and out (`ScrapeOutcome`, `Effects`) in `outcomes`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from healerd.core.blueprint import Blueprint
from healerd.store import alert_cursors, sources, value_profiles
from healerd.store import alerts as alerts_store
from healerd.store import feeds as feeds_store
from healerd.store.fix_writes import FixWrites
from healerd.store.health_writes import human_duration
from healerd.store.lifecycle import DEAD, QUARANTINED
from healerd.store.outcomes import Effects
from healerd.store.scrape_writes import ScrapeWrites
from healerd.store.sql import scalar

R = TypeVar("R")


class Ledger(ScrapeWrites, FixWrites):
    """Every write healerd makes (the module's docstring says which class holds which)."""

    # -- sources -----------------------------------------------------------------------
    def add_source(self, name: str, bp: Blueprint, origin: str = "cli") -> Effects:
        now = self.clock()
        sources.add(self.conn, name, bp, origin=origin, now=now)
        return Effects(result=sources.status_one(self.conn, name, now=self.clock()))

    def add_sources(self, entries: list[tuple[str, Blueprint]], origin: str = "sources_dir") -> Effects:
        """Register many sources in one transaction (loading a sources directory): one commit and
        one statement per table for the lot instead of a transaction each. One that cannot be added
        (a name taken meanwhile) is reported in the result's `errors` and the others are added."""
        errors = sources.add_many(self.conn, entries, origin=origin, now=self.clock())
        return Effects(result={"added": [name for name, _ in entries if name not in errors], "errors": errors})

    def remove_source(self, name: str) -> Effects:
        sources.remove(self.conn, name)
        self._forget_model(name)
        return Effects(result={"removed": name})

    def update_blueprint(self, name: str, bp: Blueprint) -> Effects:
        sources.update_blueprint(self.conn, name, bp, now=self.clock())
        return Effects(result=sources.status_one(self.conn, name, now=self.clock()))

    def apply_file_settings(self, name: str, bp: Blueprint) -> Effects:
        """A sources file whose settings alone changed: they apply to every version, selectors kept."""
        from healerd.store.source_files import apply_settings

        changed = apply_settings(self.conn, name, bp, now=self.clock())
        return Effects(result={"name": name, "settings": changed})

    def replace_blueprint(self, name: str, bp: Blueprint) -> Effects:
        """`healerctl update`: a person's new blueprint, promoted as a `human` version; a fresh attempt budget;
        a quarantined or dead source back to DEGRADED; scraped at once (the caller waits for that scrape)."""
        fx = Effects()
        now = self.clock()
        with self.conn:
            src = sources.get(self.conn, name)
            if src["origin"] == "sources_dir":
                raise ValueError(f"{name} comes from the sources directory: edit its file there and "
                                 f"`healerctl reload` (an update here would be undone by the next reload)")
            sources.update_blueprint(self.conn, name, bp, now=now)
            version = scalar(self.conn, "SELECT current_version FROM sources WHERE name = ?", (name,))
            state = self.model(name).state
            if state in (QUARANTINED, DEAD):
                self.fire(name, "unquarantine", f"blueprint replaced by a person (version {version})")
            sources.audit(self.conn, name, "update", f"blueprint replaced by a person: version {version}", now)
            self.conn.execute("UPDATE source_health SET quarantine_until = NULL, attempts_since = ?, retry_only = 0, "
                              "fix_attempts_today = 0, deferred_report = NULL, host_unresolved_since = NULL, "
                              "item_counts = '[]' WHERE source_name = ?", (now, name))   # a new baseline
            value_profiles.forget(self.conn, name)
            self.conn.execute("UPDATE sources SET next_run_at = ? WHERE name = ?", (now, name))
            # A fix queued for the old blueprint is moot.
            self.conn.execute("UPDATE task_queue SET state = 'COMPLETED', completed_at = ?, "
                              "error_message = 'the blueprint was replaced by a person' "
                              "WHERE type = 'FIX_SOURCE' AND target = ? AND state = 'PENDING'", (now, name))
        fx.result = {**sources.status_one(self.conn, name, now=now), "version": version}
        return fx

    def set_paused(self, name: str, paused: bool) -> Effects:
        sources.set_paused(self.conn, name, paused, now=self.clock())
        return Effects(result=sources.status_one(self.conn, name, now=self.clock()))

    def schedule_now(self, name: str) -> None:
        sources.set_next_run(self.conn, name, self.clock())

    def set_next_run(self, name: str, at: float) -> None:
        sources.set_next_run(self.conn, name, at)

    def requeue_unfinished(self, dispatched: dict[str, float]) -> None:
        """Shutdown: a scrape dispatched at `dispatched[name]` whose outcome was never recorded is due again now."""
        now = self.clock()
        with self.conn:
            for name, at in dispatched.items():
                self.conn.execute(
                    "UPDATE sources SET next_run_at = ? WHERE name = ? AND (next_run_at IS NULL OR next_run_at > ?) "
                    "AND EXISTS (SELECT 1 FROM source_health h WHERE h.source_name = sources.name "
                    "AND max(COALESCE(h.last_success_at, 0), COALESCE(h.last_failure_at, 0)) < ?)",
                    (now, name, now, at))

    # -- alerts, healer calls, memory ------------------------------------------------------------
    def insert_alert(self, alert: dict, ts: float) -> int:
        return alerts_store.insert(self.conn, alert, ts)

    def record_healer_call(self, *, name: str, cycle: int, backend: str, started_at: float, duration_ms: float,
                           http_status: int | None, outcome: str, reason: str) -> None:
        with self.conn:
            self.conn.execute("INSERT INTO healer_calls (source_name, cycle, backend, started_at, duration_ms, http_status, "
                              "outcome, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                              (name, cycle, backend, started_at, duration_ms, http_status, outcome, reason[:1000]))

    # -- feeds ----------------------------------------------------------------------------------
    def sync_feeds(self, names: list[str]) -> list[str]:
        """One cursor per configured feed (new ones start at the newest stored scrape)."""
        return feeds_store.sync(self.conn, names, self.clock())

    def feed_advanced(self, feed: str, cursor: int, delivered: int) -> Effects:
        """The feed dealt with every stored scrape up to `cursor`; when it delivered some, that ends
        its outage (one RECOVERED: a batch with nothing for it proves nothing)."""
        fx = Effects()
        now = self.clock()
        since = feeds_store.advance(self.conn, feed, cursor, delivered, now, recovered=delivered > 0)
        if since is not None:
            fx.alert("RECOVERED", None, f"feed {feed} delivers again after {human_duration(round(now - since))}",
                     level="info", details={"cause": "feed", "feed": feed})
        return fx

    def feed_progress(self, feed: str, cursor: int, delivered: int) -> None:
        """Part of a batch was delivered before a failure: the cursor moves, the outage goes on."""
        feeds_store.advance(self.conn, feed, cursor, delivered, self.clock(), recovered=False)

    def feed_failed(self, feed: str, error: str) -> Effects:
        """A delivery of the feed failed: the first failure of an outage raises its one alert."""
        fx = Effects()
        if feeds_store.failed(self.conn, feed, error, self.clock()):
            fx.alert("SYSTEMIC_HALT", None, f"feed {feed} cannot deliver ({error}); retrying with backoff, "
                     "nothing is lost", level="error", details={"cause": "feed", "feed": feed})
        return fx

    # -- alert delivery (the webhook) -------------------------------------------------------------
    def sync_alert_targets(self, targets: list[str], since: float) -> list[str]:
        """One cursor per alert target (a new one starts with the alerts raised from `since` on)."""
        return alert_cursors.sync(self.conn, targets, since, self.clock())

    def alerts_delivered(self, target: str, cursor: int, delivered: int) -> Effects:
        """The target dealt with every alert up to `cursor`; a delivery ends its outage (one RECOVERED)."""
        fx = Effects()
        now = self.clock()
        since = alert_cursors.advance(self.conn, target, cursor, delivered, now)
        if since is not None:
            fx.alert("RECOVERED", None, f"alert {target} delivers again after {human_duration(round(now - since))}; "
                     "the alerts raised meanwhile follow in order", level="info", details={"cause": target})
        return fx

    def alert_delivery_failed(self, target: str, error: str) -> Effects:
        """A delivery to the target failed: the first failure of an outage raises its one alert."""
        fx = Effects()
        if alert_cursors.failed(self.conn, target, error, self.clock()):
            fx.alert("SYSTEMIC_HALT", None, f"alert {target} cannot deliver ({error}); retrying with backoff, "
                     "nothing is lost", level="error", details={"cause": target})
        return fx

    def memory(self, method: Callable[..., R], /, **kwargs: Any) -> R:
        """Run a FixMemory method (unbound: `FixMemory.search`) on the writer's connection."""
        from healerd.store.memory import FixMemory

        return method(FixMemory(self.conn, clock=self.clock), **kwargs)

    def call(self, fn: Callable, *args, **kwargs):
        """Run a store function on the writer's connection (for the few one-off writes)."""
        return fn(self.conn, *args, **kwargs)
