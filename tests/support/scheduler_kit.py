"""The Scheduler run on the test thread over a real SQLite file, with real Scraper actors; its fixture (harness) is in tests/actors/conftest.py."""

from __future__ import annotations

from healerd.actors.scheduler import Scheduler
from healerd.core.blueprint import from_dict as blueprint_from_dict
from healerd.store import sources
from tests.support.sitepages import LISTING_BP

# The default host limits (2 requests at a time per host, 1 s between two requests);
# no Doctor, which would need a StoreWriter.
CONFIG = {"doctor": {"enabled": False}}


def site_url(site, path: str, host: str = "127.0.0.1") -> str:
    """`site`'s page under another host name: 127.0.0.1 and localhost are two hosts to the Scheduler."""
    return f"http://{host}:{site.port}{path}"


def add(conn, name: str, url: str, at: float) -> None:
    sources.add(conn, name, blueprint_from_dict(dict(LISTING_BP, url=url)), now=at)


def start(sched: Scheduler) -> Scheduler:
    sched.on_start()   # opens its reader connection, as on its actor thread
    return sched
