"""The one wall-clock deadline of a fetch, obeyed by every raw socket operation.

A fetch (every redirect hop included) has one total deadline (timeout x DEADLINE_FACTOR,
healerd/adapters/fetch.py). The network backend put under httpx's connection pools
(`_bind_deadlines`) bounds each connect, read, write and TLS handshake by the time left, on
new and reused keep-alive connections alike, so a trickling server (a few bytes every half
second) costs a fetch its deadline and nothing more.
"""

from __future__ import annotations

import contextvars
import time

import httpcore
import httpx


class _Deadline:
    """The total wall-clock deadline of one fetch (every redirect hop included)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.started = time.monotonic()
        self.expires = self.started + seconds
        self.hit = False

    def remaining(self) -> float:
        return self.expires - time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def expired(self) -> bool:
        if not self.hit and time.monotonic() >= self.expires:
            self.hit = True
        return self.hit

    def bound(self, timeout: float | None) -> float:
        """`timeout` cut to the time left; raises httpcore's timeout once nothing is left."""
        left = self.remaining()
        if left <= 0:
            self.hit = True
            raise httpcore.ReadTimeout("total deadline passed")
        return left if timeout is None else min(timeout, left)


# The deadline of the fetch running on this thread (a sync client reads on the caller's thread).
_CURRENT: contextvars.ContextVar[_Deadline | None] = contextvars.ContextVar("healerd_fetch_deadline", default=None)


def _bound(timeout: float | None) -> float | None:
    deadline = _CURRENT.get()
    return timeout if deadline is None else deadline.bound(timeout)


class _DeadlineStream(httpcore.NetworkStream):
    """A network stream whose every read, write and TLS handshake waits at most the time left
    before the current fetch's deadline: kept-alive connections obey it as new ones do."""

    def __init__(self, inner: httpcore.NetworkStream):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bound(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bound(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, _bound(timeout)))

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self):
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return _DeadlineStream(self._inner.connect_tcp(host, port, _bound(timeout), local_address, socket_options))

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return _DeadlineStream(self._inner.connect_unix_socket(path, _bound(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _bind_deadlines(client: httpx.Client) -> httpx.Client:
    """Give every transport of `client` (the direct one and any proxy from the environment)
    the deadline-bound network backend. httpx 0.28 builds its httpcore pools without a
    `network_backend` argument, so the pools' backend is replaced before any connection exists."""
    transports = [client._transport, *(t for t in client._mounts.values() if t is not None)]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        if pool is None or not hasattr(pool, "_network_backend"):
            raise RuntimeError("this httpx/httpcore version keeps its network backend elsewhere; healerd "
                               "cannot bound fetches by their deadline")
        pool._network_backend = _DeadlineBackend()
    return client
