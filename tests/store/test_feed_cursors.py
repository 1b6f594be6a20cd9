"""Feed cursors in the store (healerd.store.feeds): a cursor never moves backwards, and records
retention waits for the feed furthest behind, not for any one feed."""

from __future__ import annotations

from healerd.store import feeds as feeds_store
from healerd.store.sql import rows
from tests.support.ledger_kit import add, good


def ids(conn, name="shop"):
    return [r["id"] for r in rows(conn, "SELECT id FROM records WHERE source_name = ? ORDER BY id", (name,))]


def scrape(led, n=3):
    led.clock.advance(60)
    led.record_scrape(good(led, n=n))


def test_a_cursor_never_moves_backwards(make_ledger):
    led = make_ledger(daemon__records_retention=3)
    add(led)
    scrape(led)
    led.sync_feeds(["hook"])
    start = feeds_store.get(led.conn, "hook")["cursor"]
    for _ in range(3):
        scrape(led)
    led.feed_advanced("hook", start + 3, 3)
    # a late report of an older batch (a retry, a slow worker) does not take the cursor back
    led.feed_advanced("hook", start + 1, 1)
    r = feeds_store.get(led.conn, "hook")
    assert r["cursor"] == start + 3
    assert r["delivered"] == 4      # what was sent is still counted
    feeds_store.advance(led.conn, "hook", start, 0, led.clock())
    assert feeds_store.get(led.conn, "hook")["cursor"] == start + 3


def test_retention_waits_for_the_feed_furthest_behind(make_ledger):
    led = make_ledger(daemon__records_retention=3)
    add(led)
    scrape(led)
    assert sorted(led.sync_feeds(["ahead", "behind"])) == ["ahead", "behind"]
    start = feeds_store.get(led.conn, "ahead")["cursor"]
    for _ in range(6):
        scrape(led)
    kept = ids(led.conn)
    assert kept == list(range(start + 1, start + 7)), "retention (3) waits for both feeds"
    led.feed_advanced("ahead", kept[-1], 6)      # one feed delivered everything
    led.feed_advanced("behind", kept[1], 2)      # the other only two scrapes
    scrape(led)
    assert ids(led.conn)[0] == kept[2], "rows above the lowest cursor stay, whichever feed holds it"
    led.feed_advanced("behind", kept[-1], 4)
    scrape(led)
    assert len(ids(led.conn)) == 3, "both feeds past them: retention keeps its 3 again"
