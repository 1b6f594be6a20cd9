"""Fetcher against a real HTTP server on 127.0.0.1 whose answers change between requests."""

from __future__ import annotations

import threading
import time
import types
from email.utils import formatdate

import pytest

from healerd import __version__
from healerd.adapters.fetch import FetchConfig, Fetcher, FetchError, decode_body, mask_url, parse_retry_after
from healerd.core import errors
from healerd.core.blueprint import from_dict
from healerd.core.extract import extract
from healerd.core.validate import validate
from tests.support.httpfixture import LocalServer, Streamer, page, send, sequence

GOOD = "<html><head><title>Stats</title></head><body><p class='v'>héllo</p></body></html>"


def fails(fn) -> FetchError:
    with pytest.raises(FetchError) as info:
        fn()
    return info.value


# -- success, headers, conditional requests -----------------------------------------------

def test_good_page_and_user_agent(server, fetcher):
    server.route("/p", page(GOOD, headers={"X-Thing": "1"}))
    res = fetcher.fetch(server.url("/p"))
    assert res.status == 200 and not res.not_modified
    assert res.text == GOOD and res.body == GOOD.encode()
    assert res.encoding == "utf-8"
    assert res.headers["x-thing"] == "1" and "content-type" in res.headers
    assert res.url == server.url("/p") and res.permanent_redirect is None
    assert res.elapsed_ms > 0
    ua = server.seen("/p")[0]["user-agent"]
    assert ua == FetchConfig().user_agent == f"healerd/{__version__} (+https://github.com/healerd/healerd)"


def test_configured_user_agent_and_blueprint_headers_and_cookies(server):
    server.route("/p", page(GOOD))
    with Fetcher(FetchConfig(user_agent="acme-bot/2.0")) as f:
        f.fetch(server.url("/p"), headers={"X-Api": "abc"}, cookies={"sid": "s3cr3t", "lang": "en"})
        f.fetch(server.url("/p"))
    first, second = server.seen("/p")
    assert first["user-agent"] == "acme-bot/2.0"
    assert first["x-api"] == "abc"
    assert first["cookie"] == "sid=s3cr3t; lang=en"
    assert "cookie" not in second and "x-api" not in second   # nothing carried over between fetches


def test_server_cookies_are_not_kept_between_fetches(server, fetcher):
    server.route("/p", page(GOOD, headers={"Set-Cookie": "track=1; Path=/"}))
    fetcher.fetch(server.url("/p"))
    fetcher.fetch(server.url("/p"))
    assert "cookie" not in server.seen("/p")[1]


def test_etag_then_304(server, fetcher):
    lm = "Wed, 21 Oct 2026 07:28:00 GMT"

    def conditional(h):
        if h.headers.get("If-None-Match") == '"v1"' and h.headers.get("If-Modified-Since") == lm:
            send(h, 304, headers={"ETag": '"v1"'})
        else:
            send(h, 200, GOOD.encode(), headers={"ETag": '"v1"', "Last-Modified": lm})

    server.route("/p", conditional)
    first = fetcher.fetch(server.url("/p"))
    assert first.etag == '"v1"' and first.last_modified == lm and not first.not_modified
    second = fetcher.fetch(server.url("/p"), etag=first.etag, last_modified=first.last_modified)
    assert second.not_modified and second.status == 304
    assert second.body == b"" and second.text == ""
    assert second.etag == '"v1"' and second.last_modified == lm   # kept from the request when not repeated
    sent = server.seen("/p")[1]
    assert sent["if-none-match"] == '"v1"' and sent["if-modified-since"] == lm


def test_304_without_a_conditional_request_is_an_error(server, fetcher):
    server.route("/p", lambda h: send(h, 304))
    err = fails(lambda: fetcher.fetch(server.url("/p")))
    assert err.error_type == errors.HTTP_ERROR and err.status == 304


# -- HTTP errors --------------------------------------------------------------------------

