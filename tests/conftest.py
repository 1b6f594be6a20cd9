"""Shared test fixtures: a real local site whose pages change, and the real daemon.

`site` is an HTTP server on 127.0.0.1 serving whatever the test puts in it.
`daemon_factory(config).start()` starts `healerd run` as a subprocess on a temp state dir
and a real Unix socket; `.ctl(...)` runs the real `healerctl` against it. (The `daemon`
fixture of tests/cli/test_healerctl.py is not the daemon: a real ControlServer with canned answers.)

Fixtures live here (and in a folder's conftest.py when only that folder uses them); what tests
import — the daemon and site classes, pages, helper servers — lives in the tests.support package.
"""

from __future__ import annotations

import pytest

from tests.support.daemon import FAST_CONFIG, DaemonProc
from tests.support.httpfixture import LocalServer
from tests.support.site import Site


@pytest.fixture
def server():
    """A real HTTP server on 127.0.0.1 whose routes a test sets (support.httpfixture.LocalServer)."""
    s = LocalServer()
    yield s
    s.stop()


@pytest.fixture
def fetcher():
    """The daemon's Fetcher with short timeouts."""
    from healerd.adapters.fetch import FetchConfig, Fetcher

    f = Fetcher(FetchConfig(timeout=2.0, connect_timeout=2.0))
    yield f
    f.close()


@pytest.fixture
def site():
    s = Site()
    yield s
    s.stop()


@pytest.fixture
def daemon_factory(tmp_path):
    started: list[DaemonProc] = []

    def make(config: str = FAST_CONFIG, env: dict | None = None, sub: str = "d") -> DaemonProc:
        d = DaemonProc(tmp_path / sub if sub else tmp_path, config, env)
        started.append(d)
        return d

    yield make
    for d in started:
        d.stop()
