"""The external healer end to end: the real daemon subprocess, a real local site, real healer servers.

The ladder is `["external"]` so every candidate comes from the healer under test. Each case
checks what was recorded (fix_history, healer_calls, `healerctl history --json`), that the
daemon is still running, and that production moved only when a candidate validated.
"""

from __future__ import annotations

import json
import threading

import pytest

from tests.support.daemon import db_rows
from tests.support.external_heal import (
    FIXED,
    HEALER_TOKEN,
    add_and_break,
    assert_running,
    code_answer,
    fix_rows,
    healed_version,
    healer_calls,
    healer_config,
    production_versions,
)
from tests.support.healer_server import HealerServer, healed
from tests.support.sitepages import LISTING_BP, listing_v2


def assert_promoted_by_external(d, v, name="stats"):
    """Production is version v from the external healer, v1 archived, and records come from v."""
    assert production_versions(d, name) == [v]
    d.wait_for(lambda: d.ctl_json("records", name)[0]["version"] == v, what="records from the healed version")
    rec = d.ctl_json("records", name)[0]
    assert rec["data"][0] == {"name": "Ada", "score": 31} and len(rec["data"]) == 5
    hist = d.ctl_json("history", name)
    fixes = [h for h in hist if h["kind"] == "fix"]
    assert fixes[0]["outcome"] == "promoted" and fixes[0]["strategy"] == "external", fixes
    versions = {h["version"]: h for h in hist if h["kind"] == "version"}
    assert versions[v]["status"] == "production" and versions[v]["origin"] == "external"
    assert versions[1]["status"] == "archived"
    assert any(a["event"] == "HEALED" and a["source"] == name for a in d.alerts())


# ------------------------------------------------------------------------- a healer that heals


def test_a_healer_that_heals_is_promoted_and_records_flow(site, daemon_factory, tmp_path):
    healer = HealerServer(lambda req: healed(FIXED, "renamed classes"))
    try:
        d = daemon_factory(healer_config(healer.url, token=HEALER_TOKEN)).start()
        add_and_break(d, site, tmp_path)
        v = d.wait_for(lambda: healed_version(d), what="the external fix to be promoted")
        assert_promoted_by_external(d, v)
        # One call, cycle 1, the code-healer API's request shape, the token as a bearer.
        assert [json.loads(r)["cycle"] for r in healer.requests] == [1]
        body = json.loads(healer.requests[0])
        assert body["project_id"] == "stats" and body["tier"] == "minimal"
        assert {"blueprint.json", "page.html", "diff.txt"} <= set(body["failed_files"])
        assert "player-name" in body["failed_files"]["page.html"]
        assert body["pytest_errors"]["error_summary"].startswith(("PARSE_ERROR", "SCHEMA_MISMATCH"))
        assert healer.headers[0]["Authorization"] == f"Bearer {HEALER_TOKEN}"
        calls = healer_calls(d)
        assert [(c["cycle"], c["backend"], c["outcome"], c["http_status"]) for c in calls] == \
            [(1, "code-healer", "healed", 200)]
        fixes = fix_rows(d)
        assert [(f["strategy"], f["outcome"], f["deployed_to"], f["version"]) for f in fixes] == \
            [("external", "promoted", "PRODUCTION", v)]
        # A promoted external fix is remembered for the source's siblings.
        assert len(d.ctl_json("memory")) == 1
        assert HEALER_TOKEN not in d.log() and HEALER_TOKEN not in json.dumps(d.alerts())
        assert_running(d)
    finally:
        healer.stop()


# ------------------------------------------------------------------------- a slow healer


