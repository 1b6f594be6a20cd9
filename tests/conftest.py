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
from tests.support.paths import TESTS
from tests.support.site import Site

# The folders in the order their files are handed to the xdist workers (pyproject's addopts:
# --dist loadfile, in this order): the long end-to-end files start first, and the many short
# unit-test files fill the workers' last minutes instead of one long file running alone at the end.
FOLDERS_FIRST_TO_LAST = ("e2e", "project", "adapters", "actors", "control", "cli", "daemon", "store", "core")


def _folder_rank(item: pytest.Item) -> int:
    try:
        folder = item.path.relative_to(TESTS).parts[0]
    except ValueError:
        return len(FOLDERS_FIRST_TO_LAST)
    return FOLDERS_FIRST_TO_LAST.index(folder) if folder in FOLDERS_FIRST_TO_LAST else len(FOLDERS_FIRST_TO_LAST)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Heaviest folders first (every xdist worker sorts its collection alike)."""
    items.sort(key=_folder_rank)   # stable: the order within a folder stays the collection order


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
