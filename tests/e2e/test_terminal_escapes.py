"""No raw control character from outside reaches a terminal or a log line.

A page whose text carries OSC 0 (retitle), OSC 52 (write the clipboard), CSI 2J (clear the
screen), a C1 CSI, a bare ESC and a BEL, and a healer whose error message and
`changes_summary` carry the same: the installed healerctl, run on a real pty against the real
daemon, prints them made visible (`\\x1b]0;...`), never raw; `--json` stays JSON that reads back
to the very same text; the daemon's log and alert lines carry none of them either.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from healerd.core.terminal import escaped, json_text, visible
from tests.support.daemon import FAST_CONFIG, bin_cmd
from tests.support.healer_server import HealerServer, healed
from tests.support.sitepages import LISTING_BP, ROWS, listing_v1, listing_v2, write_blueprint
from tests.support.terminal_kit import PAYLOAD, assert_nothing_raw, on_pty

SHOWN = ("\\x1b]0;pwned\\x07 \\x1b]52;c;SGVsbG8=\\x07 \\x1b[2J \\x1bc bare\\x1b \\x9b31m \\x07 cr over"
         " \\u202egnp.exe\\u200b\\u200d\\ufeff\\U000e0041 ls ep")
FIXED = dict(LISTING_BP, items="table.league-table tr.row-player",
             fields={"name": {"css": "td.player-name"}, "score": {"css": "td.pts", "type": "int"}})
SGR = re.compile(rb"\x1b\[[0-9;]*m")


# -- the core function --------------------------------------------------------------------------


def test_visible_shows_every_control_and_folds_lines():
    assert visible(PAYLOAD) == SHOWN
    assert visible("a\n\tb\r\n  c\x85d\u2028e") == "a b c d e"
    assert visible("  plain text, ünïcode  ") == "plain text, ünïcode"
    assert visible(None) == "None" and visible(42) == "42"
    assert visible("a  b") == "a b" and visible(" a ") == "a" and visible("a\xa0\xa0b") == "a b"
    assert visible("  a  b", one_line=False) == "  a  b"
    kept = visible("line 1\n\tline 2\x1b[2J\r", one_line=False)
    assert kept == "line 1\n\tline 2\\x1b[2J\\r"
    assert escaped("a\nb\x1b") == "a\\nb\\x1b"
    for ch in [chr(c) for c in (*range(0x20), *range(0x7f, 0xa0))]:
        assert not re.search(r"[\x00-\x1f\x7f-\x9f]", visible(f"x{ch}y")), repr(ch)
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", visible(f"x{ch}y", one_line=False)), repr(ch)


def test_json_text_escapes_c1_and_del_and_reads_back_the_same():
    value = {"k\x9b": PAYLOAD + "\x7f\x85 é ü", "n": [1, None, "\x1b"]}
    text = json_text(value, indent=2)
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", text)
    assert "é ü" in text                                     # readable UTF-8 stays as it is
    assert json.loads(text) == value
    assert json.loads(json_text(value, separators=(",", ":"))) == value
    assert "\x9b" in json.dumps(value, ensure_ascii=False)   # what json.dumps alone would print raw


# -- the installed healerctl on a real pty ------------------------------------------------------


def healer_config(url: str, webhook: str) -> str:
    cfg = FAST_CONFIG.replace("[doctor]\nmax_fix_attempts = 3", '[doctor]\nladder = ["external"]\nmax_fix_attempts = 3')
    cfg = cfg.replace("[alerts]\n", f'[alerts]\nwebhook = "{webhook}"\n')
    assert 'ladder = ["external"]' in cfg and "webhook" in cfg
    return cfg + f'[healer]\nurl = "{url}"\ntimeouts = [5]\ncycles = 1\nkind = "code-healer"\n'


class Webhook:
    """A local receiver that keeps each POST's body as raw bytes."""

    def __init__(self):
        bodies = self.bodies = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                bodies.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def test_pages_healers_and_errors_never_reach_the_terminal_raw(site, daemon_factory, tmp_path):
    calls = []

    def answer(req):
        calls.append(req)
        if len(calls) == 1:   # the first attempt fails with a hostile message, the next one heals
            return 200, json.dumps({"status": "error", "message": f"cannot fix {PAYLOAD}"}).encode()
        return healed(FIXED, f"renamed {PAYLOAD}")

    healer = HealerServer(answer)
    hook = Webhook()
    rows = [(f"Ada {PAYLOAD}", 31)] + ROWS[1:]
    try:
        d = daemon_factory(healer_config(healer.url, hook.url)).start()
        site.page("/stats", listing_v1(rows))
        bp = write_blueprint(tmp_path / "stats.json", site.url("/stats"), dict(LISTING_BP, every="1h"))
        assert d.ctl("add", "stats", "--blueprint", bp).returncode == 0
        assert d.ctl_json("run", "stats")["ok"] is True

        records = on_pty(d, "records", "stats")
        assert_nothing_raw(records, "records")
        assert b"Ada \\x1b]0;pwned\\x07" in records
        stored = d.ctl_json("records", "stats")[0]["data"][0]["name"]   # as extracted (whitespace folded)
        assert "\x1b]52;c;SGVsbG8=\x07" in stored and "\x9b" in stored
        as_json = on_pty(d, "records", "stats", "--json")
        assert_nothing_raw(as_json, "records --json")
        assert json.loads(as_json.replace(b"\r\n", b"\n"))[0]["data"][0]["name"] == stored
        as_csv = on_pty(d, "records", "stats", "--csv")
        assert_nothing_raw(as_csv, "records --csv")
        assert visible(stored, one_line=False).encode() in as_csv

        # The page changes (the hostile text moved into new markup): a failed scrape, a heal whose
        # first healer answer is an error carrying the payload, then a fix whose summary carries it.
        site.page("/stats", listing_v2(rows) + f"<p>{PAYLOAD}</p>")
        d.ctl("run", "stats")
        heal = on_pty(d, "heal", "stats")
        assert_nothing_raw(heal, "heal")
        d.wait_for(lambda: any(h.get("kind") == "fix" and h.get("outcome") == "promoted"
                               for h in d.ctl_json("history", "stats")), timeout=60, what="the promoted fix")
        assert len(calls) >= 2
        for args in (("history", "stats"), ("status", "stats"), ("status",), ("diff", "stats"),
                     ("alerts",), ("history", "stats", "--json"), ("status", "stats", "--json"),
                     ("alerts", "--json"), ("heal", "stats", "--json"),
                     ("memory",), ("stats",)):
            out = on_pty(d, *args)
            assert_nothing_raw(out, " ".join(args))
            if "--json" in args:
                json.loads(out.replace(b"\r\n", b"\n"))   # still plain JSON
        for issue in d.ctl_json("memory"):
            for args in (("memory", "show", str(issue["issue_id"])), ("memory", "show", str(issue["issue_id"]), "--json")):
                assert_nothing_raw(on_pty(d, *args), " ".join(args))
        history = on_pty(d, "history", "stats")
        assert b"renamed \\x1b]0;pwned" in history
        reasons = [str(h.get("reason") or h.get("note")) for h in d.ctl_json("history", "stats")]
        assert any("renamed \x1b]0;pwned\x07" in r for r in reasons), reasons   # --json: the text as stored
        diff = on_pty(d, "diff", "stats")
        assert b"\\x1b]52;c;SGVsbG8=\\x07" in diff, diff
        # With colours on, healerctl's own SGR sequences are the only escapes.
        coloured = on_pty(d, "status", colour=True)
        assert SGR.search(coloured), coloured
        assert_nothing_raw(SGR.sub(b"", coloured), "status with colours")
        # Whoever tails the journal or the alert log sees the text, not its effect.
        log = d.log_path.read_bytes()
        assert b"pwned" in log
        assert_nothing_raw(log.replace(b"\n", b""), "the daemon's log")
        alert_log = (d.state / "alerts.jsonl").read_bytes()
        assert_nothing_raw(alert_log.replace(b"\n", b""), "alerts.jsonl")
        # The webhook's body: JSON escapes, no raw C1 either, and the very text once decoded.
        d.wait_for(lambda: any(b"pwned" in b for b in hook.bodies), what="the HEAL_FAILED webhook POST")
        for body in hook.bodies:
            assert_nothing_raw(body, "a webhook body")
        assert any("\x9b31m" in json.loads(b)["message"] for b in hook.bodies)
        assert d.proc.poll() is None
    finally:
        healer.stop()
        hook.stop()


def test_healerd_run_shows_a_bad_config_key_visibly(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('[daemon]\n"evil\\u001b]0;pwned\\u0007\\u001b[2J" = 1\n')
    r = subprocess.run(bin_cmd("healerd") + ["run", "--config", str(cfg), "--state-dir", str(tmp_path / "s")],
                       capture_output=True, timeout=60)
    assert r.returncode == 2
    assert b"evil\\x1b]0;pwned\\x07\\x1b[2J" in r.stderr, r.stderr
    assert_nothing_raw(r.stderr, "healerd run")
    assert len(r.stderr.strip().splitlines()) == 1