def test_a_healer_that_times_out_uses_the_next_cycle(site, daemon_factory, tmp_path):
    # Cycle 1's answer is held back until cycle 2 has arrived: the daemon can only get
    # there by giving up on cycle 1 after its own timeout (1s), never by waiting for it.
    cycle2_arrived = threading.Event()
    cycle1_answered_late = []

    def answer(req):
        if req["cycle"] == 1:
            cycle1_answered_late.append(cycle2_arrived.wait(60))
            return healed(FIXED, "too late")
        cycle2_arrived.set()
        return healed(FIXED, "second cycle")

    healer = HealerServer(answer)
    try:
        d = daemon_factory(healer_config(healer.url, timeouts="[1, 5]", cycles=2)).start()
        add_and_break(d, site, tmp_path)
        v = d.wait_for(lambda: healed_version(d), what="the fix from cycle 2")
        assert_promoted_by_external(d, v)
        bodies = [json.loads(r) for r in healer.requests]
        assert [b["cycle"] for b in bodies] == [1, 2]
        assert [b["tier"] for b in bodies] == ["minimal", "minimal"]
        # Cycle 2 is told that cycle 1 timed out (the minimal tier sends outcomes only).
        assert bodies[0]["history"] == [] and bodies[1]["history"] == [{"cycle": 1, "outcome": "timeout"}]
        calls = healer_calls(d)
        assert [(c["cycle"], c["outcome"]) for c in calls] == [(1, "timeout"), (2, "healed")]
        assert calls[0]["reason"] == "timed out after 1s" and calls[0]["http_status"] is None
        assert calls[0]["duration_ms"] >= 1000   # it did wait for the cycle's whole timeout
        fixes = fix_rows(d)
        assert [(f["strategy"], f["outcome"]) for f in fixes] == [("external", "promoted")]
        d.wait_for(lambda: cycle1_answered_late, what="the held-back cycle 1 answer")
        assert cycle1_answered_late == [True]
        assert_running(d)
    finally:
        cycle2_arrived.set()
        healer.stop()


# ------------------------------------------------------------------------- healers that fail

LOOPING_PARSER = "import re\n\ndef parse(html):\n    while True:\n        pass\n"
OS_PARSER = "import os\n\ndef parse(html):\n    return [{'name': os.getcwd(), 'score': '1'}]\n"
NOT_VALIDATING = dict(LISTING_BP, items="table.league-table tr.row-player",
                      fields={"name": {"css": "td.player-name"}, "score": {"css": "td.no-such-cell", "type": "int"}})


FAILING = {
    # id: (answer, healer_calls outcome, reason in healer_calls, a version was staged and rejected, fix reason)
    "http-500": (lambda req: (500, json.dumps({"status": "error", "message": "model crashed"}).encode()),
                 "http_error", "healer answered HTTP 500: model crashed", False, "http_error"),
    "broken-json": (lambda req: (200, b'{"status": "healed", "modified_files": {'),
                    "bad_response", "not JSON", False, "bad_response"),
    "does-not-validate": (lambda req: healed(NOT_VALIDATING), "healed", "a candidate blueprint", True,
                          "external cycle 1: rejected"),
    "looping-parser": (lambda req: code_answer({"parser.py": LOOPING_PARSER}), "healed", "a candidate parser", True,
                       "the candidate parser failed on the live page"),
    "imports-os": (lambda req: code_answer({"parser.py": OS_PARSER}), "refused",
                   "parser.py is refused: parser imports 'os'", False, "refused"),
}


