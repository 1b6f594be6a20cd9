"""contrib/reference_healer.py between the real daemon and a local fake OpenAI-compatible server."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.daemon import FAST_CONFIG
from tests.support.paths import ROOT
from tests.support.sitepages import LISTING_BP, ROWS, listing_v1, listing_v2, write_blueprint

FIXED = dict(LISTING_BP, items="table.league-table tr.row-player",
             fields={"name": {"css": "td.player-name"}, "score": {"css": "td.pts", "type": "int"}})


class FakeOpenAI:
    """POST /v1/chat/completions answering with a fenced JSON blueprint; keeps what it was asked."""

    def __init__(self, content: str):
        self.content = content
        self.requests: list[dict] = []
        fake = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": fake.content}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def healer_proc():
    procs = []

    def start(upstream: str, *extra: str) -> str:
        p = subprocess.Popen([sys.executable, str(ROOT / "contrib" / "reference_healer.py"), "--upstream", upstream,
                              "--model", "tiny", "--listen", "127.0.0.1:0", *extra],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(p)
        line = p.stdout.readline()
        assert line.startswith("reference healer on "), line
        return line.split()[3]

    yield start
    for p in procs:
        p.terminate()
        p.wait(10)


def test_the_reference_healer_heals_through_an_openai_compatible_server(site, daemon_factory, tmp_path, healer_proc):
    fake = FakeOpenAI(f"```json\n{json.dumps(FIXED)}\n```\nrenamed the selectors to the new classes")
    try:
        url = healer_proc(fake.url, "--token", "s3cret-token", "--upstream-key", "upstream-key")
        cfg = FAST_CONFIG.replace("[doctor]", '[doctor]\nladder = ["external"]') + \
            f'[healer]\nurl = "{url}"\ntoken = "s3cret-token"\nkind = "code-healer"\ntimeouts = [20]\ncycles = 1\n'
        site.page("/stats", listing_v1())
        d = daemon_factory(cfg).start()
        bp = write_blueprint(tmp_path / "stats.json", site.url("/stats"))
        assert d.ctl("add", "stats", "--blueprint", bp).returncode == 0
        assert d.ctl("run", "stats").returncode == 0
        assert d.ctl("pause", "stats").returncode == 0
        site.page("/stats", listing_v2())
        r = d.ctl("heal", "stats")
        assert r.returncode == 0 and "promoted version 2 by external" in r.stdout, r.stdout + d.log()[-3000:]
        # The newest scrape, whole: every row of the redesigned page, read by the promoted version.
        newest = d.ctl_json("records", "stats", "--limit", "1")
        assert len(newest) == 1 and newest[0]["version"] == 2
        assert newest[0]["data"] == [{"name": n, "score": s} for n, s in ROWS]
        # What reached the model: the chat request with the blueprint and the page, and the upstream key.
        asked = fake.requests[-1]
        assert asked["path"] == "/v1/chat/completions" and asked["auth"] == "Bearer upstream-key"
        user = asked["body"]["messages"][-1]["content"]
        assert "blueprint.json" in user and "row-player" in user and asked["body"]["model"] == "tiny"
        v2 = [e for e in d.ctl_json("history", "stats") if e["kind"] == "version" and e["version"] == 2][0]
        assert v2["origin"] == "external" and "renamed the selectors" in v2["note"]   # the changes_summary
    finally:
        fake.stop()


def test_the_reference_healer_wants_the_token_and_says_what_went_wrong(healer_proc):
    fake = FakeOpenAI("no code here")
    try:
        url = healer_proc(fake.url, "--token", "tok-123456")
        body = json.dumps({"project_id": "p", "cycle": 1, "failed_files": {"blueprint.json": "{}"},
                           "pytest_errors": {"error_summary": "x"}}).encode()

        def post(headers):
            req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json", **headers})
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    return resp.status, json.loads(resp.read())
            except urllib.error.HTTPError as exc:
                return exc.code, json.loads(exc.read())

        assert post({})[0] == 401
        assert post({"Authorization": "Bearer wrong"})[0] == 401
        status, answer = post({"Authorization": "Bearer tok-123456"})
        assert status == 500 and answer["status"] == "error" and "no code block" in answer["message"]
        fake.stop()
        status, answer = post({"Authorization": "Bearer tok-123456"})
        assert status == 502 and answer["status"] == "error" and "cannot reach" in answer["message"]
    finally:
        try:
            fake.stop()
        except Exception:
            pass


def test_the_reference_healer_serves_healerd_over_a_unix_socket(site, daemon_factory, tmp_path, healer_proc):
    import os
    import shutil
    import tempfile

    fake = FakeOpenAI(f"```json\n{json.dumps(FIXED)}\n```\nrenamed the selectors to the new classes")
    sock_dir = tempfile.mkdtemp(prefix="rh-", dir="/tmp")   # a unix socket path must stay short
    try:
        url = healer_proc(fake.url, "--token", "s3cret-token", "--listen", f"unix:{sock_dir}/healer.sock")
        assert url == f"unix:{sock_dir}/healer.sock:/api/heal"
        cfg = FAST_CONFIG.replace("[doctor]", '[doctor]\nladder = ["external"]') + \
            f'[healer]\nurl = "{url}"\ntoken = "s3cret-token"\nkind = "code-healer"\ntimeouts = [20]\ncycles = 1\n'
        site.page("/stats", listing_v1())
        d = daemon_factory(cfg).start()
        bp = write_blueprint(tmp_path / "stats.json", site.url("/stats"))
        assert d.ctl("add", "stats", "--blueprint", bp).returncode == 0
        assert d.ctl("run", "stats").returncode == 0
        assert d.ctl("pause", "stats").returncode == 0
        site.page("/stats", listing_v2())
        r = d.ctl("heal", "stats")
        assert r.returncode == 0 and "promoted version 2 by external" in r.stdout, r.stdout + d.log()[-3000:]
        assert os.path.exists(f"{sock_dir}/healer.sock") and fake.requests
    finally:
        fake.stop()
        shutil.rmtree(sock_dir, ignore_errors=True)
