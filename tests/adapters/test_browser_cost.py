"""What a fresh context per browser fetch starts in Chromium, against real Chromium and a real site.

A renderer start is most of a fetch's CPU (bench/browser_costs.py), so each fetch may start
one renderer only: its own page's (made ahead, for the next fetch, while the current one
renders). Chromium numbers its renderers (`--renderer-client-id`), so the count of renderers
started is read from the live ones, however short-lived the others were.
"""

from __future__ import annotations

import re

import psutil
import pytest

from healerd.adapters.browser import BrowserPool
from healerd.adapters.fetch import FetchConfig
from healerd.config import BrowserSection
from tests.support.jssite import serve_js_site
from tests.support.sitepages import ROWS

_CLIENT_ID = re.compile(r"^--renderer-client-id=(\d+)$")


@pytest.fixture
def pool():
    p = BrowserPool(BrowserSection(), FetchConfig(timeout=8.0, connect_timeout=2.0, max_bytes=200_000))
    yield p
    p.close()


def live_renderers(pool: BrowserPool) -> dict[int, list[str]]:
    """Chromium's live renderer processes under the pool's worker: {renderer client id: command line}."""
    out = {}
    for proc in psutil.Process(pool.worker_pid()).children(recursive=True):
        try:
            cmd = proc.cmdline()
        except psutil.Error:
            continue
        if "--type=renderer" in cmd:
            ids = [int(m.group(1)) for m in map(_CLIENT_ID.match, cmd) if m]
            if ids:
                out[ids[0]] = cmd
    return out


def test_each_fetch_starts_one_renderer_and_no_browser_ui(pool, site):
    serve_js_site(site)
    url = site.url("/stats")

    def fetch():
        res = pool.fetch(url, wait_for="tr.player")
        assert res.status == 200 and all(name in res.text for name, _ in ROWS)

    fetch()   # launches Chromium; the next fetch's context is being made
    fetch()
    before = live_renderers(pool)
    assert before, "no renderer of the context made ahead"
    for _ in range(3):
        fetch()
    after = live_renderers(pool)
    # One renderer per fetch (the page of the context made ahead for the next one): not
    # Chromium's spare renderer for a context that never navigates again, nor a WebUI renderer
    # for the omnibox popup of each context's window.
    assert max(after) - max(before) == 3, sorted(after)
    assert not [cmd for cmd in after.values() if "--top-chrome-webui" in cmd]
    # The fetches' own contexts are closed: what is alive is the one made for the next fetch.
    assert len(after) == 1, sorted(after)
    with site.lock:
        assert site.hits.get("/stats") == 5 and site.hits.get("/rows.json") == 5