def test_404_then_500_then_200(server, fetcher):
    server.route("/p", sequence(page("gone", 404), page("boom", 500), page(GOOD)))
    e404 = fails(lambda: fetcher.fetch(server.url("/p")))
    assert (e404.error_type, e404.status) == (errors.HTTP_ERROR, 404)
    assert "404 Not Found" in e404.message and server.url("/p") in e404.message
    e500 = fails(lambda: fetcher.fetch(server.url("/p")))
    assert (e500.error_type, e500.status) == (errors.HTTP_ERROR, 500)
    assert fetcher.fetch(server.url("/p")).text == GOOD


def test_429_retry_after_seconds(server, fetcher):
    server.route("/p", page("slow down", 429, headers={"Retry-After": "120"}))
    err = fails(lambda: fetcher.fetch(server.url("/p")))
    assert err.error_type == errors.RATE_LIMIT and err.status == 429
    assert err.retry_after == 120.0
    assert "retry after 120s" in err.message


def test_429_retry_after_http_date(server, fetcher):
    when = formatdate(time.time() + 3600, usegmt=True)
    server.route("/p", page("slow down", 429, headers={"Retry-After": when}))
    err = fails(lambda: fetcher.fetch(server.url("/p")))
    assert err.error_type == errors.RATE_LIMIT
    assert 3500 < err.retry_after <= 3600


def test_429_without_retry_after(server, fetcher):
    server.route("/p", page("slow down", 429))
    err = fails(lambda: fetcher.fetch(server.url("/p")))
    assert err.error_type == errors.RATE_LIMIT and err.retry_after is None


def test_503_keeps_retry_after(server, fetcher):
    server.route("/p", page("maintenance", 503, headers={"Retry-After": "30"}))
    err = fails(lambda: fetcher.fetch(server.url("/p")))
    assert (err.error_type, err.status, err.retry_after) == (errors.HTTP_ERROR, 503, 30.0)


def test_parse_retry_after():
    assert parse_retry_after("0") == 0.0
    assert parse_retry_after("-5") == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480 - 60) == 60.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480 + 60) == 0.0


# -- timeouts and the size cap -------------------------------------------------------------

def test_response_slower_than_the_timeout(server):
    def slow(h):
        server.stopping.wait(2.0)
        try:
            send(h, 200, GOOD.encode())
        except OSError:
            pass

    server.route("/slow", slow)
    with Fetcher(FetchConfig(timeout=0.3, connect_timeout=0.3)) as f:
        err = fails(lambda: f.fetch(server.url("/slow")))
    assert err.error_type == errors.TIMEOUT and "read timeout" in err.message


def test_trickling_body_hits_the_total_deadline(server):
    # One byte every 0.1 s never trips a 0.3 s read timeout; the 0.9 s total deadline stops it.
    trickle = Streamer(total=10_000, chunk=1, delay=0.1, stop=server.stopping)
    server.route("/trickle", trickle)
    with Fetcher(FetchConfig(timeout=0.3, connect_timeout=0.3)) as f:
        err = fails(lambda: f.fetch(server.url("/trickle")))
    assert err.error_type == errors.TIMEOUT and "total deadline" in err.message
    assert trickle.done.wait(5) and trickle.sent < 10_000


def test_trickling_headers_hit_the_total_deadline(server):
    def trickle_headers(h):
        h.wfile.write(b"HTTP/1.1 200 OK\r\n")
        try:
            for i in range(100):
                if server.stopping.wait(0.1):
                    return
                h.wfile.write(f"X-Pad-{i}: y\r\n".encode())
                h.wfile.flush()
        except OSError:
            pass

    server.route("/th", trickle_headers)
    with Fetcher(FetchConfig(timeout=0.3, connect_timeout=0.3)) as f:
        err = fails(lambda: f.fetch(server.url("/th")))
    assert err.error_type == errors.TIMEOUT and "total deadline" in err.message


def test_50mb_streamed_body_is_cut_off_early(server):
    big = Streamer(total=50_000_000)   # no Content-Length: only streaming can catch it
    server.route("/big", big)
    with Fetcher(FetchConfig(max_bytes=1_000_000)) as f:
        err = fails(lambda: f.fetch(server.url("/big")))
    assert err.error_type == errors.TOO_LARGE and err.status == 200
    assert "larger than max_bytes (1000000)" in err.message
    assert big.done.wait(10)
    assert big.closed_early
    assert big.sent < 20_000_000    # 1 MB read + socket buffers, far below 50 MB


