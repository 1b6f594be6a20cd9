"""healerctl end to end: the real CLI in a subprocess against a real ControlServer with canned answers."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import threading
import time

import click
import pytest

from healerd.cli.healerctl import cli
from healerd.control.protocol import ControlError
from healerd.control.server import ControlServer
from healerd.core.timeutil import iso

BLUEPRINT = """\
url = "http://127.0.0.1:8080/stats"
every = "15m"
items = "table.stats tr.player"
[fields.name]
css = "td.name"
[fields.score]
css = "td.score"
type = "int"
"""


def status_obj(name="scores", **over):
    now = time.time()
    obj = {
        "name": name, "url": "http://127.0.0.1:8080/stats", "state": "ACTIVE", "version": 3,
        "last_success_at": iso(now - 200), "last_failure_at": None, "failure_count": 0,
        "fix_attempts_24h": 0, "quarantine_until": None, "paused": False,
        "next_run_at": iso(now + 330), "last_error": None,
    }
    obj.update(over)
    return obj


class Daemon:
    """The canned handler: answers every op with a result of the documented shape."""

    def __init__(self):
        self.calls: list[tuple[str, dict]] = []
        self.alerts = [
            {"id": 1, "ts": "2026-11-22T10:00:00Z", "level": "warning", "source": "shop", "event": "DEGRADED",
             "message": "required field price is null", "details": {}},
            {"id": 2, "ts": "2026-11-22T10:05:00Z", "level": "info", "source": "shop", "event": "HEALED",
             "message": "promoted version 4 (builtin)", "details": {}},
        ]
        self.lock = threading.Lock()

    def __call__(self, op, args, peer):
        self.calls.append((op, args))
        now = time.time()
        name = args.get("name")
        if name == "nope":
            raise ControlError("not_found", "unknown source 'nope'", {"name": "nope"})
        if op == "ping":
            return {"version": "0.1.0", "pid": 4242, "started_at": iso(now - 3600)}
        if op == "status":
            if name is None:
                return {
                    "sources": [
                        status_obj(),
                        status_obj("shop", state="DEGRADED", version=2, failure_count=2, fix_attempts_24h=1,
                                   last_failure_at=iso(now - 70), last_error="required field price is null"),
                    ],
                    "summary": {"sources": 2, "by_state": {"ACTIVE": 1, "DEGRADED": 1}, "fix_success_rate": 0.75,
                                "median_recovery_s": 90.0, "systemic_halt": True,
                                "halt_reason": "PARSE_ERROR on 3 sources"},
                }
            obj = status_obj(name, state="QUARANTINED", last_error="required field price is null",
                             quarantine_until=iso(now + 7500))
            obj.update({
                "events": [
                    {"from": "DEGRADED", "to": "QUARANTINED", "trigger": "attempts_exhausted",
                     "reason": "3 fix attempts failed in 24h", "at": iso(now - 60)},
                    {"from": "ACTIVE", "to": "DEGRADED", "trigger": "scrape_failed",
                     "reason": "PARSE_ERROR", "at": iso(now - 600)},
                ],
                "deferred_report": {"problem": "price selector broke", "last_error": "required field price is null",
                                    "attempts": ["memory: no match", "builtin: rejected by validator"],
                                    "options": ["update the blueprint by hand", "rollback to version 2"]},
                "metrics": {"fix_attempts": 4, "fix_success_rate": 0.5, "median_recovery_s": 125.0},
                "blueprint": {"url": "http://127.0.0.1:8080/stats", "every": 900.0, "fields": {"name": {"css": "td"}}},
                "last_error_type": "PARSE_ERROR",
                "flagged_for_review": False,
            })
            return obj
        if op == "add":
            return status_obj(name, url=args["blueprint"].get("url"), version=1, last_success_at=None)
        if op == "remove":
            return {"removed": name}
        if op in ("pause", "resume"):
            return status_obj(name, paused=op == "pause")
        if op == "run":
            if not args["wait"]:
                return {"queued": True}
            if name == "shop":
                return {"name": name, "ok": False, "error_type": "PARSE_ERROR", "error": "required field price is null",
                        "item_count": 0, "records": 0, "state": "DEGRADED", "version": 2, "not_modified": False,
                        "duration_ms": 41.5}
            return {"name": name, "ok": True, "error_type": None, "error": None, "item_count": 25, "records": 1,
                    "state": "ACTIVE", "version": 3, "not_modified": False, "duration_ms": 123.4}
        if op == "heal":
            return {"name": name, "outcome": "promoted", "strategy": "builtin",
                    "reason": "price moved from td.price to span.cost", "version": 4, "state": "ACTIVE"}
        if op == "unquarantine":
            if name == "scores":
                raise ControlError("illegal_transition", "scores is ACTIVE; only QUARANTINED or DEAD can be unquarantined")
            return status_obj(name, state="DEGRADED")
        if op == "history":
            return [
                {"kind": "fix", "at": "2026-11-22T10:05:00Z", "error_type": "PARSE_ERROR", "strategy": "builtin",
                 "outcome": "promoted", "reason": "price moved"},
                {"kind": "version", "at": "2026-11-22T10:05:00Z", "version": 4, "origin": "builtin", "status": "production"},
                {"kind": "version", "at": "2026-11-20T08:00:00Z", "version": 3, "origin": "human", "status": "archived",
                 "note": "registered (cli)"},
            ]
        if op == "diff":
            return {"diff": "--- last good\n+++ current\n@@ table @@\n-<td class=\"price\">\n+<span class=\"cost\">",
                    "last_good_at": "2026-11-22T09:00:00Z", "current_at": "2026-11-22T10:00:00Z"}
        if op == "rollback":
            return {"version": args.get("to", 3), "previous": 4}
        if op == "approve":
            return {"version": args["version"]}
        if op == "records":
            return [
                {"scraped_at": "2026-11-22T10:00:00Z", "version": 3,
                 "data": [{"name": "Ann", "score": 12}, {"name": "Bo, Jr.", "score": None}]},
                {"scraped_at": "2026-11-22T09:45:00Z", "version": 3, "data": [{"name": "Ann", "score": 11}]},
            ][: args["limit"]]
        if op == "alerts":
            with self.lock:
                after = args.get("after_id")
                out = [a for a in self.alerts if after is None or a["id"] > after]
            return out[: args["limit"]] if args.get("limit") else out
        if op == "reload":
            return {"added": ["news"], "changed": [], "removed": ["old"]}
        if op == "resume_healing":
            return {"systemic_halt": False}
        if op == "memory_list":
            return [{"issue_id": "iss-1", "canonical_title": "price cell renamed", "error_type": "PARSE_ERROR",
                     "host": "127.0.0.1", "confidence_score": 0.9, "verification_count": 3, "failure_count": 0,
                     "affected_sources": ["shop", "shop2"], "last_confirmed_at": iso(now - 120), "status": "active"}]
        if op == "memory_show":
            if args["id"] != "iss-1":
                raise ControlError("not_found", f"no issue {args['id']!r}")
            return {"issue_id": "iss-1", "canonical_title": "price cell renamed", "error_type": "PARSE_ERROR",
                    "host": "127.0.0.1", "confidence_score": 0.9, "verification_count": 3, "failure_count": 0,
                    "affected_sources": ["shop"], "last_confirmed_at": None, "status": "active",
                    "fix_bundle": {"selectors": {"price": "span.cost"}}, "usage": {"fix_applied": 3}}
        if op == "memory_forget":
            return {"forgotten": args["id"]}
        raise ControlError("bad_request", f"unknown op {op!r}")


@pytest.fixture
def daemon(tmp_path):
    """Not healerd: a real ControlServer on a Unix socket whose handler gives canned answers."""
    d = Daemon()
    path = str(tmp_path / "d.sock")
    srv = ControlServer(path, d)
    srv.start()
    d.path = path
    yield d
    srv.stop()


def base_env():
    env = {k: v for k, v in os.environ.items()
           if k not in ("HEALERD_SOCKET", "RUNTIME_DIRECTORY", "STATE_DIRECTORY", "HEALERD_STATE_DIR", "NO_COLOR")}
    env["COLUMNS"] = "200"
    return env


def ctl(tmp_path, *args, sock=None, env=None, timeout=60):
    e = base_env()
    if sock:
        e["HEALERD_SOCKET"] = sock
    if env:
        e.update(env)
    return subprocess.run([sys.executable, "-m", "healerd.cli.healerctl", *args], cwd=tmp_path, env=e,
                          capture_output=True, text=True, timeout=timeout)


def one_error_line(r, code):
    assert r.returncode == code, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("healerctl: "), r.stderr
    return lines[0]


# -- help and usage -------------------------------------------------------------------------


def _all_commands(group, prefix=()):
    for name, cmd in group.commands.items():
        yield prefix + (name,), cmd
        if isinstance(cmd, click.Group):
            yield from _all_commands(cmd, prefix + (name,))


def test_every_command_has_help():
    names = {" ".join(p) for p, _ in _all_commands(cli)}
    for required in ("add", "remove", "pause", "resume", "status", "run", "heal", "unquarantine", "history",
                     "diff", "rollback", "records", "alerts", "reload", "approve", "resume-healing", "memory",
                     "memory show", "memory forget"):
        assert required in names
    for path, cmd in _all_commands(cli):
        summary = cmd.get_short_help_str(limit=200)
        assert summary and not summary.endswith("..."), path
        assert len((cmd.help or "").strip().splitlines()) >= 3, path  # a summary and a short description


def test_help_and_version_run(tmp_path):
    r = ctl(tmp_path, "--help")
    assert r.returncode == 0 and "resume-healing" in r.stdout and "Exit codes" in r.stdout
    r = ctl(tmp_path, "records", "--help")
    assert r.returncode == 0 and "--csv" in r.stdout and "--limit" in r.stdout and "--socket" in r.stdout
    r = ctl(tmp_path, "--version")
    assert r.returncode == 0 and "healerctl" in r.stdout and "0.1.0" in r.stdout


def test_usage_errors_exit_2(tmp_path, daemon):
    assert ctl(tmp_path, "frobnicate", sock=daemon.path).returncode == 2
    assert ctl(tmp_path, "approve", "scores", "notanumber", sock=daemon.path).returncode == 2
    assert ctl(tmp_path, "records", "scores", "--json", "--csv", sock=daemon.path).returncode == 2
    assert ctl(tmp_path, "records", "scores", "--limit", "0", sock=daemon.path).returncode == 2
    assert ctl(tmp_path, "add", "x", sock=daemon.path).returncode == 2  # --blueprint is required
    assert daemon.calls == []  # nothing reached the daemon


# -- reaching the daemon ----------------------------------------------------------------------


def test_missing_socket_exit_3_names_path(tmp_path):
    r = ctl(tmp_path, "status")  # default: ./healerd-state/healerd.sock
    line = one_error_line(r, 3)
    assert str(tmp_path / "healerd-state" / "healerd.sock") in line and "socket missing" in line
    r = ctl(tmp_path, "status", env={"HEALERD_STATE_DIR": str(tmp_path / "st")})
    assert str(tmp_path / "st" / "healerd.sock") in one_error_line(r, 3)
    gone = str(tmp_path / "gone.sock")
    r = ctl(tmp_path, "--socket", gone, "ping")
    assert gone in one_error_line(r, 3)


def test_refused_socket_exit_3(tmp_path):
    path = str(tmp_path / "dead.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()
    line = one_error_line(ctl(tmp_path, "status", sock=path), 3)
    assert "connection refused" in line and path in line


def test_refused_peer_exit_3_permission_denied(tmp_path):
    """A user the daemon's SO_PEERCRED check refuses cannot reach it: exit 3, naming the socket."""
    path = str(tmp_path / "p.sock")
    d = Daemon()
    with ControlServer(path, d, allow=lambda peer: False):
        line = one_error_line(ctl(tmp_path, "status", sock=path), 3)
        assert "permission denied" in line and path in line
        bp = tmp_path / "bp.toml"
        bp.write_text(BLUEPRINT)
        line = one_error_line(ctl(tmp_path, "--socket", path, "add", "x", "--blueprint", str(bp)), 3)
        assert "permission denied" in line and path in line
    assert d.calls == []  # the daemon read nothing from the refused peer


