"""Fetching one page over HTTP, politely and defensively.

One sync httpx client (HTTP/1.1) per Fetcher. A fetch:
- sends the configured User-Agent plus the blueprint's headers and cookies, and
  If-None-Match / If-Modified-Since when known; the headers and cookies go only to the
  first URL's origin (scheme, host and port): a redirect elsewhere, or from https down to
  http, drops them (`same_origin`);
- follows redirects itself, up to `max_redirects`, naming a loop as a loop and
  recording a permanent (301/308) redirect on the first hop;
- streams the body and stops reading, closing the connection, once `max_bytes`
  is passed; the cap counts *inflated* bytes (healerd/adapters/fetch_body.py); a
  Content-Length above the cap is refused before reading;
- has connect/read timeouts and one total wall-clock deadline (timeout x 3) that every
  raw socket operation obeys (healerd/adapters/fetch_deadline.py); the error states the
  real elapsed time;
- reads at most 256 KB of an error page, enough to tell a bot challenge or login
  wall (BLOCKED, e.g. Cloudflare's 403) from a plain HTTP error;
- decodes the body without ever raising (healerd/adapters/fetch_body.py).

Every failure is a FetchError carrying an error class from `healerd.core.errors` and a
one-line message in which the URL's credentials and secret-looking query values
are masked (healerd/adapters/fetch_errors.py).
"""

from __future__ import annotations

import http.cookiejar
import os
import ssl
import threading
import time
import zlib
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import httpx

from healerd import __version__
from healerd.adapters.fetch_body import _BoundedBody, decode_body
from healerd.adapters.fetch_deadline import _CURRENT, _bind_deadlines, _Deadline
from healerd.adapters.fetch_errors import (
    REQUEST_FAILURES,
    FetchError,
    _deadline_error,
    _host_port,
    _reason,
    parse_retry_after,
    request_failure,
)
from healerd.core import errors
from healerd.core.classify import detect_block
from healerd.core.errors import HealerdError
from healerd.core.netpolicy import same_origin  # the one origin rule: HTTP and browser fetches alike
from healerd.core.sanitize import mask_url

DEFAULT_USER_AGENT = f"healerd/{__version__} (+https://github.com/healerd/healerd)"
ACCEPT_ENCODING = "gzip, deflate"   # the encodings decoded here, within max_bytes
ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
REDIRECT_CODES = (301, 302, 303, 307, 308)
PERMANENT_CODES = (301, 308)
DEADLINE_FACTOR = 3.0
KEEPALIVE_CONNECTIONS = 16     # idle connections kept per client (one client per actor)
KEEPALIVE_EXPIRY_S = 5.0
ERROR_BODY_LIMIT = 262_144   # bytes of a 4xx/5xx page kept to recognise a bot wall
NOT_BLOCKS = (404, 410, 429)  # 4xx statuses whose body is never taken for a bot wall (nor 5xx but 503)


@dataclass(frozen=True)
class FetchConfig:
    timeout: float = 20.0            # read timeout, seconds
    connect_timeout: float = 10.0
    max_bytes: int = 10_000_000
    user_agent: str = DEFAULT_USER_AGENT
    max_redirects: int = 10


@dataclass
class FetchResult:
    url: str                  # final URL after redirects
    status: int               # 2xx, or 304
    headers: dict[str, str]   # lower-cased names
    body: bytes               # b"" for 304
    text: str                 # decoded text ("" for 304)
    encoding: str             # the charset used
    not_modified: bool        # 304 on a conditional request
    etag: str | None
    last_modified: str | None
    elapsed_ms: float
    permanent_redirect: str | None   # the target of a 301/308 on the first hop, if any


class _NoCookies(http.cookiejar.CookiePolicy):
    """The shared client keeps no cookies between fetches (they would leak between sources)."""

    netscape = True
    rfc2965 = False
    hide_cookie2 = True

    def set_ok(self, cookie, request):
        return False

    def return_ok(self, cookie, request):
        return False

    def domain_return_ok(self, domain, request):
        return False

    def path_return_ok(self, path, request):
        return False


@dataclass
class _Raw:
    url: str
    status: int
    headers: dict[str, str]
    body: bytes
    permanent_redirect: str | None
    elapsed_ms: float