def test_declared_content_length_above_cap_is_refused_before_reading(server):
    big = Streamer(total=50_000_000, content_length=True)
    server.route("/big", big)
    with Fetcher(FetchConfig(max_bytes=1_000_000)) as f:
        err = fails(lambda: f.fetch(server.url("/big")))
    assert err.error_type == errors.TOO_LARGE and "Content-Length 50000000" in err.message
    assert big.done.wait(10) and big.closed_early and big.sent < 20_000_000


def test_body_at_the_cap_is_accepted(server):
    body = b"<p>" + b"a" * 997
    server.route("/p", page(body))
    with Fetcher(FetchConfig(max_bytes=1000)) as f:
        assert f.fetch(server.url("/p")).body == body


# -- charsets ------------------------------------------------------------------------------

def test_latin1_with_charset_header(server, fetcher):
    raw = "<html><body><p>Café crème – déjà</p></body></html>".replace("–", "-").encode("latin-1")
    server.route("/l1", page(raw, content_type="text/html; charset=ISO-8859-1"))
    res = fetcher.fetch(server.url("/l1"))
    assert "Café crème - déjà" in res.text
    assert res.encoding == "cp1252"   # browsers read a latin-1 label as windows-1252


def test_windows1252_with_only_a_meta_tag(server, fetcher):
    html = '<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1252"></head>' \
           '<body><p>“Smart” quotes cost €5</p></body></html>'
    server.route("/w", page(html.encode("cp1252"), content_type="text/html"))
    res = fetcher.fetch(server.url("/w"))
    assert "“Smart” quotes cost €5" in res.text and res.encoding == "cp1252"


def test_meta_charset_short_form(server, fetcher):
    html = '<html><head><meta charset="koi8-r"></head><body>Привет</body></html>'
    server.route("/k", page(html.encode("koi8-r"), content_type="text/html"))
    res = fetcher.fetch(server.url("/k"))
    assert "Привет" in res.text and res.encoding == "koi8-r"


def test_garbage_bytes_without_charset_do_not_raise(server, fetcher):
    raw = b"<html><body>\xff\xfe\x80\x81 ok \xc3\x28</body></html>"[0:6] + b"\x80\x81\xc3\x28 ok</html>"
    server.route("/g", page(raw, content_type="text/html"))
    res = fetcher.fetch(server.url("/g"))
    assert res.encoding == "utf-8" and "ok" in res.text and "\ufffd" in res.text


def test_unknown_charset_falls_back_to_utf8(server, fetcher):
    server.route("/u", page("naïve".encode(), content_type="text/html; charset=x-no-such-charset"))
    res = fetcher.fetch(server.url("/u"))
    assert res.text == "naïve" and res.encoding == "utf-8"


def test_decode_body_rules():
    assert decode_body(b"\xef\xbb\xbfhi", "text/html; charset=latin-1") == ("hi", "utf-8-sig")   # BOM wins
    assert decode_body("hé".encode("utf-16"), None)[0] == "hé"
    assert decode_body(b"<meta charset='utf-16'>x", None)[1] == "utf-8"
    assert decode_body(b"\xa4", 'text/html; charset="iso-8859-15"') == ("€", "iso8859-15")
    assert decode_body(b"", None) == ("", "utf-8")


# -- redirects -----------------------------------------------------------------------------

def test_redirect_loop(server, fetcher):
    server.route("/a", page("", 302, headers={"Location": "/b"}))
    server.route("/b", page("", 302, headers={"Location": "/a"}))
    err = fails(lambda: fetcher.fetch(server.url("/a")))
    assert err.error_type == errors.HTTP_ERROR
    assert err.message.startswith("redirect loop:") and "/a -> " in err.message


def test_too_many_redirects(server):
    for i in range(6):
        server.route(f"/r{i}", page("", 302, headers={"Location": f"/r{i + 1}"}))
    with Fetcher(FetchConfig(max_redirects=3)) as f:
        err = fails(lambda: f.fetch(server.url("/r0")))
    assert err.error_type == errors.HTTP_ERROR and "too many redirects" in err.message
    assert len(server.seen("/r4")) == 0


