"""Prometheus metrics (the optional `metrics` extra, prometheus-client): the counters the actors
move, the gauges read from the store when /metrics is scraped, and the HTTP endpoint on a TCP
address or a Unix socket (`[metrics] listen`).

Label sets are bounded: a scrape's `outcome` is `ok`, `not_modified` or one of the error types,
a fix attempt's `rung` one of the ladder's strategies, an alert's `event` one of the alert
events, a feed's name one of the configured feeds. No label carries a source name.

Without `[metrics] listen` the actors are handed NO_METRICS, whose methods do nothing, and
prometheus-client is never imported.
"""

from __future__ import annotations

import logging
import os
import socket
import socketserver
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from healerd.core import errors

log = logging.getLogger("healerd.metrics")

OUTCOMES = ("ok", "not_modified", errors.HTTP_ERROR, errors.PARSE_ERROR, errors.SCHEMA_MISMATCH, errors.TIMEOUT,
            errors.RATE_LIMIT, errors.NETWORK, errors.BLOCKED, errors.TOO_LARGE, errors.NOT_HTML)
RUNGS = ("memory", "builtin", "external", "redirect", "relocate", "none")
FIX_OUTCOMES = ("promoted", "rejected", "declined", "error", "staged")
EVENTS = ("DEGRADED", "HEALED", "HEAL_FAILED", "QUARANTINED", "UNQUARANTINED", "DEAD", "RECOVERED",
          "SYSTEMIC_HALT", "BUDGET_PAUSED", "FLAGGED_FOR_REVIEW")
STATES = ("ACTIVE", "DEGRADED", "QUARANTINED", "DEAD")
OTHER = "other"

SCRAPE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
RECOVERY_BUCKETS = (10.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 6 * 3600.0, 86400.0, 7 * 86400.0)


def _bounded(value: Any, allowed: tuple[str, ...]) -> str:
    text = str(value or "")
    return text if text in allowed else OTHER


class NoMetrics:
    """No metrics configured: every call does nothing."""

    enabled = False

    def scrape(self, outcome: str, seconds: float | None) -> None:
        pass

    def fix_attempt(self, rung: str, outcome: str) -> None:
        pass

    def recovered(self, seconds: float) -> None:
        pass

    def alert(self, event: str) -> None:
        pass


NO_METRICS = NoMetrics()


