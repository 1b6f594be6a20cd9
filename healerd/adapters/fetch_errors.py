"""What a failed fetch says: `FetchError`, an error class from `healerd.core.errors` and one line.

Transport failures (httpx's and the OS's: timeouts, DNS, TLS, refused or reset connections)
are sorted into error classes by `classify_transport_error`, naming the host and port; in
every line the URL's credentials and secret-looking query values are masked (`mask_url`).
"""

from __future__ import annotations

import email.utils
import errno
import socket
import ssl
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from urllib.parse import urlsplit

import httpx

from healerd.adapters.fetch_deadline import _Deadline
from healerd.core import errors
from healerd.core.errors import HealerdError
from healerd.core.sanitize import mask_url


class FetchError(HealerdError):
    """A fetch that failed; `error_type` is a healerd.core.errors constant."""

    def __init__(self, error_type: str, message: str, *, url: str, status: int | None = None,
                 retry_after: float | None = None):
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.url = url

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"FetchError({self.error_type}, {self.message!r})"


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After value (delta-seconds or an HTTP-date); None if unusable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    now_dt = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    return max(0.0, (when - now_dt).total_seconds())


def _host_port(url: str) -> str:
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return f"{parts.hostname}:{port}"
    except ValueError:
        return "?"


def _host(url: str) -> str:
    try:
        return urlsplit(url).hostname or "?"
    except ValueError:
        return "?"


def _causes(exc: BaseException | None) -> Iterator[BaseException]:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def classify_transport_error(exc: Exception, url: str) -> tuple[str, str]:
    """(error class, one-line message) for an httpx/transport exception."""
    where = _host_port(url)
    if isinstance(exc, httpx.ConnectTimeout):
        return errors.TIMEOUT, f"connect timeout: {where} did not accept a connection in time"
    if isinstance(exc, httpx.ReadTimeout):
        return errors.TIMEOUT, f"read timeout: {where} sent nothing for too long"
    if isinstance(exc, httpx.WriteTimeout):
        return errors.TIMEOUT, f"write timeout while sending the request to {where}"
    if isinstance(exc, httpx.PoolTimeout):
        return errors.TIMEOUT, "timed out waiting for a free connection"
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL, httpx.LocalProtocolError)):
        return errors.HTTP_ERROR, f"invalid URL or request: {mask_url(url)} ({type(exc).__name__})"
    if isinstance(exc, httpx.DecodingError):
        return errors.HTTP_ERROR, f"cannot decode the response body from {where} (bad Content-Encoding)"
    for cause in _causes(exc):
        if isinstance(cause, socket.gaierror):
            return errors.NETWORK, f"DNS lookup failed for host {_host(url)} ({cause.strerror or cause})"
        if isinstance(cause, ssl.SSLCertVerificationError):
            return errors.NETWORK, f"TLS certificate of {where} not accepted: {cause.verify_message or cause.reason}"
        if isinstance(cause, ssl.SSLError):
            return errors.NETWORK, f"TLS handshake with {where} failed ({cause.reason or type(cause).__name__})"
        if isinstance(cause, ConnectionRefusedError):
            return errors.NETWORK, f"connection refused by {where}"
        if isinstance(cause, ConnectionResetError):
            return errors.NETWORK, f"connection reset by {where}"
        if isinstance(cause, OSError) and cause.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
            return errors.NETWORK, f"{where} is unreachable ({cause.strerror})"
    text = str(exc).lower()
    if "name or service not known" in text or "nodename nor servname" in text or "name resolution" in text:
        return errors.NETWORK, f"DNS lookup failed for host {_host(url)}"
    if "connection refused" in text:
        return errors.NETWORK, f"connection refused by {where}"
    if isinstance(exc, httpx.RemoteProtocolError):
        return errors.NETWORK, f"{where} closed the connection or sent a malformed response"
    if isinstance(exc, httpx.ConnectError):
        return errors.NETWORK, f"cannot connect to {where} ({type(exc).__name__})"
    if isinstance(exc, httpx.ReadError):
        return errors.NETWORK, f"connection to {where} broke while reading"
    if isinstance(exc, httpx.WriteError):
        return errors.NETWORK, f"connection to {where} broke while sending the request"
    return errors.NETWORK, f"network error talking to {where} ({type(exc).__name__})"


def _deadline_error(deadline: _Deadline, current: str, url: str, status: int | None) -> FetchError:
    return FetchError(errors.TIMEOUT, f"no complete response from {_host_port(current)} after "
                      f"{deadline.elapsed():.1f}s (total deadline {deadline.seconds:g}s)", url=url, status=status)


# What sending a request or reading its answer may raise besides FetchError: httpx's errors,
# headers or a host name httpx cannot encode, and the OS's errors outside httpx's mapping.
REQUEST_FAILURES = (httpx.HTTPError, httpx.InvalidURL, UnicodeError, ValueError, TypeError, OSError)


def request_failure(exc: Exception, deadline: _Deadline, current: str, url: str) -> FetchError:
    """The FetchError for `exc` (one of REQUEST_FAILURES), raised while sending a request to
    `current` or reading its answer, in a request that began at `url` (`current` is another URL
    after a redirect): the total deadline when it is what ended the request, else one line
    naming what failed. The one translation the GET (a page, robots.txt) and the POST (a feed's
    webhook) share."""
    if isinstance(exc, (httpx.HTTPError, httpx.InvalidURL)):
        if deadline.expired():
            return _deadline_error(deadline, current, url, None)
        kind, message = classify_transport_error(exc, current)
        if kind == errors.TIMEOUT:   # how long it waited: a person compares it with [fetch] timeout
            message += f" (gave up after {deadline.elapsed():.1f}s)"
        return FetchError(kind, message, url=url)
    if isinstance(exc, (UnicodeEncodeError, TypeError)):   # headers/cookies httpx cannot send
        return FetchError(errors.HTTP_ERROR, f"cannot build the request to {mask_url(current)}: header and "
                          f"cookie names and values must be ASCII text ({type(exc).__name__})", url=url)
    if isinstance(exc, (UnicodeError, ValueError)):        # e.g. a host name IDNA rejects
        return FetchError(errors.HTTP_ERROR, f"invalid URL: {mask_url(current)} ({type(exc).__name__}: "
                          f"{str(exc)[:80]})", url=url)
    kind, message = classify_transport_error(exc, current)   # an OSError outside httpx's mapping (rare)
    return FetchError(kind, message, url=url)


def _reason(status: int) -> str:
    try:
        from http import HTTPStatus

        return HTTPStatus(status).phrase
    except ValueError:
        return ""