@pytest.mark.parametrize("case", list(FAILING))
def test_a_failing_healer_is_recorded_and_production_is_untouched(case, site, daemon_factory, tmp_path):
    answer, call_outcome, call_reason, staged, fix_reason = FAILING[case]
    healer = HealerServer(answer)
    try:
        d = daemon_factory(healer_config(healer.url, attempts=1)).start()
        add_and_break(d, site, tmp_path)
        # One attempt allowed: when it fails the source is quarantined and stays put.
        st = d.wait_for(lambda: (s := d.ctl_json("status", "stats"))["state"] == "QUARANTINED" and s, timeout=60,
                        what="the failed attempt to quarantine the source")
        assert st["version"] == 1
        assert production_versions(d) == [1]
        assert [json.loads(r)["cycle"] for r in healer.requests] == [1]
        calls = healer_calls(d)
        assert len(calls) == 1 and calls[0]["cycle"] == 1 and calls[0]["outcome"] == call_outcome, calls
        assert call_reason in calls[0]["reason"], calls[0]["reason"]
        fixes = fix_rows(d)
        assert len(fixes) == 1, fixes
        assert fixes[0]["strategy"] == "external" and fixes[0]["outcome"] == "rejected", fixes
        assert fixes[0]["deployed_to"] == "FAILED" and fix_reason in fixes[0]["reason"], fixes[0]["reason"]
        rejected = db_rows(d, "SELECT version, origin, note FROM parser_versions WHERE source_name = 'stats' "
                              "AND status = 'rejected'")
        if staged:
            assert [(r["version"], r["origin"]) for r in rejected] == [(2, "external")]
        else:
            assert rejected == []
        hist = d.ctl_json("history", "stats")
        hfix = [h for h in hist if h["kind"] == "fix"]
        assert len(hfix) == 1 and hfix[0]["strategy"] == "external" and hfix[0]["outcome"] == "rejected"
        assert fix_reason in hfix[0]["reason"]
        hver = {h["version"]: h["status"] for h in hist if h["kind"] == "version"}
        assert hver == ({1: "production", 2: "rejected"} if staged else {1: "production"})
        # Records still come from version 1 (the page no longer passes, so none are new, but none are wrong).
        assert all(r["version"] == 1 for r in d.ctl_json("records", "stats"))
        events = [a["event"] for a in d.alerts() if a["source"] == "stats"]
        assert "QUARANTINED" in events and "HEALED" not in events
        assert d.ctl_json("memory") == []
        assert_running(d)
    finally:
        healer.stop()


# ------------------------------------------------------------------------- an OpenAI-compatible server


def chat_answer(content: str):
    """An OpenAI-compatible chat-completions answer carrying `content`, for HealerServer."""
    body = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "model": "tiny-coder",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content}}]}).encode()
    return lambda req: (200, body)


def test_an_openai_compatible_server_heals(site, daemon_factory, tmp_path):
    answer = "Here is the fix:\n```json\n" + json.dumps({k: v for k, v in FIXED.items() if k != "every"},
                                                       indent=2) + "\n```\n"
    chat = HealerServer(chat_answer(answer))   # the same real server, answering as a chat-completions API
    try:
        d = daemon_factory(healer_config(chat.base, kind="openai", model="tiny-coder", token=HEALER_TOKEN)).start()
        add_and_break(d, site, tmp_path)
        v = d.wait_for(lambda: healed_version(d), what="the model's fix to be promoted")
        assert_promoted_by_external(d, v)
        assert len(chat.requests) == 1
        path, headers, raw = chat.paths[0], chat.headers[0], chat.requests[0]
        assert path == "/v1/chat/completions"
        assert headers["Authorization"] == f"Bearer {HEALER_TOKEN}"
        body = json.loads(raw)
        assert body["model"] == "tiny-coder" and body["temperature"] == 0
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        user = body["messages"][1]["content"]
        assert "Name: stats" in user and "tier: minimal" in user and "player-name" in user
        calls = healer_calls(d)
        assert [(c["cycle"], c["backend"], c["outcome"]) for c in calls] == [(1, "openai", "healed")]
        assert [(f["strategy"], f["outcome"]) for f in fix_rows(d)] == [("external", "promoted")]
        assert_running(d)
    finally:
        chat.stop()


# ------------------------------------------------------------------------- secrets

BEARER = "sk-live-9fQ2xLmZ7rT4vB1n"
SESSION = "sess-5c1e8a0b7d2f4e93"
API_KEY = "ak-3Hq8ZpW1rN6tYc0d"
SECRETS = (BEARER, SESSION, API_KEY, HEALER_TOKEN)


def secret_page() -> str:
    """The redesigned listing, showing the session and a link that carries the api key."""
    return listing_v2().replace(
        '<div class="wrap">',
        f'<div class="wrap"><p class="who">Signed in, session {SESSION}</p>'
        f'<a href="/stats?api_key={API_KEY}&page=2">next</a>')


