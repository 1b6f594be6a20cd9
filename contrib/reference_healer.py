#!/usr/bin/env python3
"""A small reference healer: healerd's code-healer HTTP API in front of any OpenAI-compatible server.

    python3 contrib/reference_healer.py --upstream http://127.0.0.1:8080 --model qwen2.5-coder \
        [--listen 127.0.0.1:3000 | --listen unix:/run/healer/healer.sock] [--token SECRET] \
        [--upstream-key KEY] [--timeout 110]

Then, in healerd.toml:

    [healer]
    url = "http://127.0.0.1:3000/api/heal"
    token = "SECRET"            # only when started with --token
    kind = "code-healer"

(with `--listen unix:/run/healer/healer.sock`: `url = "unix:/run/healer/healer.sock:/api/heal"`;
healerd checks who serves a unix socket or a loopback port before it sends anything, so run
this as root, as healerd's user, or as the user named in `[healer] allowed_user`.)

The upstream is anything speaking POST /v1/chat/completions: llama.cpp's `llama-server`,
Ollama (`http://127.0.0.1:11434`), vLLM, or a hosted API (`--upstream-key` or
$OPENAI_API_KEY is sent as its Bearer token). The protocol is described in
docs/HEALER_API.md. Python standard library only: copy this file anywhere and run it.
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import re
import socket
import socketserver
import stat
import sys
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_REQUEST_BYTES = 8_000_000
FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)
FILE_ORDER = ("blueprint.json", "parser.py", "diff.txt", "expected.json", "page.html", "last_good.html")

SYSTEM = (
    "You repair web-scraper blueprints after a site changed its HTML. A blueprint is JSON: "
    "optional \"items\" (a CSS selector, one record per match) and \"fields\" mapping a name to "
    "{\"css\": selector relative to the item, optional \"attr\", \"type\": str|int|float, \"required\"}. "
    "Keep every field name and type; change only the selectors (or \"items\") so they match the new page. "
    "Never invent data that is not on the page. Answer with exactly one fenced ```json block holding the "
    "whole corrected blueprint (or, when the source uses a parser, one ```python block with the whole "
    "corrected parser.py defining parse(html)), then one line saying what you changed."
)


def build_messages(req: dict) -> list[dict]:
    """The chat messages for one healing request: the errors, then each file as a fenced block."""
    files = req.get("failed_files") or {}
    errors = req.get("pytest_errors") or {}
    parts = [f"Source: {req.get('project_id', '?')} (cycle {req.get('cycle', 1)}, tier {req.get('tier', 'minimal')})",
             f"What fails: {errors.get('error_summary', '')}"]
    if errors.get("stdout"):
        parts.append(f"Validation report:\n{errors['stdout']}")
    for h in req.get("history") or []:
        parts.append(f"Earlier cycle {h.get('cycle')}: {h.get('outcome')} {h.get('reason', '')}".rstrip())
    names = [n for n in FILE_ORDER if n in files] + sorted(n for n in files if n not in FILE_ORDER)
    for name in names:
        lang = "json" if name.endswith(".json") else "python" if name.endswith(".py") else \
            "html" if name.endswith(".html") else ""
        parts.append(f"{name}:\n```{lang}\n{files[name]}\n```")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def files_from_answer(content: str) -> dict[str, str] | None:
    """The model's first fenced block as modified files: json -> blueprint.json, python -> parser.py."""
    m = FENCE.search(content or "")
    if not m:
        return None
    lang, code = m.group(1).lower(), m.group(2)
    if lang in ("python", "py", "python3") or (lang != "json" and "def parse" in code):
        return {"parser.py": code}
    return {"blueprint.json": code}


def summary_of(content: str) -> str:
    """The first line after the code block, as the changes summary."""
    rest = FENCE.sub("", content or "", count=1).strip()
    return (rest.splitlines() or ["rewritten by the model"])[0][:300]


class Upstream:
    def __init__(self, base: str, model: str, key: str | None, timeout: float):
        base = base.rstrip("/")
        if base.endswith("/chat/completions"):
            self.url = base
        elif base.endswith("/v1"):
            self.url = base + "/chat/completions"
        else:
            self.url = base + "/v1/chat/completions"
        self.model, self.key, self.timeout = model, key, timeout

    def complete(self, messages: list[dict]) -> str:
        body = json.dumps({"model": self.model, "messages": messages, "temperature": 0}).encode()
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout) as resp:
            payload = json.loads(resp.read())
        content = payload["choices"][0]["message"]["content"]
        if not isinstance(content, str):
            raise ValueError("the model's answer has no text content")
        return content