_tls_lock = threading.Lock()
_tls: ssl.SSLContext | None = None


class TLSSetupError(HealerdError):
    """The CA certificates that verify HTTPS sites could not be loaded (a broken SSL_CERT_FILE
    or SSL_CERT_DIR, or no CA bundle): nothing can be fetched until that is fixed."""


def _tls_setup_error(exc: Exception) -> TLSSetupError:
    """The error for a CA bundle that would not load, naming the CA settings in force (the
    error itself does not name the file: "[Errno 2] No such file or directory")."""
    settings = [f"{k}={os.environ[k]}" for k in ("SSL_CERT_FILE", "SSL_CERT_DIR") if os.environ.get(k)]
    where = f"; check {' and '.join(settings)}" if settings else ""
    return TLSSetupError(f"cannot load the CA certificates that verify HTTPS sites ({exc}){where}")


def tls_context() -> ssl.SSLContext:
    """One certificate-verifying TLS context per process, shared by every Fetcher's client:
    each context loads the whole CA bundle (about 20 ms of CPU and 1 MB of memory), and a
    process has a client per Scraper or per worker thread. Those threads start together, so
    the first caller builds the context while the others wait for it (a plain cache would
    have each of them build its own: 4 worker threads spent 80 ms on their first pages)."""
    global _tls
    with _tls_lock:
        if _tls is None:
            try:
                _tls = httpx.create_ssl_context()
            except (OSError, ssl.SSLError) as exc:
                raise _tls_setup_error(exc) from exc
        return _tls