def test_no_secret_reaches_the_healer_the_alerts_the_log_or_the_memory(site, daemon_factory, tmp_path):
    healer = HealerServer(lambda req: healed(FIXED, "selectors updated"))
    bp = dict(LISTING_BP, headers={"Authorization": f"Bearer {BEARER}", "X-Client": "scores"},
              cookies={"sessionid": SESSION})
    try:
        d = daemon_factory(healer_config(healer.url, token=HEALER_TOKEN)).start()
        add_and_break(d, site, tmp_path, path=f"/stats?api_key={API_KEY}&page=1", bp=bp, new_page=secret_page())
        v = d.wait_for(lambda: healed_version(d), what="the external fix to be promoted")
        assert_promoted_by_external(d, v)
        # The healer was asked, with the source's secrets masked everywhere in what it received.
        assert len(healer.requests) == 1
        raw = healer.requests[0].decode()
        sent_headers = json.dumps(healer.headers[0])
        for secret in (BEARER, SESSION, API_KEY):
            assert secret not in raw, f"{secret!r} reached the healer's request body"
            assert secret not in sent_headers, f"{secret!r} reached the healer's request headers"
        body = json.loads(raw)
        sent_bp = json.loads(body["failed_files"]["blueprint.json"])
        assert sent_bp["headers"] == {"Authorization": "***", "X-Client": "***"}
        assert sent_bp["cookies"] == {"sessionid": "***"}
        assert "api_key=***" in sent_bp["url"] and "page=1" in sent_bp["url"]
        assert "Signed in, session ***" in body["failed_files"]["page.html"]
        # The healer's own token is sent to it, and nowhere else.
        assert healer.headers[0]["Authorization"] == f"Bearer {HEALER_TOKEN}"
        # The promoted version still sends the source's secrets (the healer cannot change them).
        status = d.ctl_json("status", "stats")
        assert status["version"] == v
        prod = db_rows(d, "SELECT body FROM parser_versions WHERE source_name = 'stats' AND status = 'production'")
        prod_bp = json.loads(prod[0]["body"])
        assert prod_bp["headers"]["Authorization"] == f"Bearer {BEARER}" and prod_bp["cookies"]["sessionid"] == SESSION
        # Nothing a person or another program reads carries a secret.
        issues = d.ctl_json("memory")
        assert len(issues) == 1
        shown = d.ctl_json("memory", "show", issues[0]["issue_id"])
        readable = {
            "alerts.jsonl": (d.state / "alerts.jsonl").read_text(),
            "daemon log": d.log(),
            "healerctl memory --json": json.dumps(issues),
            "healerctl memory show --json": json.dumps(shown),
            "healerctl memory show": d.ctl("memory", "show", issues[0]["issue_id"]).stdout,
            "healerctl memory": d.ctl("memory").stdout,
            "healerctl history --json": json.dumps(d.ctl_json("history", "stats")),
            "healerctl alerts --json": d.ctl("alerts", "--json").stdout,
        }
        for where, text in readable.items():
            assert text, where
            for secret in SECRETS:
                assert secret not in text, f"{secret!r} found in {where}"
        assert_running(d)
    finally:
        healer.stop()


def test_the_same_context_sends_byte_identical_requests(site, daemon_factory, tmp_path):
    # Within one daemon the second attempt carries the first in its history, so the context
    # differs by design. The same context arises in two daemons on the same site and source.
    healer = HealerServer(lambda req: (500, b'{"status": "error", "message": "busy"}'))
    try:
        firsts = []
        for run in ("a", "b"):
            d = daemon_factory(healer_config(healer.url, attempts=1), sub=run).start()
            add_and_break(d, site, d.tmp)
            d.wait_for(lambda: d.ctl_json("status", "stats")["state"] == "QUARANTINED", timeout=60,  # noqa: B023 - called within this iteration
                       what=f"run {run}: the failed attempt")
            firsts.append(len(healer.requests))
            d.stop()
        assert firsts == [1, 2]
        a, b = healer.requests
        assert json.loads(a)["cycle"] == 1 and json.loads(a)["project_id"] == "stats"
        assert a == b
    finally:
        healer.stop()
