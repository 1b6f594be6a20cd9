"""The browser fetch against real Chromium and a real local site whose data a script inserts.

One BrowserPool (one Chromium) serves the pool tests of this module; the daemon tests
start their own daemon (and so their own browser).
"""

from __future__ import annotations

import os
import sys
import threading
import time

import psutil
import pytest

from healerd.adapters.browser import BrowserPool, error_for, find_executable, unavailable
from healerd.adapters.fetch import FetchConfig, Fetcher, FetchError
from healerd.config import BrowserSection, ConfigError
from healerd.config import from_dict as config_from_dict
from healerd.core import errors
from healerd.core.blueprint import BlueprintError, from_dict
from healerd.core.extract import extract
from tests.support.daemon import FAST_CONFIG
from tests.support.jssite import V2, js_listing, serve_js_site
from tests.support.sitepages import LISTING_BP, ROWS, write_blueprint


@pytest.fixture(scope="module")
def pool():
    p = BrowserPool(BrowserSection(), FetchConfig(timeout=4.0, connect_timeout=2.0, max_bytes=200_000))
    yield p
    p.close()


@pytest.fixture(scope="module")
def open_pool():
    p = BrowserPool(BrowserSection(allow_private=True), FetchConfig(timeout=4.0, connect_timeout=2.0,
                                                                    max_bytes=200_000))
    yield p
    p.close()


def _chromium_pids(pool: BrowserPool) -> list[int]:
    root = psutil.Process(pool.worker_pid())
    return [p.pid for p in root.children(recursive=True) if "chrom" in p.name().lower()]


# -- real browser ------------------------------------------------------------------------
def test_rendered_page_is_extracted_with_headers_cookies_and_blocked_images(pool, site):
    serve_js_site(site)
    res = pool.fetch(site.url("/stats"), headers={"X-Api": "k3y"}, cookies={"sid": "s3cr3t"},
                     wait_for="tr.player")
    assert res.status == 200 and res.url == site.url("/stats") and res.etag is None
    bp = from_dict(dict(LISTING_BP, fetch="browser"), url=site.url("/stats"))
    assert extract(res.text, bp).data == [{"name": n, "score": s} for n, s in ROWS]
    # The same page over plain HTTP is an empty shell: the browser made the difference.
    with Fetcher(FetchConfig()) as plain:
        assert extract(plain.fetch(site.url("/stats")).text, bp).data == []
    with site.lock:
        assert site.hits.get("/rows.json") == 1   # the script's request, once (the HTTP fetch runs no script)
        assert "/logo.png" not in site.hits   # images are blocked by default


def test_headers_and_cookies_stay_on_the_pages_host(open_pool, site):
    pool = open_pool   # another port of the same loopback host: reachable only with allow_private
    seen = {}
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Other(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.update({k.lower(): v for k, v in self.headers.items()})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"[]")

        def log_message(self, *a):
            pass

    other = ThreadingHTTPServer(("localhost", 0), Other)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        third = f"http://localhost:{other.server_address[1]}/x.json"
        site.page("/p", f'<html><body><div id="d"></div><script>fetch("{third}").then(function(){{'
                        f'document.getElementById("d").className="done";}});</script></body></html>')
        pool.fetch(site.url("/p"), headers={"Authorization": "Bearer t0k"}, cookies={"sid": "s3cr3t"},
                   wait_for="div.done")
        assert seen and "authorization" not in seen and "s3cr3t" not in seen.get("cookie", "")
    finally:
        other.shutdown()
        other.server_close()


def test_nothing_of_one_fetch_reaches_the_next(pool, server):
    # One source's page sets a cookie and stores a token; another source's fetch of the same
    # site must see neither (the browser context is reused, cleaned in between).
    from tests.support.httpfixture import page

    server.route("/login", page('<html><body><p id="x">in</p><script>localStorage.setItem("tok", "s3cr3t");'
                                '</script></body></html>', headers={"Set-Cookie": "session=abc123; Path=/"}))
    server.route("/look", page('<html><body><p id="x"></p><script>document.getElementById("x").className = '
                               '"tok-" + (localStorage.getItem("tok") || "none");</script></body></html>'))
    for _ in range(3):   # whichever context serves the next fetch
        pool.fetch(server.url("/login"), wait_for="#x")
        res = pool.fetch(server.url("/look"), wait_for="#x")
        assert 'class="tok-none"' in res.text
    looks = server.seen("/look")
    assert len(looks) == 3 and all("abc123" not in h.get("cookie", "") for h in looks)
    assert looks[0]["user-agent"] == FetchConfig().user_agent   # the configured one, not Chromium's


