"""A Scraper is free for the next job once it has handed its page on (ScraperFree); the
source and its host slot stay held until its outcome is committed (ScrapeDone), and the
scrapes in flight are bounded.

The Scheduler's own code on the test thread with a real SQLite store (as in
test_scheduler_fairness.py); the ScraperFree messages are handed to it as the Scrapers
would tell them.
"""

from __future__ import annotations

import time

from healerd.actors.messages import ScrapeDone, ScraperFree, Tick
from healerd.actors.scheduler import IN_FLIGHT_PER_SCRAPER
from tests.support.scheduler_kit import add, site_url, start
from tests.support.sitepages import listing_v1


def test_a_scraper_that_handed_its_page_on_takes_the_next_job_while_the_source_stays_held(site, harness):
    site.page("/p", listing_v1())
    conn, sched = harness(scrapers=2, fetch={"per_host_concurrency": 8}, daemon={"scrapers": 2,
                                                                              "politeness_delay": 0})
    t0 = time.time()
    with conn:
        for i in range(4):
            add(conn, f"s{i}", site_url(site, f"/p?{i}"), t0 - 10 + i)
    start(sched)

    sched.handle(Tick(t0))
    assert sorted(sched.running) == ["s0", "s1"] and dict(sched.scraper_load) == {0: 1, 1: 1}
    idx = sched.assigned["s0"][0]

    sched.handle(ScraperFree(idx, "s0"))          # s0's page went to the Validator
    assert sorted(sched.running) == ["s0", "s1", "s2"]   # s0 still held (not committed), s2 dispatched
    assert sched.in_flight["127.0.0.1"] == 3
    assert sched.assigned["s2"][0] == idx

    sched.handle(ScraperFree(idx, "s0"))          # told twice (or late): changes nothing
    assert sorted(sched.running) == ["s0", "s1", "s2"] and sched.scraper_load[idx] == 1

    sched.handle(ScrapeDone("s0", "127.0.0.1"))   # committed: source and host slot released
    assert sorted(sched.running) == ["s1", "s2"]
    assert sched.in_flight["127.0.0.1"] == 2 and sched.scraper_load[idx] == 1


def test_the_scrapes_in_flight_are_bounded(site, harness):
    site.page("/p", listing_v1())
    conn, sched = harness(scrapers=1, fetch={"per_host_concurrency": 100}, daemon={"scrapers": 1,
                                                                                "politeness_delay": 0})
    t0 = time.time()
    n = IN_FLIGHT_PER_SCRAPER + 3
    with conn:
        for i in range(n):
            add(conn, f"s{i}", site_url(site, f"/p?{i}"), t0 - 100 + i)
    start(sched)
    sched.handle(Tick(t0))
    for _ in range(n):   # the one Scraper hands every page on, none is committed
        held = [name for name, (idx, _) in sched.assigned.items() if idx == 0]
        if not held:
            break
        sched.handle(ScraperFree(0, held[0]))
    assert len(sched.running) == IN_FLIGHT_PER_SCRAPER
    sched.handle(ScrapeDone(sorted(sched.running)[0], "127.0.0.1"))
    assert len(sched.running) == IN_FLIGHT_PER_SCRAPER     # one committed, the next dispatched


def test_a_tick_stamped_before_the_last_dispatch_still_finds_the_due_rows(site, harness):
    """Without a politeness delay, a Tick that waited in the inbox behind a dispatch (its time
    is older than the dispatch's) must not take the host for one in its delay."""
    site.page("/p", listing_v1())
    conn, sched = harness(scrapers=2, fetch={"per_host_concurrency": 8}, daemon={"scrapers": 2,
                                                                              "politeness_delay": 0})
    t0 = time.time()
    with conn:
        for i in range(6):
            add(conn, f"s{i}", site_url(site, f"/p?{i}"), t0 - 10 + i)
    start(sched)
    sched.handle(Tick(t0))
    assert len(sched.running) == 2
    stale = Tick(time.time())
    time.sleep(0.01)
    sched.handle(ScraperFree(sched.assigned["s0"][0], "s0"))   # dispatches now, after `stale` was stamped
    sched.ready = []
    sched.handle(stale)
    assert len(sched.ready) == 6 - len(sched.running) > 0


def test_a_host_at_its_limit_at_the_tick_keeps_its_rows_ready_for_the_next_free_slot(site, harness):
    site.page("/p", listing_v1())
    conn, sched = harness(scrapers=4, fetch={"per_host_concurrency": 2}, daemon={"scrapers": 4,
                                                                              "politeness_delay": 0})
    t0 = time.time()
    with conn:
        for i in range(5):
            add(conn, f"s{i}", site_url(site, f"/p?{i}"), t0 - 10 + i)
    start(sched)
    sched.handle(Tick(t0))
    assert sorted(sched.running) == ["s0", "s1"] and sched.in_flight["127.0.0.1"] == 2
    sched.handle(Tick(t0 + 0.2))                 # the host is full now: its rows stay ready all the same
    assert [r["name"] for r in sched.ready] == ["s2", "s3", "s4"]
    sched.handle(ScrapeDone("s0", "127.0.0.1"))  # a slot frees: the next row goes at once, not a tick later
    assert sorted(sched.running) == ["s1", "s2"]