class Fetcher:
    """Fetches pages with one shared httpx client; thread-safe."""

    def __init__(self, config: FetchConfig | None = None, browser=None):
        self.config = config or FetchConfig()
        self.browser = browser   # a healerd.adapters.browser.BrowserPool for `fetch = "browser"` sources, or None
        timeout = httpx.Timeout(self.config.timeout, connect=self.config.connect_timeout)
        # Keep-alive: many sources share a host, and a new TCP connection per fetch costs
        # more CPU than parsing half the page. Every socket operation, on a new or a reused
        # connection, waits at most the time left before the fetch's deadline (_DeadlineBackend).
        # Cookies are never kept (see _NoCookies).
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=KEEPALIVE_CONNECTIONS,
                              keepalive_expiry=KEEPALIVE_EXPIRY_S)
        self.client = _bind_deadlines(httpx.Client(
            http1=True, http2=False, timeout=timeout, follow_redirects=False, limits=limits, verify=tls_context(),
            cookies=http.cookiejar.CookieJar(policy=_NoCookies()),
            headers={"User-Agent": self.config.user_agent, "Accept": ACCEPT, "Accept-Encoding": ACCEPT_ENCODING},
        ))

    # -- public ------------------------------------------------------------------
    def fetch(self, url: str, *, headers: dict | None = None, cookies: dict | None = None,
              etag: str | None = None, last_modified: str | None = None, via: str = "http",
              wait_for: str | None = None) -> FetchResult:
        """GET `url`; a FetchResult for 2xx/304, else FetchError.

        `via="browser"` renders the page in the browser pool instead (no conditional request;
        `wait_for` is a CSS selector to wait for after load)."""
        if via == "browser":
            if self.browser is None:
                raise FetchError(errors.NETWORK, "this source needs a browser and none is set up here", url=url)
            return self.browser.fetch(url, headers=headers, cookies=cookies, wait_for=wait_for)
        extra = dict(headers or {})
        conditional = bool(etag or last_modified) or any(
            k.lower() in ("if-none-match", "if-modified-since") for k in extra)
        if etag:
            extra["If-None-Match"] = etag
        if last_modified:
            extra["If-Modified-Since"] = last_modified
        raw = self._get(url, extra, cookies, self.config.max_bytes, truncate=False)
        status, hdrs = raw.status, raw.headers
        where = mask_url(raw.url)
        if status == 304:
            if not conditional:
                raise FetchError(errors.HTTP_ERROR, f"HTTP 304 Not Modified from {where} on an unconditional request",
                                 url=url, status=status)
            return FetchResult(url=raw.url, status=304, headers=hdrs, body=b"", text="", encoding="",
                               not_modified=True, etag=hdrs.get("etag") or etag,
                               last_modified=hdrs.get("last-modified") or last_modified,
                               elapsed_ms=raw.elapsed_ms, permanent_redirect=raw.permanent_redirect)
        if 200 <= status < 300:
            text, codec = decode_body(raw.body, hdrs.get("content-type"))
            return FetchResult(url=raw.url, status=status, headers=hdrs, body=raw.body, text=text, encoding=codec,
                               not_modified=False, etag=hdrs.get("etag"), last_modified=hdrs.get("last-modified"),
                               elapsed_ms=raw.elapsed_ms, permanent_redirect=raw.permanent_redirect)
        reason = _reason(status)
        retry_after = parse_retry_after(hdrs.get("retry-after"))
        if status == 429:
            wait = f"; retry after {retry_after:.0f}s" if retry_after is not None else ""
            raise FetchError(errors.RATE_LIMIT, f"HTTP 429 Too Many Requests from {where}{wait}", url=url,
                             status=status, retry_after=retry_after)
        if 300 <= status < 400:
            raise FetchError(errors.HTTP_ERROR, f"HTTP {status} {reason} from {where} without a usable Location",
                             url=url, status=status)
        if (400 <= status < 500 and status not in NOT_BLOCKS) or status == 503:
            text, _ = decode_body(raw.body, hdrs.get("content-type"))
            blocked = detect_block(text, status, hdrs)
            if blocked:
                raise FetchError(errors.BLOCKED, f"HTTP {status} from {where}: {blocked}", url=url, status=status,
                                 retry_after=retry_after)
        raise FetchError(errors.HTTP_ERROR, f"HTTP {status} {reason} from {where}", url=url, status=status,
                         retry_after=retry_after)

    def get_text(self, url: str, limit: int = 512_000) -> tuple[int, str]:
        """(status, text) of a small resource (robots.txt, sitemaps), cut at `limit` bytes.

        Any HTTP status is returned; network errors and timeouts raise FetchError.
        """
        raw = self._get(url, {}, None, limit, truncate=True)
        text, _ = decode_body(raw.body, raw.headers.get("content-type"))
        return raw.status, text

    def post(self, url: str, body: bytes, *, headers: dict | None = None,
             content_type: str = "application/json", limit: int = 65_536) -> tuple[int, bytes]:
        """POST `body` to `url` under a fetch's bounds: one total deadline (timeout x 3) every socket
        operation obeys, at most `limit` bytes of the answer read (the connection is closed on the
        rest), the process's verifying TLS context. Redirects are never followed, so the body and
        `headers` (credentials) go to `url`'s origin only: a 3xx comes back as its status.
        Returns (status, the answer's first bytes); a network failure or the deadline raises FetchError."""
        _check_url(url, url)
        deadline = _Deadline(max(self.config.timeout, 0.001) * DEADLINE_FACTOR)
        token = _CURRENT.set(deadline)
        sent = {"Content-Type": content_type, "Accept": "*/*", "Accept-Encoding": "identity", **(headers or {})}
        try:
            with self.client.stream("POST", url, content=body, headers=sent) as resp:
                got: list[bytes] = []
                size = 0
                for raw in resp.iter_raw():
                    got.append(raw[:limit - size])
                    size += len(raw)
                    if size >= limit:
                        break    # leaving the `with` closes the unfinished answer and its connection
                    if deadline.expired():
                        raise _deadline_error(deadline, url, url, resp.status_code)
                return resp.status_code, b"".join(got)
        except FetchError:
            raise
        except REQUEST_FAILURES as exc:
            raise request_failure(exc, deadline, url, url) from None
        finally:
            _CURRENT.reset(token)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------
    def _get(self, url: str, headers: dict, cookies: dict | None, limit: int, truncate: bool) -> _Raw:
        started = time.monotonic()
        _check_url(url, url)
        deadline = _Deadline(max(self.config.timeout, 0.001) * DEADLINE_FACTOR)
        token = _CURRENT.set(deadline)
        chain = [url]
        permanent = None
        current = url
        try:
            while True:
                trusted = same_origin(url, current)
                req_headers = dict(headers) if trusted else {
                    k: v for k, v in headers.items() if k.lower() in ("if-none-match", "if-modified-since")}
                if cookies and trusted:
                    req_headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
                status, hdrs, body = self._one(current, req_headers, limit, truncate, deadline)
                location = hdrs.get("location")
                if status in REDIRECT_CODES and location:
                    target = urljoin(current, location.strip())
                    if len(chain) == 1 and status in PERMANENT_CODES:
                        permanent = target
                    _check_url(target, url, redirect_from=current)
                    if target in chain:
                        loop = " -> ".join(mask_url(u) for u in chain[chain.index(target):] + [target])
                        raise FetchError(errors.HTTP_ERROR, f"redirect loop: {loop}", url=url, status=status)
                    if len(chain) > self.config.max_redirects:
                        raise FetchError(errors.HTTP_ERROR, f"too many redirects (more than "
                                         f"{self.config.max_redirects}) starting at {mask_url(url)}",
                                         url=url, status=status)
                    if deadline.expired():
                        raise _deadline_error(deadline, current, url, status)
                    chain.append(target)
                    current = target
                    continue
                return _Raw(current, status, hdrs, body, permanent, (time.monotonic() - started) * 1000.0)
        except FetchError as exc:
            exc.url = url
            raise
        except REQUEST_FAILURES as exc:
            raise request_failure(exc, deadline, current, url) from None
        finally:
            _CURRENT.reset(token)

    def _one(self, url: str, headers: dict, limit: int, truncate: bool,
             deadline: _Deadline) -> tuple[int, dict[str, str], bytes]:
        """One request, no redirects: (status, lower-cased headers, body up to `limit` decoded bytes)."""
        with self.client.stream("GET", url, headers=headers) as resp:
            hdrs = {k.lower(): v for k, v in resp.headers.items()}
            status = resp.status_code
            if status in REDIRECT_CODES and hdrs.get("location"):
                return status, hdrs, b""
            if status == 304 or status == 204 or status < 200:
                return status, hdrs, b""
            if status >= 400 and not truncate:
                # An error page is read only far enough to tell a bot wall from a plain error.
                limit, truncate = min(limit, ERROR_BODY_LIMIT), True
            declared = hdrs.get("content-length", "")
            if not truncate and declared.isdigit() and int(declared) > limit:
                raise FetchError(errors.TOO_LARGE, f"response body larger than max_bytes ({limit}): "
                                 f"Content-Length {declared} from {mask_url(url)}", url=url, status=status)
            try:
                body = _BoundedBody(hdrs.get("content-encoding", ""), limit)
            except ValueError as exc:
                raise FetchError(errors.HTTP_ERROR, f"{exc} from {mask_url(url)}", url=url, status=status) from None
            # iter_raw yields what each socket read returned (no 64 KB buffering), so the deadline
            # is looked at after every read; each read itself waits at most the time left.
            for raw in resp.iter_raw():
                try:
                    body.feed(raw)
                except zlib.error:
                    raise FetchError(errors.HTTP_ERROR, f"cannot decode the response body from "
                                     f"{_host_port(url)} (bad Content-Encoding)", url=url, status=status) from None
                if body.over:
                    if truncate:
                        break
                    # Leaving the `with` closes the unfinished response, and with it the connection.
                    raise FetchError(errors.TOO_LARGE, f"response body larger than max_bytes ({limit}"
                                     f"{' once decompressed' if body.coding else ''}) from {mask_url(url)}; "
                                     f"stopped reading", url=url, status=status)
                if deadline.expired():
                    raise _deadline_error(deadline, url, url, status)
            return status, hdrs, body.body()


def _check_url(url: str, original: str, redirect_from: str | None = None) -> None:
    try:
        parts = urlsplit(url) if isinstance(url, str) else None
        ok = parts is not None and parts.scheme in ("http", "https") and bool(parts.hostname)
        if ok:
            _ = parts.port  # raises ValueError on a bad port
    except ValueError:
        ok = False
    if not ok:
        shown = mask_url(url) if isinstance(url, str) else repr(type(url).__name__)
        if redirect_from is not None:
            msg = f"redirect from {mask_url(redirect_from)} to an unusable URL: {shown}"
        else:
            msg = f"invalid URL (need http(s)://host/...): {shown}"
        raise FetchError(errors.HTTP_ERROR, msg, url=original if isinstance(original, str) else "")