class Metrics(NoMetrics):
    """The daemon's metrics in their own registry. `gauges()` (called on each scrape of /metrics,
    on the server's thread) gives {"sources": {state: n}, "feed_backlog": {feed: n}}."""

    enabled = True

    def __init__(self, gauges: Callable[[], dict]):
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry(auto_describe=True)
        self.scrapes = Counter("healerd_scrapes", "Scrapes by outcome (ok, not_modified, or the error type)",
                               ["outcome"], registry=self.registry)
        self.scrape_seconds = Histogram("healerd_scrape_duration_seconds", "Fetch and extraction time of a scrape",
                                        buckets=SCRAPE_BUCKETS, registry=self.registry)
        self.fixes = Counter("healerd_fix_attempts", "Fix attempts by rung and outcome", ["rung", "outcome"],
                             registry=self.registry)
        self.promoted = Counter("healerd_fixes_promoted", "Fixes promoted to production", registry=self.registry)
        self.recovery = Histogram("healerd_recovery_seconds", "From the first failed scrape to the next passing one",
                                  buckets=RECOVERY_BUCKETS, registry=self.registry)
        self.alerts = Counter("healerd_alerts", "Alerts raised (after deduplication), by event", ["event"],
                              registry=self.registry)
        for o in OUTCOMES:   # every series exists from the start: a rate over a fresh daemon is 0, not absent
            self.scrapes.labels(outcome=o)
        for e in EVENTS:
            self.alerts.labels(event=e)
        self.registry.register(_StoreGauges(gauges))

    def scrape(self, outcome: str, seconds: float | None) -> None:
        self.scrapes.labels(outcome=_bounded(outcome, OUTCOMES)).inc()
        if seconds is not None and seconds >= 0:
            self.scrape_seconds.observe(seconds)

    def fix_attempt(self, rung: str, outcome: str) -> None:
        self.fixes.labels(rung=_bounded(rung, RUNGS), outcome=_bounded(outcome, FIX_OUTCOMES)).inc()
        if outcome == "promoted":
            self.promoted.inc()

    def recovered(self, seconds: float) -> None:
        if seconds >= 0:
            self.recovery.observe(seconds)

    def alert(self, event: str) -> None:
        self.alerts.labels(event=_bounded(event, EVENTS)).inc()

    def exposition(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


class _StoreGauges:
    """healerd_sources{state} and healerd_feed_backlog{feed}, read when /metrics is scraped."""

    def __init__(self, gauges: Callable[[], dict]):
        self.gauges = gauges

    def describe(self):
        return []

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        try:
            got = self.gauges()
        except Exception as exc:   # a scrape of /metrics never fails for the store: those gauges are left out
            log.warning("metrics: the store could not be read: %s", exc)
            return
        sources = GaugeMetricFamily("healerd_sources", "Sources by lifecycle state", labels=["state"])
        counts = got.get("sources") or {}
        for state in STATES:
            sources.add_metric([state], float(counts.get(state, 0)))
        yield sources
        backlog = GaugeMetricFamily("healerd_feed_backlog", "Stored scrapes a feed has still to deliver",
                                    labels=["feed"])
        for feed, n in sorted((got.get("feed_backlog") or {}).items()):
            if n is not None:
                backlog.add_metric([str(feed)], float(n))
        yield backlog


class _Handler(BaseHTTPRequestHandler):
    timeout = 10   # one request at a time (one thread, one store connection): a silent client is dropped

    def do_GET(self):
        if self.path.split("?", 1)[0] != "/metrics":
            self.send_error(404, "only /metrics here")
            return
        from prometheus_client import CONTENT_TYPE_LATEST

        body = self.server.metrics.exposition()   # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE_LATEST)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def address_string(self) -> str:   # a Unix socket's peer has no host
        return self.client_address[0] if isinstance(self.client_address, tuple) and self.client_address else "unix"

    def log_message(self, format, *args):
        log.debug("metrics: " + format, *args)


class _UnixHTTPServer(socketserver.UnixStreamServer):
    metrics: Metrics

    def get_request(self):
        conn, _ = super().get_request()
        return conn, ("unix", 0)


class _TCPServer(HTTPServer):
    metrics: Metrics


def parse_listen(listen: str) -> tuple[str, Any]:
    """("unix", path) for a path (it has a '/'), else ("tcp", (host, port)); ValueError when it is neither."""
    text = listen.strip()
    if "/" in text:
        return "unix", text
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:   # 0: any free port (logged)
        raise ValueError(f"[metrics] listen: expected HOST:PORT (e.g. \"127.0.0.1:9464\") or a unix socket path, "
                         f"got {listen!r}")
    return "tcp", (host.strip("[]") or "127.0.0.1", int(port))


class MetricsServer:
    """GET /metrics on `listen` (HOST:PORT, or a Unix socket path made 0600), served one request at
    a time on one thread (the store's gauges read on that thread's one connection)."""

    def __init__(self, metrics: Metrics, listen: str):
        kind, where = parse_listen(listen)
        self.kind, self.where = kind, where
        server: _UnixHTTPServer | _TCPServer
        if kind == "unix":
            if os.path.exists(where) and not os.path.isdir(where):
                os.unlink(where)   # a stale socket of an earlier run
            old = os.umask(0o177)
            try:
                server = _UnixHTTPServer(where, _Handler)
            finally:
                os.umask(old)
        else:
            host, port = where
            _TCPServer.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
            server = _TCPServer((host, port), _Handler)
        server.metrics = metrics
        self.server = server
        self.thread = threading.Thread(target=server.serve_forever, name="metrics", daemon=True)

    @property
    def address(self) -> str:
        if self.kind == "unix":
            return str(self.where)
        address = self.server.server_address
        assert isinstance(address, tuple)
        return f"{address[0]!s}:{address[1]}"

    def start(self) -> MetricsServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self.kind == "unix":
            try:
                os.unlink(self.where)
            except OSError:
                pass
