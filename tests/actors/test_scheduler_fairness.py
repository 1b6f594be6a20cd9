"""One bad site never hurts the others: the Scheduler's share of it.

- a long backlog on one host does not hide another host's due source;
- a job goes only to an idle Scraper, so nothing waits behind a page that trickles;
- a job whose outcome was lost (an actor replaced with its queue) is given up after
  a bound, so its source runs again and its host gets its slot back.

The core tests drive the Scheduler's own code on the test thread with a real SQLite
store and real Scraper actors fetching from a real local site; no Validator is
registered, so a scrape's outcome is dropped the way it is when the Validator is
replaced with its queue, and the sources stay in flight. The end-to-end test runs
the real daemon with the default host limits.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import apsw
import pytest

from healerd.actors.messages import ScrapeDone, Tick
from healerd.actors.scheduler import stale_after
from healerd.store import sources
from healerd.store.db import open_db
from healerd.store.due import due_jobs
from tests.support.scheduler_kit import add, site_url, start
from tests.support.sitepages import listing_v1, write_blueprint


def wait_for(predicate, what: str, timeout: float = 20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_backlog_on_one_host_does_not_hide_another_hosts_due_source(site, harness):
    """300 overdue sources on one host, two of them in flight, and one due source on another
    host: the other host's source is dispatched at once, and the busy host gets no more
    than its two slots."""
    site.page("/a", listing_v1())
    site.page("/b", listing_v1())
    conn, sched = harness()
    t0 = time.time()
    with conn:
        for i in range(300):
            add(conn, f"a{i:03d}", site_url(site, f"/a?{i}"), t0 - 600 + i)
        add(conn, "b", site_url(site, "/b", "localhost"), t0)
    start(sched)

    for k in range(10):
        sched.handle(Tick(t0 + 0.2 * k))

    assert "b" in sched.running, f"the idle host's due source was never dispatched; sent: {sorted(sched.running)}"
    assert sorted(n for n in sched.running if n.startswith("a")) == ["a000", "a001"]
    assert sched.in_flight["127.0.0.1"] == 2   # the per-host limit holds
    wait_for(lambda: site.hits.get("/b") == 1, "the Scraper to fetch the idle host's page")


def test_the_due_window_goes_round_the_hosts(site, tmp_path):
    """The due query itself: one row per host before a second of any, the hosts that cannot
    take a request left out, and a single host not capped (its rows refill the pool)."""
    conn = open_db(str(tmp_path / "healerd.db"))
    t0 = time.time()
    with conn:
        for i in range(300):
            add(conn, f"a{i:03d}", site_url(site, f"/a?{i}"), t0 - 600 + i)
        for i in range(3):
            add(conn, f"b{i}", site_url(site, f"/b?{i}", "localhost"), t0 - 10 + i)
    try:
        names = [r["name"] for r in due_jobs(conn, t0, set(), set(), 4)]
        assert names == ["a000", "b0", "a001", "b1"]
        names = [r["name"] for r in due_jobs(conn, t0, {"127.0.0.1"}, {"b0"}, 10)]
        assert names == ["b1", "b2"]
        names = [r["name"] for r in due_jobs(conn, t0, {"localhost"}, set(), 50)]
        assert names == [f"a{i:03d}" for i in range(50)]
        assert due_jobs(conn, t0 - 601, set(), set(), 10) == []
    finally:
        conn.close()


def test_a_job_goes_only_to_an_idle_scraper(site, harness):
    """Three hosts with a due source each and two Scrapers: two jobs go out, one per Scraper;
    the third waits for a Scraper to be free rather than queueing behind a page."""
    site.page("/p", listing_v1())
    conn, sched = harness(scrapers=2)
    t0 = time.time()
    with conn:
        for i, host in enumerate(("127.0.0.1", "localhost", "127.0.0.2")):
            add(conn, f"s{i}", site_url(site, f"/p?{i}", host), t0 - 10 + i)
    start(sched)

    sched.handle(Tick(t0))
    assert sorted(sched.running) == ["s0", "s1"]
    assert dict(sched.scraper_load) == {0: 1, 1: 1}

    sched.handle(ScrapeDone("s0", "127.0.0.1"))   # the StoreWriter committed s0's outcome
    assert sorted(sched.running) == ["s1", "s2"]
    assert dict(sched.scraper_load) == {0: 1, 1: 1}


def test_a_job_whose_outcome_was_lost_is_given_up_after_a_bound(site, harness, caplog):
    """The outcome never comes back (the Validator holding it was replaced): the entry stays
    while a live job could still be running, then it is dropped, logged once, and the
    source runs again, holding one host slot, not two."""
    site.page("/x", listing_v1())
    conn, sched = harness(scrapers=1)
    bound = stale_after(sched.config)
    t0 = time.time()
    with conn:
        add(conn, "x", site_url(site, "/x"), t0 - 10)
    start(sched)
    caplog.set_level(logging.WARNING, logger="healerd.scheduler")

    sched.handle(Tick(t0))
    wait_for(lambda: site.hits.get("/x") == 1, "the first scrape")
    sched.handle(Tick(t0 + bound - 1))     # a slow job may still be alive: not run a second time
    assert sched.dispatched_at == {"x": t0}
    assert not [r for r in caplog.records if "no outcome for x" in r.getMessage()]

    sched.handle(Tick(t0 + bound + 1))
    assert sched.dispatched_at == {"x": t0 + bound + 1}, "the lost job's source was never scheduled again"
    assert sched.in_flight["127.0.0.1"] == 1 and dict(sched.scraper_load) == {0: 1}
    wait_for(lambda: site.hits.get("/x") == 2, "the second scrape")
    sched.handle(Tick(t0 + bound + 2))
    assert len([r for r in caplog.records if "no outcome for x" in r.getMessage()]) == 1

    # An outcome for a job this Scheduler does not hold (given up, or sent by a former
    # Scheduler) frees nothing: the host keeps counting the job in flight.
    sched.handle(ScrapeDone("elsewhere", "127.0.0.1"))
    assert sched.in_flight["127.0.0.1"] == 1 and sched.running == {"x"}


# -- end to end -------------------------------------------------------------------------------

class TrickleSite:
    """A server on 127.0.0.2 (another host than 127.0.0.1 and localhost) whose pages send a
    byte a second of a body far longer than that: each fetch holds its Scraper until the
    fetch's total deadline. robots.txt answers at once (404: no rules)."""

    def __init__(self):
        self.stopping = threading.Event()
        self.hits: dict[str, int] = {}
        trickle = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                path = self.path.split("?", 1)[0]
                trickle.hits[path] = trickle.hits.get(path, 0) + 1
                if path == "/robots.txt":
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                try:
                    self.wfile.write(b"<html>")
                    while not trickle.stopping.wait(1.0):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                except OSError:
                    pass
                self.close_connection = True

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.2", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.2:{self.port}{path}"

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def trickle():
    t = TrickleSite()
    yield t
    t.stop()


