"""robots.txt: may this URL be fetched, and how slowly?

One parsed robots.txt per scheme+host+port, cached for a TTL. The file is read with
a Fetcher's `get_text` and parsed by Protego (the RFC 9309 parser Scrapy uses: `*` and
`$` wildcards, longest match wins, Allow beats Disallow on a tie, fractional
Crawl-delay). What an answer means:
- 2xx: the rules as written;
- 401/403: everything is disallowed (standard practice);
- other 4xx (404, 410, ...): no rules, everything allowed;
- 429, 5xx, network errors, timeouts: allowed for now, asked again after a short
  `retry_ttl` instead of the full TTL.
Nothing here raises on a bad answer. Safe to share between threads: a host's file
is fetched by one thread while others asking for the same host wait for it.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from protego import Protego

from healerd.adapters.fetch import Fetcher, FetchError

log = logging.getLogger("healerd.robots")

DEFAULT_TTL = 3600.0
RETRY_TTL = 300.0
MAX_ROBOTS_BYTES = 512_000


@dataclass
class _Entry:
    parser: _Rules
    expires: float
    note: str          # how the file was obtained, for logs and `describe`


def robots_url(url: str) -> str | None:
    """The robots.txt URL governing `url`, or None for a non-http(s) URL."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except (ValueError, TypeError, AttributeError):
        return None
    if parts.scheme not in ("http", "https") or not host:
        return None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    return f"{parts.scheme}://{netloc}/robots.txt"


class _Rules:
    """One robots.txt: Protego's answers, or everything allowed / disallowed."""

    def __init__(self, text: str | None = None, allow_all: bool = False, disallow_all: bool = False):
        self.allow_all, self.disallow_all = allow_all, disallow_all
        self.rules = Protego.parse(text) if text is not None and not (allow_all or disallow_all) else None

    def can_fetch(self, user_agent: str, url: str) -> bool:
        if self.disallow_all:
            return False
        if self.rules is None:
            return True
        return self.rules.can_fetch(url, user_agent)

    def crawl_delay(self, user_agent: str) -> float | None:
        return None if self.rules is None else self.rules.crawl_delay(user_agent)


def _parser(text: str | None = None, allow_all: bool = False, disallow_all: bool = False) -> _Rules:
    return _Rules(text, allow_all=allow_all, disallow_all=disallow_all)


class RobotsPolicy:
    """Cached robots.txt answers per scheme+host+port."""

    def __init__(self, fetcher: Fetcher, ttl: float = DEFAULT_TTL, retry_ttl: float = RETRY_TTL,
                 clock=time.monotonic):
        self.fetcher = fetcher
        self.ttl = float(ttl)
        self.retry_ttl = min(float(retry_ttl), self.ttl)
        self.clock = clock
        self._cache: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._host_locks: dict[str, threading.Lock] = {}

    # -- public ------------------------------------------------------------------
    def allowed(self, url: str, user_agent: str) -> bool:
        """May `user_agent` fetch `url`? Non-http(s) URLs and unreadable files answer True."""
        entry = self._entry(url)
        if entry is None:
            return True
        try:
            return entry.parser.can_fetch(user_agent, url)
        except Exception:  # a URL robotparser cannot digest: do not block on it
            return True

    def crawl_delay(self, url: str, user_agent: str) -> float | None:
        """The Crawl-delay (seconds) the site asks of `user_agent`, fetching robots.txt if needed."""
        return self._delay(self._entry(url), user_agent)

    def cached_crawl_delay(self, url: str, user_agent: str) -> float | None:
        """Like crawl_delay but never fetches: None when the host's file is not cached yet."""
        key = robots_url(url)
        if key is None:
            return None
        with self._lock:
            entry = self._cache.get(key)
        return self._delay(entry, user_agent)

    def describe(self, url: str) -> str | None:
        """How the cached robots.txt for `url` was obtained, or None if not cached."""
        key = robots_url(url)
        with self._lock:
            entry = self._cache.get(key) if key else None
        return entry.note if entry else None

    def forget(self, url: str | None = None) -> None:
        """Drop the cached file for `url`'s host, or every cached file."""
        with self._lock:
            if url is None:
                self._cache.clear()
            else:
                self._cache.pop(robots_url(url) or "", None)

    # -- internals ---------------------------------------------------------------
    @staticmethod
    def _delay(entry: _Entry | None, user_agent: str) -> float | None:
        if entry is None:
            return None
        try:
            delay = entry.parser.crawl_delay(user_agent)
        except Exception:
            return None
        if delay is None:
            return None
        try:
            value = float(delay)
        except (TypeError, ValueError):
            return None
        return value if value >= 0 else None

    def _entry(self, url: str) -> _Entry | None:
        key = robots_url(url)
        if key is None:
            return None
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None and entry.expires > self.clock():
                return entry
            host_lock = self._host_locks.setdefault(key, threading.Lock())
        with host_lock:
            with self._lock:   # another thread may have fetched it while this one waited
                entry = self._cache.get(key)
                if entry is not None and entry.expires > self.clock():
                    return entry
            entry = self._load(key)
            with self._lock:
                self._cache[key] = entry
            return entry

    def _load(self, robots: str) -> _Entry:
        now = self.clock()
        try:
            status, text = self.fetcher.get_text(robots, limit=MAX_ROBOTS_BYTES)
        except FetchError as exc:
            log.info("robots.txt %s unreadable (%s); allowing for now", robots, exc.message)
            return _Entry(_parser(allow_all=True), now + self.retry_ttl, f"unreachable: {exc.message}")
        except Exception as exc:  # never let robots.txt stop a scrape
            log.warning("robots.txt %s: unexpected %s; allowing for now", robots, type(exc).__name__)
            return _Entry(_parser(allow_all=True), now + self.retry_ttl, f"error: {type(exc).__name__}")
        if 200 <= status < 300:
            try:
                return _Entry(_parser(text), now + self.ttl, f"HTTP {status}: rules")
            except Exception as exc:
                log.info("robots.txt %s does not parse (%s); allowing", robots, exc)
                return _Entry(_parser(allow_all=True), now + self.ttl, f"HTTP {status}: unparsable, allow all")
        if status in (401, 403):
            return _Entry(_parser(disallow_all=True), now + self.ttl, f"HTTP {status}: disallow all")
        if status == 429 or status >= 500:
            return _Entry(_parser(allow_all=True), now + self.retry_ttl, f"HTTP {status}: allow for now")
        return _Entry(_parser(allow_all=True), now + self.ttl, f"HTTP {status}: no rules, allow all")