def test_permanent_redirect_then_200(server, fetcher):
    server.route("/old", page("", 301, headers={"Location": "/new"}))
    server.route("/new", page(GOOD))
    res = fetcher.fetch(server.url("/old"))
    assert res.status == 200 and res.text == GOOD
    assert res.url == server.url("/new")
    assert res.permanent_redirect == server.url("/new")


def test_temporary_redirect_is_not_recorded(server, fetcher):
    server.route("/tmp", page("", 302, headers={"Location": "/new"}))
    server.route("/new", page(GOOD))
    res = fetcher.fetch(server.url("/tmp"))
    assert res.url == server.url("/new") and res.permanent_redirect is None


def test_redirect_to_another_host_drops_blueprint_headers_and_cookies(server, fetcher):
    other = LocalServer()
    try:
        other.route("/x", page(GOOD))
        target = f"http://localhost:{other.port}/x"
        server.route("/go", page("", 307, headers={"Location": target}))
        res = fetcher.fetch(server.url("/go"), headers={"Authorization": "Bearer t0k"}, cookies={"sid": "1"})
        assert res.text == GOOD
        assert server.seen("/go")[0]["authorization"] == "Bearer t0k"
        seen = other.seen("/x")[0]
        assert "authorization" not in seen and "cookie" not in seen
    finally:
        other.stop()


def test_redirect_to_a_non_http_scheme(server, fetcher):
    server.route("/f", page("", 302, headers={"Location": "ftp://example.org/file"}))
    err = fails(lambda: fetcher.fetch(server.url("/f")))
    assert err.error_type == errors.HTTP_ERROR and "unusable URL" in err.message


# -- network failures and bad URLs ---------------------------------------------------------

def test_connection_refused(fetcher):
    from tests.support.ports import refusing_socket

    with refusing_socket() as s:
        port = s.getsockname()[1]
        err = fails(lambda: fetcher.fetch(f"http://127.0.0.1:{port}/x"))
    assert err.error_type == errors.NETWORK
    assert err.message == f"connection refused by 127.0.0.1:{port}"


def test_unresolvable_host(fetcher):
    err = fails(lambda: fetcher.fetch("http://no-such-host.invalid/page"))
    assert err.error_type == errors.NETWORK
    assert err.message.startswith("DNS lookup failed for host no-such-host.invalid")


def test_connection_closed_mid_response(server, fetcher):
    def cut(h):
        h.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial")
        h.wfile.flush()
        h.close_connection = True

    server.route("/cut", cut)
    err = fails(lambda: fetcher.fetch(server.url("/cut")))
    assert err.error_type == errors.NETWORK and "127.0.0.1" in err.message


@pytest.mark.parametrize("url", ["ftp://example.org/x", "not a url", "http://", "http://[::1", "", "http://h:99999/"])
def test_invalid_urls(fetcher, url):
    err = fails(lambda: fetcher.fetch(url))
    assert err.error_type == errors.HTTP_ERROR and "invalid URL" in err.message


def test_unsendable_headers_and_hosts_are_clear_errors(server, fetcher):
    server.route("/p", page(GOOD))
    err = fails(lambda: fetcher.fetch(server.url("/p"), headers={"X-Name": "José"}))
    assert err.error_type == errors.HTTP_ERROR and "ASCII" in err.message and "José" not in err.message
    err = fails(lambda: fetcher.fetch(server.url("/p"), cookies={"sid": "ü-secret"}))
    assert err.error_type == errors.HTTP_ERROR and "secret" not in err.message
    err = fails(lambda: fetcher.fetch("http://" + "a" * 300 + ".com/"))
    assert err.error_type == errors.HTTP_ERROR and err.message.startswith("invalid URL")
    assert server.seen("/p") == []


