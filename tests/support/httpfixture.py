"""A real HTTP server on 127.0.0.1 whose routes are Python functions (for fetch/robots tests).

`server.route(path, fn)` makes `fn(handler)` answer GET `path`; every request is
recorded in `server.requests` as (path, headers dict). Helpers build the usual
answers.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


class QuietHTTPServer(ThreadingHTTPServer):
    """A test server that lets a client go away mid-answer without a traceback on stderr (the daemon
    cuts a page at its size cap or deadline on purpose; a server thread still writing when the test
    session ends would print one after pytest's summary). Any other error is still printed."""

    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        import sys

        if isinstance(sys.exc_info()[1], GONE):
            return
        super().handle_error(request, client_address)


class LocalServer:
    def __init__(self):
        self.routes: dict[str, object] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                path = self.path.split("?", 1)[0]
                with srv.lock:
                    srv.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                    fn = srv.routes.get(path)
                if fn is None:
                    send(self, 404, b"<html><body>not found</body></html>")
                    return
                fn(self)

            def log_message(self, *args):
                pass

        self.server = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def route(self, path: str, fn) -> None:
        with self.lock:
            self.routes[path] = fn

    def seen(self, path: str) -> list[dict[str, str]]:
        with self.lock:
            return [h for p, h in self.requests if p.split("?", 1)[0] == path]

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


def send(h: BaseHTTPRequestHandler, status: int, body: bytes = b"", headers: dict | None = None,
         content_type: str | None = "text/html; charset=utf-8") -> None:
    h.send_response(status)
    if content_type:
        h.send_header("Content-Type", content_type)
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    if body:
        h.wfile.write(body)


def page(body: bytes | str, status: int = 200, headers: dict | None = None,
         content_type: str | None = "text/html; charset=utf-8"):
    data = body.encode() if isinstance(body, str) else body
    return lambda h: send(h, status, data, headers, content_type)


def sequence(*handlers):
    """Answer the n-th request with the n-th handler (the last one repeats)."""
    state = {"n": 0}
    lock = threading.Lock()

    def fn(h):
        with lock:
            i = min(state["n"], len(handlers) - 1)
            state["n"] += 1
        handlers[i](h)

    return fn


class Streamer:
    """A large body written chunk by chunk from a generator, never built in memory.

    Records how many bytes went out and whether the client hung up early.
    """

    def __init__(self, total: int, chunk: int = 65536, content_length: bool = False, delay: float = 0.0,
                 stop: threading.Event | None = None):
        self.total = total
        self.chunk = chunk
        self.content_length = content_length
        self.delay = delay
        self.stop = stop
        self.sent = 0
        self.closed_early = False
        self.done = threading.Event()

    def _chunks(self):
        block = b"x" * self.chunk
        left = self.total
        while left > 0:
            n = min(left, self.chunk)
            yield block[:n]
            left -= n

    def __call__(self, h: BaseHTTPRequestHandler) -> None:
        try:
            h.send_response(200)
            h.send_header("Content-Type", "text/html; charset=utf-8")
            if self.content_length:
                h.send_header("Content-Length", str(self.total))
            else:
                h.send_header("Connection", "close")   # body ends when the connection does
            h.end_headers()
            h.close_connection = True
            for piece in self._chunks():
                if self.stop is not None and self.stop.is_set():
                    self.closed_early = True
                    return
                h.wfile.write(piece)
                h.wfile.flush()
                self.sent += len(piece)
                if self.delay:
                    time.sleep(self.delay)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.closed_early = True
        finally:
            self.done.set()
