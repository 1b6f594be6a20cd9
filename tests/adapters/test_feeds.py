"""Feeds below the daemon: cursors and retention in the store, the ledger's outage alerts,
the two sinks against real files and a real HTTP server, and the [[feeds]] configuration."""

from __future__ import annotations

import json
import os
import random
import shutil
import ssl
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from healerd import config as config_mod
from healerd.actors.feeds import backoff, source_matcher
from healerd.adapters.feeds import JsonlSink, WebhookSink
from healerd.adapters.fetch import FetchConfig
from healerd.config import ConfigError, FeedSection
from healerd.core.sanitize import Secret
from healerd.store import feeds as feeds_store
from healerd.store import records
from healerd.store.db import open_db
from healerd.store.ledger import Ledger
from healerd.store.sql import rows
from tests.support.hookserver import Hook
from tests.support.ledger_kit import Clock, add, config, good
from tests.support.paths import ROOT


@pytest.fixture
def led(tmp_path):
    c = open_db(tmp_path / "healerd.db")
    led = Ledger(c, config(daemon__records_retention=3), clock=Clock(), rng=random.Random(7))
    yield led
    led.resync_models()
    c.close()


def ids(conn, name="shop"):
    return [r["id"] for r in rows(conn, "SELECT id FROM records WHERE source_name = ? ORDER BY id", (name,))]


def scrape(led, n=3, **kw):
    led.clock.advance(60)
    led.record_scrape(good(led, n=n, **kw))


# -- store: cursors, retention, change sets ------------------------------------------------


def test_retention_keeps_every_row_a_feed_has_not_delivered(led):
    add(led)
    scrape(led)
    assert led.sync_feeds(["hook"]) == ["hook"]   # a new feed starts at the newest stored scrape
    start = feeds_store.get(led.conn, "hook")["cursor"]
    for _ in range(5):
        scrape(led)
    kept = ids(led.conn)
    assert kept == list(range(start + 1, start + 6)), "retention (3) waits for the feed"
    led.feed_advanced("hook", kept[3], 3)
    scrape(led)
    assert ids(led.conn)[0] == kept[3], "rows up to the cursor may go, nothing above it"
    led.sync_feeds([])    # the feed is no longer configured: its cursor holds nothing back
    scrape(led)
    assert len(ids(led.conn)) == 3


def test_each_stored_scrape_gets_its_change_set_in_the_same_transaction(led):
    add(led)
    scrape(led, n=2)
    scrape(led, n=2)
    scrape(led, n=3)
    got = rows(led.conn, "SELECT size, body FROM record_changes ORDER BY record_id")
    assert [r["size"] for r in got] == [2, 0, 1]
    assert json.loads(got[2]["body"])["added"] == [{"name": "Widget 2", "price": 12.0}]
    listed = records.changes_of(led.conn, "shop")
    assert [len(c["added"]) for c in listed] == [1, 2], "newest first, only where something changed"
    assert len(records.changes_of(led.conn, "shop", every=True)) == 3


def test_the_blueprint_key_turns_a_new_value_into_one_changed_entry(led):
    from healerd.core.blueprint import from_dict

    add(led)
    bp = from_dict({"url": "http://shop.example/shop", "items": "li.p", "key": "name",
                    "fields": {"name": {"css": ".n"}, "price": {"css": ".v", "type": "float"}}})
    with led.conn:
        led.conn.execute("UPDATE sources SET blueprint = ? WHERE name = 'shop'", (bp.to_json(),))
    scrape(led, n=2)
    scrape(led, n=2, data=[{"name": "Widget 0", "price": 10.0}, {"name": "Widget 1", "price": 99.0}])
    newest = records.changes_of(led.conn, "shop", limit=1)[0]
    assert newest["changed"] == [{"key": "Widget 1", "before": {"price": 11.0}, "after": {"price": 99.0}}]


