"""The Ledger's base: the lifecycle models it fires transitions on, and the health writes that
are transitions of their own: the systemic breaker (halt, resume), quarantines (expiry, a
person's unquarantine), the review flag, the deferred report.

Every method runs on the StoreWriter's one connection (see healerd/store/ledger.py)."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable

import apsw

from healerd.config import Config
from healerd.core import breakers
from healerd.store import lifecycle, sources
from healerd.store.lifecycle import DEGRADED
from healerd.store.outcomes import Effects
from healerd.store.sql import rows, scalar

HALT_KEY = "systemic_halt"


class HealthWrites:
    def __init__(self, conn: apsw.Connection, config: Config, clock: Callable[[], float] = time.time,
                 rng: random.Random | None = None):
        self.conn = conn
        self.config = config
        self.clock = clock
        self.rng = rng or random.Random()
        self.models: dict[str, lifecycle.SourceLifecycle] = {}
        self._keys: dict[str, tuple[str, tuple[str, ...]]] = {}   # per source: (blueprint JSON, its `key`)

    # -- lifecycle -----------------------------------------------------------------
    def model(self, name: str) -> lifecycle.SourceLifecycle:
        m = self.models.get(name)
        if m is None:
            state = scalar(self.conn, "SELECT state FROM source_health WHERE source_name = ?", (name,))
            if state is None:
                raise sources.SourceNotFound(name)
            m = lifecycle.make_model(name, state)
            self.models[name] = m
        return m

    def state_of(self, name: str, src: dict) -> str:
        """`name`'s lifecycle state: its model's when one is loaded, else `src`'s (its row read in
        this transaction). A scrape that moves no state never builds a model (building one adds
        every trigger of the machine to it: a tenth of a millisecond a source)."""
        m = self.models.get(name)
        return m.state if m is not None else src["state"]

    def resync_models(self) -> None:
        """Drop the cached lifecycle models (after a rolled-back write); they reload from SQLite."""
        for name in list(self.models):
            self._forget_model(name)

    def _forget_model(self, name: str) -> None:
        m = self.models.pop(name, None)
        if m is not None:
            lifecycle.drop_model(m)

    def fire(self, name: str, trigger: str, reason: str = "") -> tuple[str, str]:
        return lifecycle.fire(self.conn, self.model(name), trigger, reason, at=self.clock())

    def _jittered(self, seconds: float) -> float:
        j = self.config.daemon.jitter
        return max(0.05, seconds * (1 + self.rng.uniform(-j, j))) if j else seconds

    # -- the systemic breaker ----------------------------------------------------------
    def halt(self) -> dict | None:
        return systemic_halt(self.conn)

    def _check_systemic(self, fingerprint: str | None, error_type: str | None, message: str, now: float,
                        fx: Effects, failed_fixes: bool = False) -> None:
        if not fingerprint or self.halt() is not None:
            return
        since = now - self.config.doctor.systemic_window
        if failed_fixes:
            failing = rows(self.conn, "SELECT f.source_name AS name, s.host, f.fingerprint FROM fix_history f "
                                      "JOIN sources s ON s.name = f.source_name WHERE f.fingerprint = ? "
                                      "AND f.created_at > ? AND f.outcome IN ('rejected','error')", (fingerprint, since))
        else:
            failing = rows(self.conn, "SELECT h.source_name AS name, s.host, h.last_fingerprint AS fingerprint "
                                      "FROM source_health h JOIN sources s ON s.name = h.source_name "
                                      "WHERE h.last_fingerprint = ? AND h.last_failure_at > ? "
                                      "AND h.consecutive_failures > 0", (fingerprint, since))
        hosts = breakers.systemic_halt([(r["host"], r["fingerprint"]) for r in failing], fingerprint,
                                       self.config.doctor.systemic_threshold)
        if hosts is None:
            return
        affected = sorted({r["name"] for r in failing})
        halt = {"fingerprint": fingerprint, "since": now, "error_type": error_type, "sources": affected,
                "hosts": hosts, "reason": f"{error_type} on {len(hosts)} hosts: {message}"}
        self.conn.execute("INSERT OR REPLACE INTO daemon_state (key, value) VALUES (?, ?)", (HALT_KEY, json.dumps(halt)))
        fx.alert("SYSTEMIC_HALT", None,
                 f"healing halted everywhere: the same failure on {len(hosts)} hosts ({error_type}: {message})",
                 level="error", details={"sources": affected, "hosts": hosts, "fingerprint": fingerprint})

    def _maybe_clear_halt(self, name: str, fx: Effects) -> None:
        h = self.halt()
        if h and name in h.get("sources", []):
            self.conn.execute("DELETE FROM daemon_state WHERE key = ?", (HALT_KEY,))

    def resume_healing(self) -> Effects:
        with self.conn:
            self.conn.execute("DELETE FROM daemon_state WHERE key = ?", (HALT_KEY,))
        return Effects(result={"systemic_halt": False})

    # -- quarantine, review, deferred report ----------------------------------------------
    def expire_quarantines(self) -> Effects:
        """Quarantines whose time has come: back to DEGRADED for one automatic retry, scraped at once."""
        fx = Effects()
        now = self.clock()
        due = rows(self.conn, "SELECT source_name FROM source_health WHERE state = 'QUARANTINED' "
                              "AND quarantine_until IS NOT NULL AND quarantine_until <= ?", (now,))
        for r in due:
            name = r["source_name"]
            with self.conn:
                self.fire(name, "quarantine_expired", "quarantine time is over: one automatic retry")
                self.conn.execute("UPDATE source_health SET quarantine_until = NULL, attempts_since = ?, retry_only = 1 "
                                  "WHERE source_name = ?", (now, name))
                self.conn.execute("UPDATE sources SET next_run_at = ? WHERE name = ?", (now, name))
            fx.alert("UNQUARANTINED", name, "quarantine expired: one automatic retry", level="info", state=DEGRADED)
        return fx

    def unquarantine(self, name: str, reason: str = "") -> Effects:
        fx = Effects()
        now = self.clock()
        with self.conn:
            state = self.model(name).state
            self.fire(name, "unquarantine", reason or "by a person")
            self.conn.execute("UPDATE source_health SET quarantine_until = NULL, attempts_since = ?, retry_only = 0, "
                              "fix_attempts_today = 0, host_unresolved_since = NULL WHERE source_name = ?", (now, name))
            self.conn.execute("UPDATE sources SET next_run_at = ?, paused = 0 WHERE name = ?", (now, name))
        fx.alert("UNQUARANTINED", name, f"{state} -> DEGRADED with a fresh attempt budget" + (f": {reason}" if reason else ""),
                 level="info", state=DEGRADED)
        fx.result = sources.status_one(self.conn, name, now=self.clock())
        return fx

    def flag_for_review(self, name: str, reason: str) -> Effects:
        """Set the review flag. The FLAGGED_FOR_REVIEW alert comes with the staged candidate
        (record_fix, outcome `staged`), which names the version to approve; raised here, before
        any version exists, it could not, and the alert dedupe would then swallow the one that does."""
        with self.conn:
            self.conn.execute("UPDATE source_health SET flagged_for_review = 1 WHERE source_name = ?", (name,))
        return Effects()

    def set_deferred_report(self, name: str, report: dict | None) -> None:
        with self.conn:
            self.conn.execute("UPDATE source_health SET deferred_report = ? WHERE source_name = ?",
                              (json.dumps(report, default=str) if report else None, name))


def systemic_halt(conn: apsw.Connection) -> dict | None:
    """The systemic halt in force ({"fingerprint", "since", "error_type", "sources", "hosts",
    "reason"}), or None while healing runs."""
    v = scalar(conn, "SELECT value FROM daemon_state WHERE key = ?", (HALT_KEY,))
    return json.loads(v) if v else None


def human_duration(seconds: float) -> str:
    units = ((3600, "h"), (60, "m")) if seconds <= 48 * 3600 else ((86400, "d"), (3600, "h"), (60, "m"))
    for size, unit in units:
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