def test_max_bytes_holds_for_the_sent_page_and_the_rendered_one(pool, site):
    site.page("/big", "<html><body>" + "x" * 250_000 + "</body></html>")
    site.page("/grows", '<html><body><p id="x"></p><script>document.getElementById("x").textContent = '
                        '"y".repeat(300000); document.getElementById("x").className = "done";</script></body></html>')
    for path in ("/big", "/grows"):
        with pytest.raises(FetchError) as err:
            pool.fetch(site.url(path), wait_for="p.done" if path == "/grows" else None)
        assert err.value.error_type == errors.HTTP_ERROR and "larger than max_bytes (200000)" in err.value.message


def test_a_script_that_never_renders_times_out(pool, site):
    site.page("/never", js_listing(render=False))
    with pytest.raises(FetchError) as err:
        pool.fetch(site.url("/never?token=abc"), wait_for="tr.player")
    assert err.value.error_type == errors.TIMEOUT
    assert "wait_for 'tr.player' matched nothing" in err.value.message and "abc" not in err.value.message
    site.slow("/slow", 8.0, "<html><body>late</body></html>")
    with pytest.raises(FetchError) as err:
        pool.fetch(site.url("/slow"))
    assert err.value.error_type == errors.TIMEOUT and "did not finish loading" in err.value.message


def test_http_errors_and_refused_connections_keep_their_classes(pool, site):
    site.page("/new", "<html><body>moved</body></html>")
    site.redirect("/old", "/new", 301)
    res = pool.fetch(site.url("/old"))
    assert res.url == site.url("/new") and res.permanent_redirect == site.url("/new")
    site.redirect("/tmp", "/new", 302)
    assert pool.fetch(site.url("/tmp")).permanent_redirect is None
    with pytest.raises(FetchError) as err:
        pool.fetch(site.url("/missing"))
    assert err.value.error_type == errors.HTTP_ERROR and err.value.status == 404
    site.page("/busy", "<html><body>slow down</body></html>", status=429, headers={"Retry-After": "120"})
    with pytest.raises(FetchError) as err:
        pool.fetch(site.url("/busy"))
    assert err.value.error_type == errors.RATE_LIMIT and err.value.retry_after == 120
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(FetchError) as err:
        pool.fetch(f"http://127.0.0.1:{port}/")
    assert err.value.error_type == errors.NETWORK and "connection refused" in err.value.message


def test_a_browser_crash_mid_fetch_is_survived(pool, site):
    serve_js_site(site)
    pool.fetch(site.url("/stats"), wait_for="tr.player")   # the browser is up
    site.slow("/hang", 3.0, "<html><body>late</body></html>")
    out = {}
    t = threading.Thread(target=lambda: out.update(r=_try(pool, site.url("/hang"))))
    t.start()
    deadline = time.time() + 10
    while _hits(site, "/hang") == 0 and time.time() < deadline:   # the page is loading
        time.sleep(0.02)
    for pid in _chromium_pids(pool):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    t.join(30)
    assert isinstance(out["r"], FetchError) and out["r"].error_type == errors.NETWORK
    assert "crashed" in out["r"].message
    res = pool.fetch(site.url("/stats"), wait_for="tr.player")   # a new browser
    assert "Grace" in res.text


def test_a_killed_worker_process_is_replaced(pool, site):
    serve_js_site(site)
    pool.fetch(site.url("/stats"), wait_for="tr.player")
    old = pool.worker_pid()
    os.kill(old, 9)
    first = _try(pool, site.url("/stats"))   # may still see the dying worker
    res = first if not isinstance(first, FetchError) else pool.fetch(site.url("/stats"), wait_for="tr.player")
    assert "Grace" in res.text and pool.worker_pid() != old