def test_one_alert_per_outage_and_one_when_it_ends(led):
    led.sync_feeds(["hook"])
    first = led.feed_failed("hook", "HTTP 503 from http://127.0.0.1/hook")
    again = led.feed_failed("hook", "HTTP 503 from http://127.0.0.1/hook")
    assert [a["event"] for a in first.alerts] == ["SYSTEMIC_HALT"] and again.alerts == []
    assert first.alerts[0]["details"] == {"cause": "feed", "feed": "hook"}
    led.feed_progress("hook", 0, 1)   # part of a batch went through: still the same outage
    assert led.feed_failed("hook", "HTTP 503").alerts == []
    led.clock.advance(90)
    assert led.feed_advanced("hook", 0, 0).alerts == [], "scrapes not for this feed prove nothing"
    done = led.feed_advanced("hook", 0, 1)
    assert [a["event"] for a in done.alerts] == ["RECOVERED"] and "after 90s" in done.alerts[0]["message"]
    assert led.feed_advanced("hook", 0, 1).alerts == []
    row = feeds_store.get(led.conn, "hook")
    assert row["delivered"] == 3 and row["failing_since"] is None and row["last_error"] == "HTTP 503"


def test_backlog_counts_only_the_feeds_sources_and_changes(led):
    add(led)
    add(led, "other", host="other.example")
    led.sync_feeds(["f"])
    scrape(led)
    scrape(led)
    led.clock.advance(1)
    led.record_scrape(good(led, name="other", n=1))
    assert feeds_store.backlog(led.conn, 0, source_matcher(("*",)), False) == 3
    assert feeds_store.backlog(led.conn, 0, source_matcher(("sh*",)), False) == 2
    assert feeds_store.backlog(led.conn, 0, source_matcher(("sh*",)), True) == 1


def test_backoff_doubles_to_the_cap_with_jitter():
    rng = random.Random(1)
    waits = [backoff(a, 8.0, rng) for a in range(8)]
    assert all(0.5 * min(8.0, 2 ** a) <= w <= min(8.0, 2 ** a) for a, w in enumerate(waits))
    assert len({round(w, 6) for w in waits[4:]}) == 4, "jittered, not all the same wait"


# -- the JSON Lines sink ----------------------------------------------------------------------


def test_jsonl_sink_rotates_and_keeps_n_files(tmp_path):
    sink = JsonlSink(FeedSection(kind="jsonl", path=str(tmp_path / "f" / "{source}.jsonl"), max_bytes=1024, keep=2))
    line = json.dumps({"x": "y" * 300})
    for _ in range(12):
        assert sink.deliver([("a", line)]) == (1, None)
    sink.close()
    names = sorted(os.listdir(tmp_path / "f"))
    assert names == ["a.jsonl", "a.jsonl.1", "a.jsonl.2"]
    for n in names:
        text = (tmp_path / "f" / n).read_text()
        assert len(text.encode()) <= 1024 and all(json.loads(x) for x in text.splitlines())
    assert oct(os.stat(tmp_path / "f" / "a.jsonl").st_mode & 0o777) == "0o600"
    assert oct(os.stat(tmp_path / "f").st_mode & 0o777) == "0o700"


def test_jsonl_sink_refuses_a_planted_symlink(tmp_path):
    (tmp_path / "elsewhere").write_text("")
    os.symlink(tmp_path / "elsewhere", tmp_path / "a.jsonl")
    sink = JsonlSink(FeedSection(kind="jsonl", path=str(tmp_path / "{source}.jsonl")))
    done, error = sink.deliver([("a", "{}")])
    assert done == 0 and error.startswith(f"refusing the feed file {tmp_path}/a.jsonl: it is a symbolic link owned")
    assert (tmp_path / "elsewhere").read_text() == ""


CHILD = r"""
import json, resource, signal, sys
from healerd.adapters.feeds import JsonlSink
from healerd.config import FeedSection
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
path = sys.argv[1]
sink = JsonlSink(FeedSection(kind="jsonl", path=path))
print(sink.deliver([("a", json.dumps({"n": 0}))]), flush=True)
size = len(open(path, "rb").read())
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 30, size + 30))   # the disk is full after 30 more bytes
print(sink.deliver([("a", json.dumps({"n": i, "pad": "x" * 10})) for i in range(1, 4)]), flush=True)
"""


def test_a_batch_that_does_not_fit_on_disk_is_cut_back_to_whole_lines(tmp_path):
    path = tmp_path / "out.jsonl"
    r = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()
    assert first == "(1, None)"
    assert second.startswith("(0, 'cannot write") and "File too large" in second
    assert [json.loads(x) for x in path.read_text().splitlines()] == [{"n": 0}], "no half line left behind"


