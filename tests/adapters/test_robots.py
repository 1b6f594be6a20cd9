"""RobotsPolicy against robots.txt files served by a real local HTTP server."""

from __future__ import annotations

import threading

import pytest

from healerd.adapters.fetch import FetchConfig
from healerd.adapters.robots import RobotsPolicy, robots_url
from tests.support.httpfixture import LocalServer, page, sequence

UA = FetchConfig().user_agent
ROBOTS = """\
User-agent: *
Disallow: /private/
Crawl-delay: 2

User-agent: healerd
Disallow: /no-healerd/
Allow: /private/open
Crawl-delay: 1.5

User-agent: otherbot
Disallow: /
"""


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def robots_hits(server) -> int:
    return len(server.seen("/robots.txt"))


def test_disallowed_and_allowed_paths(server, fetcher):
    server.route("/robots.txt", page(ROBOTS, content_type="text/plain"))
    rp = RobotsPolicy(fetcher)
    assert rp.allowed(server.url("/public/page"), UA)
    assert not rp.allowed(server.url("/no-healerd/x"), UA)
    # the healerd group applies to us, not the * group
    assert rp.allowed(server.url("/private/open"), UA)
    assert rp.allowed(server.url("/private/other"), UA)
    # other agents get their own groups
    assert not rp.allowed(server.url("/private/other"), "SomeCrawler/1.0")
    assert not rp.allowed(server.url("/public/page"), "otherbot/3")
    assert robots_hits(server) == 1   # cached per host


def test_crawl_delay(server, fetcher):
    server.route("/robots.txt", page(ROBOTS, content_type="text/plain"))
    rp = RobotsPolicy(fetcher)
    assert rp.cached_crawl_delay(server.url("/x"), UA) is None   # never fetches
    assert robots_hits(server) == 0
    assert rp.crawl_delay(server.url("/x"), UA) == 1.5       # fractional, as written
    assert rp.crawl_delay(server.url("/x"), "SomeCrawler") == 2.0
    assert rp.cached_crawl_delay(server.url("/y"), UA) == 1.5
    assert rp.crawl_delay(server.url("/x"), "otherbot") is None
    assert robots_hits(server) == 1


def test_404_robots_allows_everything(server, fetcher):
    rp = RobotsPolicy(fetcher)          # no /robots.txt route: the server answers 404
    assert rp.allowed(server.url("/anything"), UA)
    assert rp.crawl_delay(server.url("/anything"), UA) is None
    assert rp.describe(server.url("/")).startswith("HTTP 404")


@pytest.mark.parametrize("status", [401, 403])
def test_401_403_robots_disallow_everything(server, fetcher, status):
    server.route("/robots.txt", page("no", status))
    rp = RobotsPolicy(fetcher)
    assert not rp.allowed(server.url("/anything"), UA)


def test_410_allows(server, fetcher):
    server.route("/robots.txt", page("gone", 410))
    assert RobotsPolicy(fetcher).allowed(server.url("/a"), UA)


def test_5xx_allows_now_and_retries_sooner(server, fetcher):
    clock = Clock()
    server.route("/robots.txt", sequence(page("down", 503), page("User-agent: *\nDisallow: /\n")))
    rp = RobotsPolicy(fetcher, ttl=3600, retry_ttl=60, clock=clock)
    assert rp.allowed(server.url("/a"), UA)
    clock.now += 30
    assert rp.allowed(server.url("/a"), UA) and robots_hits(server) == 1
    clock.now += 31
    assert not rp.allowed(server.url("/a"), UA) and robots_hits(server) == 2


def test_ttl_expiry_refetches(server, fetcher):
    clock = Clock()
    server.route("/robots.txt", sequence(page("User-agent: *\nDisallow: /a\n"), page("User-agent: *\nDisallow:\n")))
    rp = RobotsPolicy(fetcher, ttl=100, clock=clock)
    assert not rp.allowed(server.url("/a"), UA)
    clock.now += 99
    assert not rp.allowed(server.url("/a"), UA)
    clock.now += 2
    assert rp.allowed(server.url("/a"), UA)
    assert robots_hits(server) == 2


def test_network_error_allows_and_never_raises(fetcher):
    from tests.support.ports import refusing_socket

    s = refusing_socket()
    port = s.getsockname()[1]
    rp = RobotsPolicy(fetcher)
    assert rp.allowed(f"http://127.0.0.1:{port}/x", UA)
    assert rp.crawl_delay(f"http://127.0.0.1:{port}/x", UA) is None
    assert "connection refused" in rp.describe(f"http://127.0.0.1:{port}/")
    s.close()
    assert rp.allowed("http://robots-test.invalid/x", UA)


