"""The daemon's Prometheus endpoint (`[metrics] listen`): the metrics handed to the actors through
the registry, the gauges read from the store on each scrape of /metrics, the HTTP server."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from healerd.adapters.metrics import NO_METRICS, Metrics, MetricsServer
from healerd.config import Config
from healerd.core.errors import HealerdError
from healerd.store import feeds as feeds_store
from healerd.store import sources
from healerd.store.db import connect

if TYPE_CHECKING:
    from healerd.actors.registry import ActorRegistry


class MetricsUnavailable(RuntimeError, HealerdError):
    """[metrics] listen is set but prometheus-client is not installed."""


def _gauges(db_path: str, config: Config, local: threading.local) -> dict:
    """Sources by state and each feed's backlog, on the calling thread's own read connection."""
    from healerd.actors.feeds import source_matcher

    conn = getattr(local, "conn", None)
    if conn is None:
        conn = local.conn = connect(db_path)
    state = feeds_store.all_rows(conn)
    backlog = {}
    for f in config.feeds:
        cursor = (state.get(f.name) or {}).get("cursor")
        backlog[f.name] = None if cursor is None else feeds_store.backlog(conn, cursor, source_matcher(f.sources),
                                                                          f.only_changes)
    return {"sources": sources.state_counts(conn), "feed_backlog": backlog}


def start(config: Config, db_path: str, registry: ActorRegistry) -> MetricsServer | None:
    """Serve /metrics when `[metrics] listen` is set (the registry's metrics are then real ones);
    None otherwise. MetricsUnavailable without prometheus-client; OSError when the address is taken."""
    if not config.metrics.listen:
        registry.metrics = NO_METRICS
        return None
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        raise MetricsUnavailable("[metrics] listen is set but prometheus-client is not installed: "
                                 "pip install 'healerd[metrics]' (or prometheus-client)") from None
    local = threading.local()
    metrics = Metrics(lambda: _gauges(db_path, config, local))
    server = MetricsServer(metrics, config.metrics.listen).start()
    registry.metrics = metrics
    return server
