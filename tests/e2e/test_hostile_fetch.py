"""Sites that try to hurt the daemon: trickling bodies, compression bombs, credentials
sent to another origin. Real servers on 127.0.0.1, the real Fetcher and the real daemon."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from healerd.adapters.fetch import FetchConfig, Fetcher, FetchError, same_origin
from healerd.core import errors
from tests.support.daemon import FAST_CONFIG, db_rows
from tests.support.httpfixture import LocalServer, page, send
from tests.support.sitepages import LISTING_BP, listing_v1, write_blueprint


class Trickle:
    """A chunked body sending 11 bytes every `every` seconds, for up to `total` seconds."""

    def __init__(self, every: float = 0.5, total: float = 90.0):
        self.every = every
        self.total = total
        self.hung_up = threading.Event()
        self.finished = threading.Event()
        self.ports: list[int] = []

    def __call__(self, h: BaseHTTPRequestHandler) -> None:
        self.ports.append(h.client_address[1])
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        end = time.monotonic() + self.total
        try:
            while time.monotonic() < end:
                h.wfile.write(b"b\r\n<p>trickle.\r\n")   # 0xb = 11 bytes
                h.wfile.flush()
                time.sleep(self.every)
            h.wfile.write(b"0\r\n\r\n")
            self.finished.set()
        except OSError:
            self.hung_up.set()
        h.close_connection = True


def _ports_recorder(server: LocalServer, path: str, html: str) -> list[int]:
    ports: list[int] = []

    def fn(h):
        ports.append(h.client_address[1])
        send(h, 200, html.encode())

    server.route(path, fn)
    return ports


# The trickles below send every 0.1 s against a 2 s read timeout: only the total deadline (3x the
# read timeout) can stop them, even when a busy machine holds the server's thread for a second or more.
TRICKLE_EVERY_S = 0.1
READ_TIMEOUT_S = 2.0


def test_a_trickle_on_a_warmed_connection_ends_at_the_deadline(server):
    trickle = Trickle(every=TRICKLE_EVERY_S, total=60.0)
    server.route("/trickle", trickle)
    warm_ports = _ports_recorder(server, "/warm", "<html><body>ok</body></html>")
    f = Fetcher(FetchConfig(timeout=READ_TIMEOUT_S, connect_timeout=1.0))   # total deadline 6 s
    try:
        assert f.fetch(server.url("/warm")).status == 200
        with pytest.raises(FetchError) as ei:
            f.fetch(server.url("/trickle"))
    finally:
        f.close()
    # The trickle came on the kept-alive connection the first fetch opened.
    assert trickle.ports == warm_ports, (trickle.ports, warm_ports)
    err = ei.value
    assert err.error_type == errors.TIMEOUT
    # The fetch gave up while the server was still trickling (it would go on for 90 s).
    assert trickle.hung_up.wait(10) and not trickle.finished.is_set()
    # The message states the real elapsed time, not the configured deadline alone.
    m = re.search(r"after (\d+\.\d)s \(total deadline 6s\)", err.message)
    assert m, err.message
    assert float(m.group(1)) >= 6.0


def test_trickling_headers_are_bounded_too():
    """A server that never finishes its status line and headers (one byte every 0.1 s)."""
    stop = threading.Event()

    class Slow(BaseHTTPRequestHandler):
        def do_GET(self):
            for ch in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 600:   # a minute of header bytes
                if stop.is_set():
                    return
                try:
                    self.wfile.write(bytes([ch]))
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(TRICKLE_EVERY_S)

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    f = Fetcher(FetchConfig(timeout=READ_TIMEOUT_S, connect_timeout=1.0))
    try:
        with pytest.raises(FetchError) as ei:
            f.fetch(f"http://127.0.0.1:{srv.server_address[1]}/")
        assert ei.value.error_type == errors.TIMEOUT and "total deadline" in ei.value.message
    finally:
        stop.set()
        f.close()
        srv.shutdown()
        srv.server_close()


@pytest.fixture(scope="module")
def gzip_bomb() -> bytes:
    """1 GB of zeros gzipped (about 1 MB on the wire)."""
    z = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(1 << 20)
    parts = [z.compress(block) for _ in range(1024)]
    parts.append(z.flush())
    return b"".join(parts)


BOMB_CHILD = textwrap.dedent("""
    import json, resource, sys
    from healerd.adapters.fetch import FetchConfig, FetchError, Fetcher
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    f = Fetcher(FetchConfig(timeout=20, max_bytes=10_000_000))
    try:
        f.fetch(sys.argv[1])
        out = {"error": None}
    except FetchError as exc:
        out = {"error": exc.error_type, "message": exc.message}
    out["grew_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(json.dumps(out))
""")


def test_a_gzip_bomb_stops_at_max_bytes_with_bounded_memory(server, gzip_bomb):
    server.route("/bomb", page(gzip_bomb, headers={"Content-Encoding": "gzip"}))
    r = subprocess.run([sys.executable, "-c", BOMB_CHILD, server.url("/bomb")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["error"] == errors.TOO_LARGE
    assert "larger than max_bytes (10000000 once decompressed)" in out["message"]
    # At most max_bytes (10 MB) is ever inflated: the peak grows by far less than the 1 GB.
    assert out["grew_kb"] < 80_000, out


def test_a_compressed_page_within_the_limit_is_decoded(server):
    html = "<html><body>" + "<p>hello</p>" * 1000 + "</body></html>"
    server.route("/gz", page(_gzip(html.encode()), headers={"Content-Encoding": "gzip"}))
    server.route("/deflate", page(zlib.compress(html.encode()), headers={"Content-Encoding": "deflate"}))
    raw = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    server.route("/rawdeflate", page(raw.compress(html.encode()) + raw.flush(),
                                     headers={"Content-Encoding": "deflate"}))
    with Fetcher(FetchConfig(timeout=5, max_bytes=len(html))) as f:
        for path in ("/gz", "/deflate", "/rawdeflate"):
            assert f.fetch(server.url(path)).text == html, path
        assert server.seen("/gz")[0]["accept-encoding"] == "gzip, deflate"
    with Fetcher(FetchConfig(timeout=5, max_bytes=len(html) - 1)) as f:
        with pytest.raises(FetchError, match="once decompressed"):
            f.fetch(server.url("/gz"))


def _gzip(data: bytes) -> bytes:
    z = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    return z.compress(data) + z.flush()


# -- credentials only to the same origin -----------------------------------------------------

def test_same_origin_is_scheme_host_and_port():
    assert same_origin("https://a.example/x", "https://a.example:443/y")
    assert same_origin("http://a.example/x", "HTTP://a.example:80/")
    assert not same_origin("https://a.example/x", "http://a.example/x")       # downgrade
    assert not same_origin("http://127.0.0.1:18080/", "http://127.0.0.1:18081/")
    assert not same_origin("https://a.example/", "https://b.example/")
    assert not same_origin("http://a.example/", "http://[bad")


def test_a_cross_port_redirect_carries_no_credentials(server):
    other = LocalServer()
    try:
        other.route("/landing", page("<html><body>landed</body></html>"))
        server.route("/start", lambda h: send(h, 302, b"", {"Location": other.url("/landing")}))
        server.route("/here", lambda h: send(h, 302, b"", {"Location": "/final"}))
        server.route("/final", page("<html><body>same origin</body></html>"))
        secrets = {"Authorization": "Bearer s3cr3t-T0KEN", "X-Api-Key": "k-4242"}
        with Fetcher(FetchConfig(timeout=5)) as f:
            assert f.fetch(server.url("/start"), headers=secrets, cookies={"sid": "k7Q2"}).text.endswith(
                "landed</body></html>")
            f.fetch(server.url("/here"), headers=secrets, cookies={"sid": "k7Q2"})
        first = server.seen("/start")[0]
        assert first["authorization"] == "Bearer s3cr3t-T0KEN" and first["cookie"] == "sid=k7Q2"
        landed = other.seen("/landing")[0]
        assert not {"authorization", "cookie", "x-api-key"} & set(landed), landed
        # A redirect within the origin keeps them.
        kept = server.seen("/final")[0]
        assert kept["authorization"] == "Bearer s3cr3t-T0KEN" and kept["cookie"] == "sid=k7Q2"
    finally:
        other.stop()


# -- through the real daemon -------------------------------------------------------------------

TRICKLE_CONFIG = FAST_CONFIG.replace('timeout = "3s"', 'timeout = "2s"').replace(
    'connect_timeout = "2s"', 'connect_timeout = "1s"')   # the trickles send every 0.1 s: no read timeout


def test_trickling_sources_do_not_starve_the_fleet(server, daemon_factory, tmp_path):
    """Two trickling sources with two scrapers: the healthy sources keep being scraped."""
    trickles = [Trickle(every=TRICKLE_EVERY_S, total=120.0), Trickle(every=TRICKLE_EVERY_S, total=120.0)]
    server.route("/t0", trickles[0])
    server.route("/t1", trickles[1])
    server.route("/stats", page(listing_v1()))
    d = daemon_factory(TRICKLE_CONFIG).start()
    for i in range(2):
        bp = write_blueprint(tmp_path / f"t{i}.json", server.url(f"/t{i}"), {**LISTING_BP, "every": "1s"})
        assert d.ctl("add", f"trickle{i}", "--blueprint", bp, "--no-wait").returncode == 0   # scraped by the schedule
    names = [f"ok{i}" for i in range(3)]
    for name in names:
        bp = write_blueprint(tmp_path / f"{name}.json", server.url("/stats"), {**LISTING_BP, "every": "1s"})
        assert d.ctl("add", name, "--blueprint", bp).returncode == 0

    def healthy_runs():
        got = db_rows(d, "SELECT source_name, success_count FROM source_health")
        counts = {r["source_name"]: r["success_count"] for r in got}
        return all(counts.get(n, 0) >= 3 for n in names) and counts

    d.wait_for(healthy_runs, timeout=90, what="three good scrapes of every healthy source")
    # The trickling sources failed on their deadline (TIMEOUT) rather than holding a scraper.
    d.wait_for(lambda: all(trickle.hung_up.is_set() for trickle in trickles), timeout=30,
               what="the scrapers to hang up on the trickles")
    st = d.ctl_json("status", "trickle0")
    assert "total deadline" in (st["last_error"] or ""), st
