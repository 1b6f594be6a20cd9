"""Fixtures of the store's tests: a real SQLite file and a Ledger on it with an injected clock."""

from __future__ import annotations

import random

import pytest

from healerd.store.db import open_db
from healerd.store.ledger import Ledger
from tests.support.ledger_kit import (
    Clock,
    config,
)


@pytest.fixture
def conn(tmp_path):
    c = open_db(tmp_path / "healerd.db")
    yield c
    c.close()


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def make_ledger(conn, clock):
    made = []

    def make(**overrides) -> Ledger:
        led = Ledger(conn, config(**overrides), clock=clock, rng=random.Random(7))
        made.append(led)
        return led

    yield make
    for led in made:
        led.resync_models()  # drop the lifecycle models from the shared machine


@pytest.fixture
def ledger(make_ledger):
    return make_ledger()