def test_socket_option_levels(tmp_path, daemon):
    bad = str(tmp_path / "bad.sock")
    assert ctl(tmp_path, "ping", sock=daemon.path).returncode == 0                      # env
    assert ctl(tmp_path, "--socket", daemon.path, "ping", sock=bad).returncode == 0     # group beats env
    assert ctl(tmp_path, "--socket", bad, "ping", "--socket", daemon.path).returncode == 0  # command beats group
    r = ctl(tmp_path, "--socket", bad, "memory", "--socket", daemon.path, "forget", "iss-1")
    assert r.returncode == 0 and "forgot iss-1" in r.stdout
    r = ctl(tmp_path, "ping", sock=daemon.path)
    assert "healerd 0.1.0 (pid 4242)" in r.stdout


# -- status ---------------------------------------------------------------------------------


def test_status_table_and_summary(tmp_path, daemon):
    r = ctl(tmp_path, "status", sock=daemon.path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = lines[0].split()
    assert header == ["NAME", "STATE", "VER", "LAST", "OK", "LAST", "FAIL", "FAILS", "FIX/24H", "NEXT", "RUN", "ERROR"]
    scores = next(line for line in lines if line.startswith("scores"))
    shop = next(line for line in lines if line.startswith("shop"))
    # aligned: every column starts at the header's offset
    for col in ("STATE", "VER", "FAILS", "NEXT RUN"):
        off = lines[0].index(col)
        assert scores[off] != " " and shop[off] != " " and scores[off - 1] == " ", col
    assert "3m ago" in scores and "in 5m" in scores and "ACTIVE" in scores
    assert "DEGRADED" in shop and "1m ago" in shop and "required field price is null" in shop
    assert "2 sources: 1 ACTIVE, 1 DEGRADED" in r.stdout
    assert "fix success rate 75%" in r.stdout and "median recovery 1m 30s" in r.stdout
    assert "HEALING HALTED" in r.stdout and "PARSE_ERROR on 3 sources" in r.stdout
    assert "\x1b[" not in r.stdout  # no colour when stdout is not a terminal


def test_status_json_is_the_array(tmp_path, daemon):
    r = ctl(tmp_path, "status", "--json", sock=daemon.path)
    assert r.returncode == 0
    data = json.loads(r.stdout)
    assert isinstance(data, list) and [s["name"] for s in data] == ["scores", "shop"]
    assert set(data[0]) == {"name", "url", "state", "version", "last_success_at", "last_failure_at", "failure_count",
                            "fix_attempts_24h", "quarantine_until", "paused", "next_run_at", "last_error"}


def test_status_detail(tmp_path, daemon):
    r = ctl(tmp_path, "status", "shop", sock=daemon.path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("shop\n")
    for text in ("http://127.0.0.1:8080/stats", "QUARANTINED", "every 15m", "PARSE_ERROR: required field price is null",
                 "quarantined until:", "in 2h", "fix attempts: 4; success rate 50%; median recovery 2m 5s",
                 "deferred report", "builtin: rejected by validator", "rollback to version 2",
                 "DEGRADED -> QUARANTINED", "attempts_exhausted", "ACTIVE -> DEGRADED"):
        assert text in out, text
    assert out.index("DEGRADED -> QUARANTINED") < out.index("ACTIVE -> DEGRADED")  # newest first
    r = ctl(tmp_path, "status", "shop", "--json", sock=daemon.path)
    obj = json.loads(r.stdout)
    assert obj["name"] == "shop" and obj["metrics"]["fix_attempts"] == 4 and len(obj["events"]) == 2


def test_refused_request_exit_1_one_line(tmp_path, daemon):
    line = one_error_line(ctl(tmp_path, "status", "nope", sock=daemon.path), 1)
    assert line == "healerctl: unknown source 'nope'"
    line = one_error_line(ctl(tmp_path, "unquarantine", "scores", sock=daemon.path), 1)
    assert "only QUARANTINED or DEAD" in line
    one_error_line(ctl(tmp_path, "memory", "show", "iss-9", sock=daemon.path), 1)


def test_colour_on_a_terminal(tmp_path, daemon):
    master, slave = pty.openpty()
    env = base_env()
    env["HEALERD_SOCKET"] = daemon.path
    p = subprocess.Popen([sys.executable, "-m", "healerd.cli.healerctl", "status"], cwd=tmp_path, env=env,
                         stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert p.wait(30) == 0
    text = out.decode()
    assert "\x1b[32mACTIVE" in text and "\x1b[33mDEGRADED" in text
    assert "NAME" in text


# -- add / remove / pause / resume ----------------------------------------------------------------


def test_add_sends_the_checked_blueprint(tmp_path, daemon):
    bp = tmp_path / "scores.toml"
    bp.write_text(BLUEPRINT)
    r = ctl(tmp_path, "add", "scores", "--blueprint", str(bp), sock=daemon.path)
    assert r.returncode == 0, r.stderr
    assert "added scores" in r.stdout and "every 15m" in r.stdout
    op, args = daemon.calls[-1]
    assert op == "add" and args["name"] == "scores" and "url" not in args
    assert args["blueprint"]["items"] == "table.stats tr.player"
    assert args["blueprint"]["fields"]["score"] == {"css": "td.score", "type": "int"}
    assert args["blueprint"]["every"] == 900.0

    r = ctl(tmp_path, "add", "other", "--blueprint", str(bp), "--url", "http://127.0.0.1:9/x", sock=daemon.path)
    assert r.returncode == 0
    assert daemon.calls[-1][1]["url"] == "http://127.0.0.1:9/x"
    assert daemon.calls[-1][1]["blueprint"]["url"] == "http://127.0.0.1:9/x"


def test_add_invalid_blueprint_exit_1_names_key(tmp_path, daemon):
    bad = tmp_path / "bad.toml"
    bad.write_text(BLUEPRINT.replace('css = "td.score"', 'css = "td..score"'))
    line = one_error_line(ctl(tmp_path, "add", "x", "--blueprint", str(bad), sock=daemon.path), 1)
    assert "fields.score.css" in line
    nourl = tmp_path / "nourl.toml"
    nourl.write_text(BLUEPRINT.split("\n", 1)[1])
    assert "url" in one_error_line(ctl(tmp_path, "add", "x", "--blueprint", str(nourl), sock=daemon.path), 1)
    typo = tmp_path / "typo.json"
    typo.write_text(json.dumps({"url": "http://a.example/", "fields": {"p": {"css": "p", "type": "decimal"}}}))
    assert "fields.p.type" in one_error_line(ctl(tmp_path, "add", "x", "--blueprint", str(typo), sock=daemon.path), 1)
    missing = one_error_line(ctl(tmp_path, "add", "x", "--blueprint", str(tmp_path / "no.toml"), sock=daemon.path), 1)
    assert "no.toml" in missing
    # A parser the sandbox would refuse at every scrape is refused here, once, naming the key.
    evil = tmp_path / "evil.json"
    evil.write_text(json.dumps({"url": "http://a.example/", "fields": {"p": {"type": "str"}},
                                "parser": "import os\n\ndef parse(html):\n    return {'p': os.getcwd()}\n"}))
    line = one_error_line(ctl(tmp_path, "add", "x", "--blueprint", str(evil), sock=daemon.path), 1)
    assert "parser" in line and "'os'" in line
    assert daemon.calls == []  # nothing invalid was sent


def test_remove_pause_resume(tmp_path, daemon):
    assert ctl(tmp_path, "remove", "scores", sock=daemon.path).stdout.strip() == "removed scores"
    r = ctl(tmp_path, "pause", "scores", sock=daemon.path)
    assert r.returncode == 0 and "scores paused" in r.stdout
    r = ctl(tmp_path, "resume", "scores", sock=daemon.path)
    assert r.returncode == 0 and "scores resumed" in r.stdout and "in 5m" in r.stdout
    assert [c[0] for c in daemon.calls] == ["remove", "pause", "resume"]


# -- run / heal / unquarantine ------------------------------------------------------------------


def test_run(tmp_path, daemon):
    r = ctl(tmp_path, "run", "scores", sock=daemon.path)
    assert r.returncode == 0
    assert "scores: ok, 1 record(s), 25 item(s) (version 3, 123 ms); state ACTIVE" in r.stdout
    assert daemon.calls[-1] == ("run", {"name": "scores", "wait": True})
    r = ctl(tmp_path, "run", "shop", sock=daemon.path)
    assert "shop: failed, PARSE_ERROR: required field price is null" in r.stdout and "DEGRADED" in r.stdout
    r = ctl(tmp_path, "run", "scores", "--no-wait", sock=daemon.path)
    assert r.stdout.strip() == "scores: queued"
    assert daemon.calls[-1] == ("run", {"name": "scores", "wait": False})
    r = ctl(tmp_path, "run", "scores", "--json", sock=daemon.path)
    assert json.loads(r.stdout)["item_count"] == 25


def test_heal(tmp_path, daemon):
    r = ctl(tmp_path, "heal", "shop", sock=daemon.path)
    assert r.returncode == 0
    assert "shop: promoted version 4 by builtin; state ACTIVE" in r.stdout
    assert "price moved from td.price to span.cost" in r.stdout
    r = ctl(tmp_path, "heal", "shop", "--json", sock=daemon.path)
    assert json.loads(r.stdout)["outcome"] == "promoted"


def test_unquarantine(tmp_path, daemon):
    r = ctl(tmp_path, "unquarantine", "shop", "--reason", "site fixed", sock=daemon.path)
    assert r.returncode == 0 and "now DEGRADED" in r.stdout
    assert daemon.calls[-1] == ("unquarantine", {"name": "shop", "reason": "site fixed"})


# -- history / diff / rollback / approve ------------------------------------------------------------


def test_history(tmp_path, daemon):
    r = ctl(tmp_path, "history", "shop", sock=daemon.path)
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["AT", "KIND", "WHAT", "RESULT", "DETAIL"]
    assert "PARSE_ERROR via builtin" in lines[1] and "promoted" in lines[1]
    assert "v4 (builtin)" in lines[2] and "production" in lines[2]
    assert "v3 (human)" in lines[3] and "archived" in lines[3] and "registered (cli)" in lines[3]
    r = ctl(tmp_path, "history", "shop", "--json", sock=daemon.path)
    assert [h["kind"] for h in json.loads(r.stdout)] == ["fix", "version", "version"]


def test_diff_rollback_approve(tmp_path, daemon):
    r = ctl(tmp_path, "diff", "shop", sock=daemon.path)
    assert r.returncode == 0 and '+<span class="cost">' in r.stdout and "2026-11-22T09:00:00Z" in r.stdout
    r = ctl(tmp_path, "rollback", "shop", "--to", "2", sock=daemon.path)
    assert r.stdout.strip() == "shop: version 2 is in production (was 4)"
    assert daemon.calls[-1] == ("rollback", {"name": "shop", "to": 2})
    r = ctl(tmp_path, "rollback", "shop", sock=daemon.path)
    assert daemon.calls[-1] == ("rollback", {"name": "shop"})
    r = ctl(tmp_path, "approve", "shop", "5", sock=daemon.path)
    assert r.returncode == 0 and "version 5 approved" in r.stdout
    assert daemon.calls[-1] == ("approve", {"name": "shop", "version": 5})


# -- records ----------------------------------------------------------------------------------


def test_records_table_json_csv(tmp_path, daemon):
    r = ctl(tmp_path, "records", "scores", sock=daemon.path)
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NAME", "SCORE", "SCRAPED_AT", "VERSION"]
    assert len(lines) == 4 and "Bo, Jr." in lines[2]
    assert daemon.calls[-1] == ("records", {"name": "scores", "limit": 20})

    r = ctl(tmp_path, "records", "scores", "--json", "--limit", "1", sock=daemon.path)
    data = json.loads(r.stdout)
    assert len(data) == 1 and data[0]["data"][0] == {"name": "Ann", "score": 12}
    assert daemon.calls[-1] == ("records", {"name": "scores", "limit": 1})

    r = ctl(tmp_path, "records", "scores", "--csv", sock=daemon.path)
    rows = list(csv.reader(io.StringIO(r.stdout)))
    assert rows[0] == ["name", "score", "scraped_at", "version"]
    assert rows[1:] == [
        ["Ann", "12", "2026-11-22T10:00:00Z", "3"],
        ["Bo, Jr.", "", "2026-11-22T10:00:00Z", "3"],
        ["Ann", "11", "2026-11-22T09:45:00Z", "3"],
    ]


# -- alerts -------------------------------------------------------------------------------------


def test_alerts(tmp_path, daemon):
    r = ctl(tmp_path, "alerts", sock=daemon.path)
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert len(lines) == 2
    first = lines[0].split(None, 4)
    assert first == ["2026-11-22T10:00:00Z", "warning", "shop", "DEGRADED", "required field price is null"]
    r = ctl(tmp_path, "alerts", "--json", sock=daemon.path)
    assert [a["id"] for a in json.loads(r.stdout)] == [1, 2]


def test_alerts_follow_streams_until_ctrl_c(tmp_path, daemon):
    env = base_env()
    env["HEALERD_SOCKET"] = daemon.path
    p = subprocess.Popen([sys.executable, "-m", "healerd.cli.healerctl", "alerts", "--follow", "--json"],
                         cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        got = [json.loads(p.stdout.readline()) for _ in range(2)]
        assert [a["id"] for a in got] == [1, 2]
        with daemon.lock:
            daemon.alerts.append({"id": 3, "ts": "2026-11-22T11:00:00Z", "level": "warning", "source": "news",
                                  "event": "QUARANTINED", "message": "3 fix attempts failed", "details": {}})
        third = json.loads(p.stdout.readline())
        assert third["id"] == 3 and third["event"] == "QUARANTINED"
        assert ("alerts", {"after_id": 2}) in daemon.calls
        p.send_signal(signal.SIGINT)
        assert p.wait(30) == 0
        assert "Traceback" not in p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


# -- daemon-wide ------------------------------------------------------------------------------


def test_reload_and_resume_healing(tmp_path, daemon):
    r = ctl(tmp_path, "reload", sock=daemon.path)
    assert r.stdout.strip() == "reloaded: added news; changed none; removed old"
    r = ctl(tmp_path, "resume-healing", sock=daemon.path)
    assert r.returncode == 0 and r.stdout.strip() == "healing resumed"
    assert [c[0] for c in daemon.calls] == ["reload", "resume_healing"]


def test_memory(tmp_path, daemon):
    r = ctl(tmp_path, "memory", sock=daemon.path)
    assert r.returncode == 0
    assert r.stdout.splitlines()[0].split()[:3] == ["ID", "ERROR", "HOST"]
    assert "iss-1" in r.stdout and "0.90" in r.stdout and "price cell renamed" in r.stdout
    r = ctl(tmp_path, "memory", "--json", sock=daemon.path)
    assert json.loads(r.stdout)[0]["issue_id"] == "iss-1"
    r = ctl(tmp_path, "memory", "list", sock=daemon.path)
    assert "iss-1" in r.stdout
    r = ctl(tmp_path, "memory", "show", "iss-1", sock=daemon.path)
    assert r.returncode == 0 and "span.cost" in r.stdout and "fix applied: 3" in r.stdout
    r = ctl(tmp_path, "memory", "show", "iss-1", "--json", sock=daemon.path)
    assert json.loads(r.stdout)["fix_bundle"] == {"selectors": {"price": "span.cost"}}
    r = ctl(tmp_path, "memory", "forget", "iss-1", sock=daemon.path)
    assert r.stdout.strip() == "forgot iss-1"
    assert daemon.calls[-1] == ("memory_forget", {"id": "iss-1"})


def test_flatten_records_shapes():
    from healerd.cli.healerctl import _flatten_records

    header, rows = _flatten_records([
        {"scraped_at": "2026-11-22T10:00:00Z", "version": 2, "data": {"title": "A", "tags": ["x", "y"], "n": None}},
        {"scraped_at": "2026-11-22T09:00:00Z", "version": 1, "data": {"title": "B", "extra": 1.5}},
        {"scraped_at": "2026-11-22T08:00:00Z", "version": 1, "data": []},  # no items: no rows
    ])
    assert header == ["title", "tags", "n", "extra", "scraped_at", "version"]
    assert rows == [
        ["A", '["x","y"]', "", "", "2026-11-22T10:00:00Z", "2"],
        ["B", "", "", "1.5", "2026-11-22T09:00:00Z", "1"],
    ]
    # a field that is itself called "version" keeps its column; the record's gets a prefix
    header, rows = _flatten_records([{"scraped_at": "t", "version": 7, "data": [{"version": "v2.0"}]}])
    assert header == ["version", "scraped_at", "record_version"]
    assert rows == [["v2.0", "t", "7"]]