def test_garbage_robots_file_allows(server, fetcher):
    server.route("/robots.txt", page(b"\x00\xff\xfe<html>not robots</html>\nDisallow /x", content_type="text/plain"))
    assert RobotsPolicy(fetcher).allowed(server.url("/x"), UA)


def test_non_http_urls_are_allowed(fetcher):
    rp = RobotsPolicy(fetcher)
    assert rp.allowed("ftp://example.org/x", UA)
    assert rp.allowed("not a url", UA)
    assert robots_url("http://u:p@Example.org:8080/a?b") == "http://example.org:8080/robots.txt"
    assert robots_url("https://[::1]/x") == "https://[::1]/robots.txt"


def test_threads_share_one_fetch(server, fetcher):
    gate = threading.Event()

    def slow_robots(h):
        gate.wait(2)
        page("User-agent: *\nDisallow: /p\n", content_type="text/plain")(h)

    server.route("/robots.txt", slow_robots)
    rp = RobotsPolicy(fetcher)
    results = []
    threads = [threading.Thread(target=lambda: results.append(rp.allowed(server.url("/p"), UA))) for _ in range(8)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(10)
    assert results == [False] * 8
    assert robots_hits(server) == 1


def test_separate_cache_per_port(server, fetcher):
    other = LocalServer()
    try:
        server.route("/robots.txt", page("User-agent: *\nDisallow: /\n"))
        rp = RobotsPolicy(fetcher)
        assert not rp.allowed(server.url("/a"), UA)
        assert rp.allowed(other.url("/a"), UA)
    finally:
        other.stop()


# -- RFC 9309 cases (wildcards, end anchor, longest match, Allow on a tie, groups) ------------------

RFC_CASES = [
    ("User-agent: *\nDisallow: /*.pdf$\n", "/a/file.pdf", False),
    ("User-agent: *\nDisallow: /*.pdf$\n", "/a/file.pdf?x=1", True),      # $ anchors the end
    ("User-agent: *\nDisallow: /*.pdf$\n", "/a/file.pdfx", True),
    ("User-agent: *\nDisallow: /private*/data\n", "/private-2/data/x", False),
    ("User-agent: *\nDisallow: /private*/data\n", "/private-2/other", True),
    ("User-agent: *\nDisallow: /shop\nAllow: /shop/open\n", "/shop/open/1", True),   # the longest match wins
    ("User-agent: *\nAllow: /shop/open\nDisallow: /shop\n", "/shop/open/1", True),   # ... whatever the order
    ("User-agent: *\nDisallow: /shop/open\nAllow: /shop\n", "/shop/open/1", False),
    ("User-agent: *\nDisallow: /page\nAllow: /page\n", "/page", True),               # a tie: Allow wins
    ("User-agent: *\nDisallow:\n", "/anything", True),                               # empty Disallow
    ("User-agent: *\nDisallow: /\nUser-agent: healerd\nAllow: /\n", "/x", True),     # the agent's own group
    ("user-agent: *\ndisallow: /Private\n", "/private", True),                      # paths are case-sensitive
    ("User-agent: *\nDisallow: /a%3cd.html\n", "/a%3Cd.html", False),               # percent-encoding is normalised
]


@pytest.mark.parametrize("robots,path,allowed", RFC_CASES)
def test_rfc9309_rules(server, fetcher, robots, path, allowed):
    server.route("/robots.txt", page(robots, content_type="text/plain"))
    rp = RobotsPolicy(fetcher)
    assert rp.allowed(server.url(path), "healerd/1.0 (+https://example.org)") is allowed, (robots, path)


def test_a_429_on_robots_txt_allows_now_and_asks_again_soon(server, fetcher):
    # Rate-limited on robots.txt says nothing of the rules: the answer is kept only retry_ttl, not the TTL.
    clock = Clock()
    server.route("/robots.txt", sequence(page("slow down", 429), page("User-agent: *\nDisallow: /\n")))
    rp = RobotsPolicy(fetcher, ttl=3600, retry_ttl=60, clock=clock)
    assert rp.allowed(server.url("/a"), UA) and robots_hits(server) == 1
    clock.now += 61
    assert not rp.allowed(server.url("/a"), UA) and robots_hits(server) == 2