def success_counts(d, names) -> dict[str, int]:
    conn = apsw.Connection(str(d.state / "healerd.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        found = dict(conn.execute("SELECT source_name, success_count FROM source_health").fetchall())
    finally:
        conn.close()
    return {n: found.get(n, 0) for n in names}


def test_a_trickling_host_does_not_hold_up_the_others(site, trickle, daemon_factory, tmp_path):
    """The real daemon, default host limits, three Scrapers. Two sources on a host whose pages
    trickle for a minute take two Scrapers; the sources of two other hosts, due every second,
    keep being scraped on the third while those pages still hang. (Were a job queued on a busy
    Scraper, the second fast host's job would wait behind a trickling page.)"""
    site.page("/fast", listing_v1())
    folder = tmp_path / "sources"
    folder.mkdir()
    plan = {"a-slow-1": trickle.url("/slow?1"), "a-slow-2": trickle.url("/slow?2"),
            "b-fast-1": site_url(site, "/fast?b1"), "b-fast-2": site_url(site, "/fast?b2"),
            "c-fast-1": site_url(site, "/fast?c1", "localhost"), "c-fast-2": site_url(site, "/fast?c2", "localhost")}
    for name, url in plan.items():   # registered in this order when the daemon starts, before its first tick
        write_blueprint(folder / f"{name}.json", url)
    config = (f'[daemon]\nscrapers = 3\nsources_dir = {json.dumps(str(folder))}\nlog_level = "INFO"\n'
              f'[doctor]\nenabled = false\n')
    d = daemon_factory(config).start()
    fast = [n for n in plan if "fast" in n]

    d.wait_for(lambda: trickle.hits.get("/slow") == 2, timeout=20, what="both slow pages to be requested")
    d.wait_for(lambda: min(success_counts(d, fast).values()) >= 3, timeout=40,
               what=f"every fast source to be scraped three times; counts {success_counts(d, fast)}")

    for name in ("a-slow-1", "a-slow-2"):   # the slow pages were still hanging all along
        status = d.ctl_json("status", name)
        assert status["last_success_at"] is None and status["last_failure_at"] is None, status


def test_the_due_order_follows_the_database_after_the_first_tick(site, harness):
    """The Scheduler keeps the due order in memory from its first Tick on: a source added later is
    dispatched, and one paused later is not (both seen through the changes the database notes)."""
    site.page("/p", listing_v1())
    conn, sched = harness(scrapers=4, fetch={"per_host_concurrency": 8}, daemon={"scrapers": 4,
                                                                              "politeness_delay": 0})
    t0 = time.time()
    with conn:
        add(conn, "early", site_url(site, "/p?0"), t0 + 60)
        add(conn, "later-paused", site_url(site, "/p?1"), t0 + 60)
    start(sched)
    sched.handle(Tick(t0))
    assert sched.running == set()
    with conn:
        add(conn, "added", site_url(site, "/p?2", "localhost"), t0 - 1)
    sources.set_paused(conn, "later-paused", True)
    sched.handle(Tick(t0 + 0.2))
    assert sched.running == {"added"}
    sched.handle(Tick(t0 + 120))
    assert sched.running == {"added", "early"}, "a paused source was dispatched, or a due one was not"
