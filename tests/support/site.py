"""A real local site on 127.0.0.1 whose pages a test sets (the `site` fixture)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler

from tests.support.httpfixture import QuietHTTPServer


class Site:
    """A local site: `site.page(path, html)` sets a page; hits are counted per path."""

    def __init__(self):
        self.pages: dict[str, tuple[int, dict, bytes]] = {}
        self.hits: dict[str, int] = {}
        self.lock = threading.Lock()
        self.connections: set = set()
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                with site.lock:
                    site.connections.add(self.connection)

            def finish(self):
                with site.lock:
                    site.connections.discard(self.connection)
                super().finish()

            def do_GET(self):
                path = self.path.split("?", 1)[0]
                with site.lock:
                    site.hits[path] = site.hits.get(path, 0) + 1
                    entry = site.pages.get(path)
                if entry is None:
                    status, headers, body = 404, {"Content-Type": "text/html"}, b"<html><body>not found</body></html>"
                else:
                    status, headers, body = entry
                if callable(body):
                    body = body()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def page(self, path: str, html: str | bytes, status: int = 200, headers: dict | None = None) -> None:
        body = html.encode() if isinstance(html, str) else html
        with self.lock:
            self.pages[path] = (status, {"Content-Type": "text/html; charset=utf-8", **(headers or {})}, body)

    def slow(self, path: str, seconds: float, html: str) -> None:
        """A page that answers only after `seconds`."""
        import time as _t

        def body():
            _t.sleep(seconds)
            return html.encode()

        with self.lock:
            self.pages[path] = (200, {"Content-Type": "text/html; charset=utf-8"}, body)

    def redirect(self, path: str, to: str, status: int = 302) -> None:
        with self.lock:
            self.pages[path] = (status, {"Location": to}, b"")

    def remove(self, path: str) -> None:
        with self.lock:
            self.pages.pop(path, None)

    def stop(self) -> None:
        """The site goes down: no new connections, and the kept-alive ones are cut."""
        import socket as _socket

        self.server.shutdown()
        self.server.server_close()
        with self.lock:
            open_now = list(self.connections)
        for conn in open_now:
            try:
                conn.shutdown(_socket.SHUT_RDWR)
            except OSError:
                pass