# -- the webhook sink ---------------------------------------------------------------------------


def webhook(url: str, **kw) -> WebhookSink:
    feed = FeedSection(kind="webhook", url=Secret(url), headers={"Authorization": Secret("Bearer s3cret-token-1")}, **kw)
    return WebhookSink(feed, FetchConfig(timeout=2.0, connect_timeout=2.0))


def test_webhook_delivers_in_order_and_stops_at_the_first_refusal():
    hook = Hook()
    try:
        sink = webhook(hook.url())
        assert sink.deliver([("a", '{"n":1}'), ("a", '{"n":2}')]) == (2, None)
        hook.set(503)
        hook.answer = b"try later; Bearer s3cret-token-1"
        done, error = sink.deliver([("a", '{"n":3}')])
        assert done == 0 and error.startswith("HTTP 503 from http://127.0.0.1:") and "s3cret-token-1" not in error
        assert [p["n"] for p in hook.received()] == [1, 2]
        assert hook.headers[0]["content-type"] == "application/json"
        sink.close()
    finally:
        hook.stop()


def test_webhook_never_follows_a_redirect_so_credentials_stay_at_their_origin():
    elsewhere = Hook()

    class Redirect(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(307)
            self.send_header("Location", elsewhere.url())
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        done, error = webhook(f"http://127.0.0.1:{srv.server_address[1]}/hook").deliver([("a", "{}")])
        assert done == 0 and error.startswith("HTTP 307")
        assert elsewhere.headers == [], "nothing reached another origin"
    finally:
        srv.shutdown()
        srv.server_close()
        elsewhere.stop()


class Hostile(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mode = "slow"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        if self.mode == "huge":
            self.send_header("Content-Length", str(1 << 30))
            self.end_headers()
            try:
                for _ in range(1 << 14):
                    self.wfile.write(b"x" * 65536)
            except OSError:
                return
        else:
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                for _ in range(1000):     # a byte every 0.2 s, each read well inside its timeout
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    threading.Event().wait(0.2)
            except OSError:
                return

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("mode", ["slow", "huge"])
def test_a_slow_or_huge_answer_is_bounded_like_a_fetch(mode):
    handler = type("H", (Hostile,), {"mode": mode})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        sink = webhook(f"http://127.0.0.1:{srv.server_address[1]}/hook", timeout=0.5)
        done, error = sink.deliver([("a", "{}")])
        if mode == "slow":   # the whole answer within the total deadline (timeout x 3), or not delivered
            assert done == 0 and "no complete response" in error
        else:                # a 2xx is delivered; of its answer no more than the cap is read
            assert (done, error) == (1, None)
        sink.close()
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_webhook_verifies_tls(tmp_path):
    key, cert = tmp_path / "k.pem", tmp_path / "c.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True, timeout=60)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        done, error = webhook(f"https://127.0.0.1:{srv.server_address[1]}/hook").deliver([("a", "{}")])
        assert done == 0 and "certificate" in error.lower()
    finally:
        srv.shutdown()
        srv.server_close()


# -- configuration --------------------------------------------------------------------------------


def test_feeds_config_parses_and_masks_its_secrets():
    cfg = config_mod.from_dict({"feeds": [
        {"kind": "webhook", "url": "https://user:pw@example.org/hook?token=abcdef123456",
         "headers": {"Authorization": "Bearer abcdefgh12345678"}, "sources": ["shop*", "news"], "only_changes": True},
        {"kind": "jsonl", "path": "/var/lib/healerd/feeds/{source}.jsonl", "max_bytes": 4096, "retry_max": "2m"}]})
    hook, files = cfg.feeds
    assert hook.name == "webhook:https://***:***@example.org/hook?token=***"
    assert "abcdefgh12345678" not in repr(cfg) and "pw@" not in repr(cfg) and "abcdef123456" not in repr(cfg)
    assert hook.sources == ("shop*", "news") and hook.only_changes is True
    assert files.max_bytes == 4096 and files.retry_max == 120.0 and files.keep == 5


@pytest.mark.parametrize("feed, says", [
    ({"kind": "ftp"}, '[[feeds]] #1 kind: expected "webhook" or "jsonl"'),
    ({"kind": "webhook"}, "[[feeds]] #1 url: a webhook feed needs an http:// or https:// URL"),
    ({"kind": "jsonl", "path": "feeds.jsonl"}, "[[feeds]] #1 path: a jsonl feed needs an absolute file path"),
    ({"kind": "jsonl", "path": "/f/{name}.jsonl"}, "[[feeds]] #1 path: the only placeholder is {source}"),
    ({"kind": "jsonl", "path": "/f", "url": "http://x"}, "[[feeds]] #1 url: only for webhook feeds"),
    ({"kind": "jsonl", "path": "/f", "max_bytes": 10}, "[[feeds]] #1 max_bytes: at least 1024"),
    ({"kind": "jsonl", "path": "/f", "sources": []}, "[[feeds]] #1 sources: expected a non-empty list"),
    ({"kind": "jsonl", "path": "/f", "only_changes": "yes"}, "[[feeds]] #1 only_changes: expected true or false"),
    ({"kind": "jsonl", "path": "/f", "colour": 1}, "[[feeds]] #1 colour: unknown key"),
])
def test_a_bad_feed_is_one_clear_line(feed, says):
    with pytest.raises(ConfigError) as e:
        config_mod.from_dict({"feeds": [feed]})
    assert str(e.value).startswith(says) and "\n" not in str(e.value)


def test_two_feeds_with_one_name_are_refused():
    with pytest.raises(ConfigError, match="used by two feeds"):
        config_mod.from_dict({"feeds": [{"kind": "jsonl", "path": "/f"}, {"kind": "jsonl", "path": "/f"}]})


def test_feeds_reference_documents_every_key_with_its_default():
    import dataclasses

    from tests.support.reference_doc import cell_value, section, table_rows

    text = (ROOT / "docs" / "REFERENCE.md").read_text()
    rows = {r[0].strip("`"): r for r in table_rows(section(text, "### [[feeds]]")) if len(r) >= 3}
    defaults = FeedSection(kind="jsonl", path="/f")
    for f in dataclasses.fields(FeedSection):
        assert f.name in rows, f"[[feeds]] {f.name}: no row in the reference"
        doc = cell_value(rows[f.name][1])
        if f.name in ("kind", "name", "url", "path", "headers"):
            continue   # required, or derived
        if f.name in ("timeout", "retry_max"):
            doc = config_mod.parse_duration(doc, f.name)
        if f.name == "sources":
            doc = tuple(doc)
        assert doc == getattr(defaults, f.name), f"[[feeds]] {f.name}"


def test_the_backlog_is_read_a_bounded_number_of_bytes_at_a_time(led):
    add(led)
    for _ in range(5):
        scrape(led, n=40)
    got = feeds_store.pending(led.conn, 0, 100, max_bytes=3000)
    assert 1 <= len(got) < 5 and sum(len(r["data"]) + len(r["body"]) for r in got[:-1]) < 3000
    assert [r["id"] for r in feeds_store.pending(led.conn, 0, 100)] == ids(led.conn)
    assert len(feeds_store.pending(led.conn, 0, 100, max_bytes=1)) == 1, "always at least one"


def test_a_stopping_feeds_process_sends_no_more_posts():
    hook = Hook()
    try:
        sink = webhook(hook.url())
        calls = iter([False, False, True])
        assert sink.deliver([("a", '{"n":1}'), ("a", '{"n":2}'), ("a", '{"n":3}')], lambda: next(calls)) \
            == (2, "stopped")
        assert [p["n"] for p in hook.received()] == [1, 2]
        sink.close()
    finally:
        hook.stop()


def test_a_delivered_object_carries_no_raw_control_character(led):
    add(led)
    evil = "\x1b]0;pwned\x07 \x9b31m \x7f end"
    scrape(led, n=1, data=[{"name": evil, "price": 1.0}])
    (r,) = feeds_store.pending(led.conn, 0, 10)
    text = feeds_store.payload(r)
    assert not any(c in text for c in "\x1b\x07\x9b\x7f")
    back = json.loads(text)
    assert back["records"] == [{"name": evil, "price": 1.0}] and back["changes"]["added"] == back["records"]
    assert set(back) == {"id", "source", "scraped_at", "version", "records", "changes"}