def make_handler(upstream: Upstream, token: str | None):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "reference-healer/1"

        def _answer(self, status: int, obj: dict) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):  # noqa: N802 (http.server's naming)
            if self.path.split("?")[0].rstrip("/") != "/api/heal":
                return self._answer(404, {"status": "error", "message": "POST /api/heal"})
            if token:
                got = self.headers.get("Authorization", "")
                if not hmac.compare_digest(got.encode(), f"Bearer {token}".encode()):
                    return self._answer(401, {"status": "error", "message": "missing or wrong bearer token"})
            try:
                size = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                size = -1
            if size < 0 or size > MAX_REQUEST_BYTES:
                self.close_connection = True
                return self._answer(413, {"status": "error", "message": "request too large"})
            try:
                req = json.loads(self.rfile.read(size))
                if not isinstance(req, dict) or not isinstance(req.get("failed_files"), dict):
                    raise ValueError("failed_files must be an object")
            except ValueError as exc:
                return self._answer(400, {"status": "error", "message": f"bad request: {exc}"})
            try:
                content = upstream.complete(build_messages(req))
            except TimeoutError:
                return self._answer(504, {"status": "timeout",
                                          "message": f"the model did not answer within {upstream.timeout:g}s"})
            except urllib.error.HTTPError as exc:
                return self._answer(502, {"status": "error", "message": f"the model server answered HTTP {exc.code}"})
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, (socket.timeout, TimeoutError)):
                    return self._answer(504, {"status": "timeout",
                                              "message": f"the model did not answer within {upstream.timeout:g}s"})
                return self._answer(502, {"status": "error", "message": f"cannot reach the model server: {reason}"})
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                return self._answer(502, {"status": "error", "message": f"the model server's answer is unusable: {exc}"})
            files = files_from_answer(content)
            if not files:
                return self._answer(500, {"status": "error", "message": "the model's answer holds no code block"})
            return self._answer(200, {"status": "healed", "modified_files": files,
                                      "changes_summary": summary_of(content)})

        def log_message(self, fmt, *args):
            sys.stderr.write("reference-healer: " + (fmt % args) + "\n")

    return Handler


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--upstream", required=True, help="base URL of the OpenAI-compatible server")
    p.add_argument("--model", default=os.environ.get("HEALER_MODEL", ""), help="the model name to ask for")
    p.add_argument("--listen", default="127.0.0.1:3000",
                   help="HOST:PORT to serve on (port 0: any free port), or unix:/path/to.sock")
    p.add_argument("--token", default=os.environ.get("CODE_HEALER_TOKEN"),
                   help="require this bearer token from healerd (default: $CODE_HEALER_TOKEN; none: no auth)")
    p.add_argument("--upstream-key", default=os.environ.get("OPENAI_API_KEY"),
                   help="bearer token for the upstream server (default: $OPENAI_API_KEY)")
    p.add_argument("--timeout", type=float, default=110.0,
                   help="seconds to wait for the model (keep it under healerd's cycle timeout)")
    args = p.parse_args(argv)
    handler = make_handler(Upstream(args.upstream, args.model, args.upstream_key, args.timeout), args.token)
    server: socketserver.BaseServer
    if args.listen.startswith("unix:"):
        path = args.listen[len("unix:"):]
        try:   # a socket left by an earlier run of ours is replaced; anything else is not touched
            if stat.S_ISSOCK(os.lstat(path).st_mode) and os.lstat(path).st_uid == os.geteuid():
                os.unlink(path)
        except FileNotFoundError:
            pass
        unix_server = socketserver.ThreadingUnixStreamServer(path, handler)
        unix_server.daemon_threads = True
        server, where = unix_server, f"unix:{path}:/api/heal"
    else:
        host, _, port = args.listen.rpartition(":")
        tcp_server = ThreadingHTTPServer((host or "127.0.0.1", int(port)), handler)
        tcp_server.daemon_threads = True
        server = tcp_server
        where = f"http://{tcp_server.server_address[0]}:{tcp_server.server_address[1]}/api/heal"
    print(f"reference healer on {where} -> {args.upstream}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
