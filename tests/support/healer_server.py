"""A real local HTTP server speaking the code-healer API (docs/HEALER_API.md), for tests."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler

from tests.support.httpfixture import QuietHTTPServer


class HealerServer:
    """`answer(request_body: dict) -> (status, body_bytes)`; `delay` seconds before answering."""

    def __init__(self, answer, delay: float = 0.0):
        self.answer = answer
        self.delay = delay
        self.requests: list[bytes] = []
        self.headers: list[dict] = []
        self.paths: list[str] = []
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n)
                srv.requests.append(raw)
                srv.headers.append(dict(self.headers))
                srv.paths.append(self.path)
                if srv.delay:
                    time.sleep(srv.delay)
                try:
                    status, body = srv.answer(json.loads(raw))
                except Exception as exc:  # the test's answer function failed: say so
                    status, body = 500, json.dumps({"status": "error", "message": str(exc)}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = self.base + "/api/heal"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def healed(blueprint: dict, summary: str = "selectors updated") -> tuple[int, bytes]:
    return 200, json.dumps({"status": "healed", "modified_files": {"blueprint.json": json.dumps(blueprint)},
                            "changes_summary": summary}).encode()