def test_secrets_never_reach_messages(server, fetcher):
    server.route("/p", page("nope", 403))
    err = fails(lambda: fetcher.fetch(f"http://bob:hunter2@127.0.0.1:{server.port}/p?api_key=k3y&q=shoes"))
    assert "hunter2" not in err.message and "k3y" not in err.message
    assert "q=shoes" in err.message and "api_key=***" in err.message
    from tests.support.ports import refusing_socket

    with refusing_socket() as s:
        port = s.getsockname()[1]
        err = fails(lambda: fetcher.fetch(f"http://bob:hunter2@127.0.0.1:{port}/?token=abc"))
    assert "hunter2" not in err.message and "abc" not in err.message


def test_mask_url():
    assert mask_url("https://u:p@h.com/a?access_token=1&x=2&Signature=zz#f") == \
        "https://***:***@h.com/a?access_token=***&x=2&Signature=***#f"
    assert mask_url("http://h/?sessionid=9&page=2&password=pw&auth=a") == \
        "http://h/?sessionid=***&page=2&password=***&auth=***"
    assert mask_url("http://h/x?PHPSESSID=abc123&page=2&sessid=zz&q=shoes&author=ann") == \
        "http://h/x?PHPSESSID=***&page=2&sessid=***&q=shoes&author=ann"
    assert mask_url("http://h/plain") == "http://h/plain"
    assert mask_url("http://h/a\nFAKE LOG LINE") == "http://h/a%0AFAKE%20LOG%20LINE"
    assert mask_url(None) == "<not a URL>"


# -- get_text (robots.txt, sitemaps) ---------------------------------------------------------

def test_get_text_returns_any_status_and_truncates(server, fetcher):
    server.route("/robots.txt", page("User-agent: *\nDisallow: /private\n" * 1000, content_type="text/plain"))
    status, text = fetcher.get_text(server.url("/robots.txt"), limit=100)
    assert status == 200 and len(text) == 100
    assert fetcher.get_text(server.url("/missing"))[0] == 404
    from tests.support.ports import refusing_socket

    with refusing_socket() as s, pytest.raises(FetchError) as info:
        fetcher.get_text(f"http://127.0.0.1:{s.getsockname()[1]}/robots.txt")
    assert info.value.error_type == errors.NETWORK


# -- from fetch to validation ---------------------------------------------------------------

LISTING_BP = from_dict({"items": "tr.player", "fields": {"name": {"css": "td.name"},
                                                          "score": {"css": "td.score", "type": "int"}}})


def listing(n: int) -> str:
    rows = "".join(f'<tr class="player"><td class="name">P{i}</td><td class="score">{i}</td></tr>' for i in range(n))
    return f"<html><body><table>{rows}</table>{'<p>Filler text about the league.</p>' * 40}</body></html>"


def test_bot_challenge_page_validates_as_blocked(server, fetcher):
    challenge = ('<html><head><title>Just a moment...</title></head><body><div class="main-wrapper">'
                 '<h1>example.com</h1><p>Verifying you are human. This may take a few seconds.</p></div>'
                 '<script>window._cf_chl_opt={cvId: "3"};</script></body></html>')
    server.route("/list", sequence(page(listing(20)), page(challenge)))
    good = fetcher.fetch(server.url("/list"))
    assert validate(extract(good.text, LISTING_BP), LISTING_BP, html=good.text).passed
    res = fetcher.fetch(server.url("/list"))
    result = validate(extract(res.text, LISTING_BP), LISTING_BP, recent_counts=[20], html=res.text,
                      status=res.status, headers=res.headers)
    assert result.error_type == errors.BLOCKED and not result.passed
    assert "Cloudflare" in result.errors[0]


def test_items_page_that_suddenly_has_zero_items(server, fetcher):
    server.route("/list", sequence(page(listing(20)), page(listing(0))))
    first = fetcher.fetch(server.url("/list"))
    r1 = validate(extract(first.text, LISTING_BP), LISTING_BP, recent_counts=[20, 21], html=first.text)
    assert r1.passed and r1.item_count == 20
    second = fetcher.fetch(server.url("/list"))
    r2 = validate(extract(second.text, LISTING_BP), LISTING_BP, recent_counts=[20, 21, 20], html=second.text)
    assert r2.error_type == errors.PARSE_ERROR and r2.item_count == 0 and r2.critical