def test_a_hung_worker_is_killed_and_replaced(site):
    import signal

    site.page("/plain", "<html><body><p>Grace</p></body></html>")
    p = BrowserPool(BrowserSection(), FetchConfig(timeout=2.0))
    try:
        p.fetch(site.url("/plain"))
        hung = p.worker_pid()
        os.kill(hung, signal.SIGSTOP)   # alive, but never answers
        with pytest.raises(FetchError) as err:
            p.fetch(site.url("/plain"))
        assert err.value.error_type == errors.TIMEOUT and "did not answer" in err.value.message
        assert not psutil.pid_exists(hung) or psutil.Process(hung).status() == psutil.STATUS_ZOMBIE
        assert "Grace" in p.fetch(site.url("/plain")).text and p.worker_pid() != hung
    finally:
        p.close()


def _hits(site, path):
    with site.lock:
        return site.hits.get(path, 0)


def _try(pool, url):
    try:
        return pool.fetch(url, wait_for="tr.player")
    except FetchError as exc:
        return exc


# -- the daemon, healerctl --------------------------------------------------------------
BROWSER_BP = dict(LISTING_BP, fetch="browser", wait_for="#app table")
BROWSER_CONFIG = FAST_CONFIG.replace('timeout = "3s"', 'timeout = "10s"')


def test_daemon_scrapes_and_heals_a_script_rendered_page(site, daemon_factory, tmp_path):
    serve_js_site(site)
    d = daemon_factory(BROWSER_CONFIG).start()
    r = d.ctl("add", "js", "--blueprint", write_blueprint(tmp_path / "js.json", site.url("/stats"), BROWSER_BP))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "js")["ok"] is True
    rec = d.ctl_json("records", "js")[0]
    assert rec["data"][0] == {"name": "Ada", "score": 31}
    # The redesign happens in the script: only the rendered DOM shows it.
    serve_js_site(site, V2)
    v = d.wait_for(lambda: (s := d.ctl_json("status", "js"))["state"] == "ACTIVE" and s["version"] > 1
                   and s["version"], timeout=90, what="the heal to be promoted")
    d.wait_for(lambda: d.ctl_json("records", "js")[0]["version"] == v, what="records from the healed version")
    assert d.ctl_json("records", "js")[0]["data"][0] == {"name": "Ada", "score": 31}
    fixes = [h for h in d.ctl_json("history", "js") if h["kind"] == "fix"]
    assert fixes[0]["outcome"] == "promoted" and fixes[0]["strategy"] == "builtin"
    bp = d.ctl_json("status", "js")["blueprint"]
    assert bp["fetch"] == "browser" and bp["wait_for"] == "#app table"


def test_add_refuses_a_browser_source_when_no_browser_is_installed(site, daemon_factory, tmp_path):
    env = {"PATH": os.path.dirname(sys.executable)}   # healerd's own scripts, no chromium
    folder = tmp_path / "sources"
    folder.mkdir()
    write_blueprint(folder / "dropped.json", site.url("/stats"), BROWSER_BP)
    d = daemon_factory(FAST_CONFIG.replace("[daemon]", f'[daemon]\nsources_dir = "{folder}"'), env=env).start()
    assert d.ctl_json("status") == []
    assert "dropped.json: fetch: a browser fetch needs Chromium" in d.log()
    r = d.ctl("add", "js", "--blueprint", write_blueprint(tmp_path / "js.json", site.url("/stats"), BROWSER_BP))
    assert r.returncode != 0
    line = r.stderr.strip()
    assert "\n" not in line and "apt-get install chromium" in line
    ok = d.ctl("add", "plain", "--blueprint", write_blueprint(tmp_path / "p.json", site.url("/stats"), LISTING_BP),
               "--no-wait")   # registered: what is checked here (the site serves no /stats page)
    assert ok.returncode == 0, ok.stderr


