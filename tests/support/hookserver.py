"""A real webhook receiver on 127.0.0.1 for the feed tests: it records every POST (path,
headers, JSON body) and answers the status the test sets (`hook.status = 503`)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Hook:
    def __init__(self, status: int = 200, sock=None):
        """`sock`: a socket already bound (tests.support.ports.hold_port) to serve on, so a test can
        take a receiver down and bring it back at the same address."""
        self.status = status
        self.posts: list[dict] = []          # the bodies of the POSTs answered 2xx
        self.refused = 0                     # POSTs answered otherwise
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()
        self.delay = 0.0                     # seconds to wait before answering
        self.answer = b"ok"
        hook = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                with hook.lock:
                    status, delay, answer = hook.status, hook.delay, hook.answer
                    hook.headers.append({k.lower(): v for k, v in self.headers.items()})
                if delay:
                    threading.Event().wait(delay)
                with hook.lock:
                    if 200 <= status < 300:
                        hook.posts.append(json.loads(body))
                    else:
                        hook.refused += 1
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                try:
                    self.wfile.write(answer)
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        if sock is None:
            self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        else:
            self.server = ThreadingHTTPServer(sock.getsockname(), Handler, bind_and_activate=False)
            self.server.socket.close()
            self.server.socket = sock
            self.server.server_activate()
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def received(self) -> list[dict]:
        with self.lock:
            return list(self.posts)

    def set(self, status: int) -> None:
        with self.lock:
            self.status = status

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
