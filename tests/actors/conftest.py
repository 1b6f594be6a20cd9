"""Fixtures of the actors' tests."""

from __future__ import annotations

import pytest

from healerd.actors.registry import ActorRegistry
from healerd.actors.scheduler import Scheduler
from healerd.actors.scraper import Scraper
from healerd.config import from_dict as config_from_dict
from healerd.store.db import open_db
from tests.support.scheduler_kit import CONFIG


@pytest.fixture
def harness(tmp_path):
    """make(scrapers) -> a Scheduler on a fresh database, run on the test thread, with real Scrapers."""
    made: dict = {}

    def make(scrapers: int = 8, **config):
        cfg = config_from_dict({**CONFIG, "daemon": {"scrapers": scrapers}, **config})
        db = str(tmp_path / "healerd.db")
        conn = open_db(db)
        registry = ActorRegistry()
        registry.set_scrapers([Scraper.start(i, cfg, registry, None) for i in range(scrapers)])
        sched = Scheduler(db, cfg, registry, None)
        made.update(conn=conn, registry=registry, sched=sched)
        return conn, sched

    yield make
    if "sched" in made:
        made["sched"].on_stop()
        for ref in made["registry"].scrapers():
            ref.stop()
        made["conn"].close()