def test_cloudflare_403_challenge_is_blocked_not_http_error(server, fetcher):
    challenge = ('<html><head><title>Just a moment...</title></head><body><p>Verifying you are human.</p>'
                 '<script>window._cf_chl_opt={cvId: "3"};</script></body></html>')
    server.route("/p", page(challenge, 403, headers={"cf-mitigated": "challenge", "Server": "cloudflare"}))
    err = fails(lambda: fetcher.fetch(server.url("/p")))
    assert (err.error_type, err.status) == (errors.BLOCKED, 403) and "Cloudflare" in err.message


def test_plain_error_pages_stay_http_errors(server, fetcher):
    server.route("/f", page("<html><head><title>403 Forbidden</title></head><body><h1>Forbidden</h1></body></html>",
                            403))
    server.route("/db", page("<html><body>Access denied for user 'app'@'localhost'</body></html>", 500))
    assert fails(lambda: fetcher.fetch(server.url("/f"))).error_type == errors.HTTP_ERROR
    assert fails(lambda: fetcher.fetch(server.url("/db"))).error_type == errors.HTTP_ERROR


def test_large_error_page_is_read_only_in_part(server):
    big = types.SimpleNamespace(sent=0, closed_early=False, done=threading.Event())

    def error_stream(h):
        h.send_response(403)
        h.send_header("Content-Type", "text/html")
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        try:
            h.wfile.write(b"<html><body>")
            for _ in range(800):
                h.wfile.write(b"x" * 65536)
                big.sent += 65536
        except OSError:
            big.closed_early = True
        finally:
            big.done.set()

    server.route("/e", error_stream)
    with Fetcher(FetchConfig(max_bytes=40_000_000)) as f:
        err = fails(lambda: f.fetch(server.url("/e")))
    assert (err.error_type, err.status) == (errors.HTTP_ERROR, 403)
    assert big.done.wait(10) and big.closed_early and big.sent < 20_000_000


def test_fetchers_started_together_share_one_tls_context(monkeypatch):
    """Scrapers (or a worker's threads) build their Fetchers at the same moment: the CA bundle
    is loaded once for all of them, not once each (each load costs ~20 ms and ~1 MB)."""
    import httpx

    from healerd.adapters import fetch as fetch_mod

    built = []
    real = httpx.create_ssl_context

    def slow_build(*a, **kw):   # the real context, built slowly enough that the threads overlap
        built.append(1)
        time.sleep(0.05)
        return real(*a, **kw)

    monkeypatch.setattr(fetch_mod, "_tls", None)
    monkeypatch.setattr(httpx, "create_ssl_context", slow_build)
    start = threading.Barrier(8)
    fetchers: list[Fetcher] = []

    def build():
        start.wait()
        fetchers.append(Fetcher())

    threads = [threading.Thread(target=build) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert len(fetchers) == 8
        assert len(built) == 1
        assert fetch_mod.tls_context() is fetch_mod.tls_context()
    finally:
        for f in fetchers:
            f.close()


def test_the_webhook_and_healer_clients_reuse_the_fetchers_tls_context(monkeypatch):
    """An alert webhook's client and each external heal attempt's client verify TLS with the
    context the Fetchers share: the CA bundle is loaded once per process, not once per client
    (each load costs ~20 ms and ~1 MB, and the Doctor opens a client per heal attempt)."""
    import ssl

    from healerd.actors.alert_delivery import WebhookTarget
    from healerd.adapters import fetch as fetch_mod
    from healerd.adapters.external import CodeHealerClient, HealerConfig
    from healerd.adapters.openai_backend import OpenAIHealerClient

    loads = []
    real = ssl.SSLContext.load_verify_locations

    def counted(self, *a, **kw):
        loads.append(1)
        return real(self, *a, **kw)

    monkeypatch.setattr(fetch_mod, "_tls", None)
    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    fetcher = Fetcher()
    clients = [CodeHealerClient(HealerConfig(url="https://healer.example/heal")),
               OpenAIHealerClient(HealerConfig(url="https://llm.example/v1", kind="openai", model="m"))]
    hook = WebhookTarget("https://hooks.example/alerts", fetch_mod.FetchConfig())
    try:
        assert len(loads) == 1
    finally:
        hook.close()
        for c in clients:
            c.close()
        fetcher.close()