def test_the_scheduler_sends_no_more_browser_jobs_than_the_browser_has_pages(site, tmp_path):
    """Four browser sources and one HTTP source due, five Scrapers, max_pages = 2: two browser
    jobs go out (a third would hold a Scraper waiting for a page) and the HTTP one does."""
    from healerd.actors.messages import Tick
    from healerd.actors.registry import ActorRegistry
    from healerd.actors.scheduler import Scheduler
    from healerd.actors.scraper import Scraper
    from healerd.store import sources
    from healerd.store.db import open_db

    site.page("/p", "<html><body></body></html>")
    cfg = config_from_dict({"doctor": {"enabled": False}, "daemon": {"scrapers": 5, "politeness_delay": 0},
                            "fetch": {"per_host_concurrency": 10}, "browser": {"max_pages": 2}})
    db = str(tmp_path / "healerd.db")
    conn = open_db(db)
    registry = ActorRegistry()   # no browser pool and no Validator: the jobs stay in flight
    registry.set_scrapers([Scraper.start(i, cfg, registry, None) for i in range(5)])
    sched = Scheduler(db, cfg, registry, None)
    try:
        t0 = time.time()
        with conn:
            for i in range(4):
                sources.add(conn, f"js{i}", from_dict(dict(BROWSER_BP, url=site.url(f"/p?{i}"))), now=t0 - 10 + i)
            sources.add(conn, "plain", from_dict(dict(LISTING_BP, url=site.url("/p?h"))), now=t0 - 1)
        sched.on_start()
        for k in range(5):
            sched.handle(Tick(t0 + 0.2 * k))
        assert sorted(sched.running) == ["js0", "js1", "plain"]
    finally:
        sched.on_stop()
        for ref in registry.scrapers():
            ref.stop()
        conn.close()


# -- the pure parts ---------------------------------------------------------------------
def test_blueprint_fetch_and_wait_for_keys():
    bp = from_dict(dict(LISTING_BP, fetch="browser", wait_for="tr.player"), url="http://x.test/")
    assert bp.fetch == "browser" and bp.wait_for == "tr.player"
    assert from_dict(bp.to_dict()).to_dict() == bp.to_dict()
    assert bp.with_url("http://y.test/").fetch == "browser"
    plain = from_dict(LISTING_BP, url="http://x.test/")
    assert plain.fetch == "http" and "fetch" not in plain.to_dict()   # old blueprints keep their JSON
    with pytest.raises(BlueprintError) as err:
        from_dict(dict(LISTING_BP, wait_for="tr.player"))
    assert err.value.key == "wait_for" and "browser" in str(err.value)
    with pytest.raises(BlueprintError) as err:
        from_dict(dict(LISTING_BP, fetch="chrome"))
    assert err.value.key == "fetch"
    with pytest.raises(BlueprintError) as err:
        from_dict(dict(LISTING_BP, fetch="browser", wait_for="tr[["))
    assert err.value.key == "wait_for"


def test_browser_config_is_checked():
    cfg = config_from_dict({"browser": {"max_pages": 3, "block": ["image"], "launch_timeout": "1m"}})
    assert cfg.browser.max_pages == 3 and cfg.browser.block == ("image",) and cfg.browser.launch_timeout == 60.0
    assert config_from_dict({"browser": {"executable": os.path.basename(sys.executable)}})   # a name on PATH
    for bad, words in (({"max_pages": 0}, "max_pages"), ({"block": ["pictures"]}, "unknown resource type"),
                       ({"executable": "/no/such/chrome"}, "not an executable"), ({"nope": 1}, "unknown key")):
        with pytest.raises(ConfigError) as err:
            config_from_dict({"browser": bad})
        assert words in str(err.value)


def test_no_browser_is_one_line_saying_what_to_install(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert find_executable("") is None
    why = unavailable(BrowserSection())
    assert "apt-get install chromium" in why and "\n" not in why
    assert find_executable(sys.executable) == sys.executable


def test_error_answers_map_onto_the_error_classes():
    url = "http://bob:hunter2@shop.test/list?api_key=k3y"

    def cls(reply):
        e = error_for(reply, url, 5.0, 100, "tr.x")
        assert "hunter2" not in e.message and "k3y" not in e.message
        return e.error_type

    assert cls({"kind": "timeout_load"}) == errors.TIMEOUT
    assert cls({"kind": "timeout_wait"}) == errors.TIMEOUT
    assert cls({"kind": "net", "code": "ERR_CONNECTION_REFUSED"}) == errors.NETWORK
    assert "DNS" in error_for({"kind": "net", "code": "ERR_NAME_NOT_RESOLVED"}, url, 5, 1, None).message
    assert cls({"kind": "net", "code": "ERR_TIMED_OUT"}) == errors.TIMEOUT
    assert cls({"kind": "net", "code": "ERR_TOO_MANY_REDIRECTS"}) == errors.HTTP_ERROR
    assert cls({"kind": "too_big", "status": 200}) == errors.HTTP_ERROR
    assert cls({"kind": "crash"}) == errors.NETWORK
