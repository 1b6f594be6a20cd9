"""The external healer clients against real local HTTP servers (code-healer API and OpenAI-style)."""

from __future__ import annotations

import json

import pytest

from healerd.adapters.external import (
    CodeHealerClient,
    HealerConfig,
    build_request,
    encode_request,
    mask_url,
    redact_blueprint,
    sanitize_for_healer,
    secret_literals,
    tier_for,
    trim_page,
)
from healerd.adapters.openai_backend import OpenAIHealerClient, chat_url, files_from_answer, make_client
from healerd.adapters.prompt import build_messages
from healerd.adapters.sandbox import ParserRejected, run_parser
from healerd.core.blueprint import from_dict
from healerd.core.extract import extract
from tests.support.diagnosis_context import (
    API_KEY,
    BEARER,
    BLUEPRINT,
    FIXED,
    HEALER_TOKEN,
    NEW_PAGE,
    OLD_PAGE,
    PASSWORD,
    SESSION,
    SOURCE_URL,
    make_ctx,
)
from tests.support.healer_server import HealerServer


@pytest.fixture
def serve():
    started = []

    def make(answer, delay=0.0):
        s = HealerServer(answer, delay)
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()


def healed(files: dict, summary="selectors updated") -> tuple[int, bytes]:
    return 200, json.dumps({"status": "healed", "modified_files": files, "changes_summary": summary}).encode()


def client_for(server, **cfg) -> CodeHealerClient:
    return CodeHealerClient(HealerConfig(url=server.url, token=HEALER_TOKEN, **cfg))


def no_secret_in(raw: bytes) -> None:
    text = raw.decode("utf-8")
    for secret in (API_KEY, SESSION, BEARER, PASSWORD, HEALER_TOKEN, "scorer:"):
        assert secret not in text, f"secret {secret!r} reached the healer"


# ---------------------------------------------------------------- code-healer client


def test_a_healer_that_heals_gives_a_working_candidate(serve):
    server = serve(lambda req: healed({"blueprint.json": json.dumps(FIXED)}))
    res = client_for(server).heal_cycle(make_ctx(), 1, [])
    assert res.ok and res.outcome == "healed", res.reason
    assert res.http_status == 200 and res.cycle == 1 and res.changes_summary == "selectors updated"
    assert res.duration_ms > 0 and res.request_bytes == len(server.requests[0])
    bp = res.blueprint
    assert extract(NEW_PAGE, bp).data == [{"name": "Ann", "score": 12}, {"name": "Bo", "score": 7}]
    # The candidate keeps where and how the source is fetched.
    assert bp.url == SOURCE_URL and bp.headers == BLUEPRINT.headers and bp.cookies == BLUEPRINT.cookies
    assert bp.every == BLUEPRINT.every
    # The request is the code-healer API's shape plus tier and history.
    path, headers, raw = server.paths[0], server.headers[0], server.requests[0]
    body = json.loads(raw)
    assert path == "/api/heal" and headers["Content-Type"] == "application/json"
    assert body["project_id"] == "scores" and body["cycle"] == 1 and body["tier"] == "minimal"
    assert set(body["failed_files"]) == {"blueprint.json", "page.html", "diff.txt"}
    pe = body["pytest_errors"]
    assert pe["exit_code"] == 1 and pe["error_count"] == 2
    assert pe["error_summary"].startswith("PARSE_ERROR: required field name is null")
    assert "\n" not in pe["error_summary"]
    assert len(pe["stderr"]) <= 1000 and len(pe["stdout"]) <= 2000
    page = body["failed_files"]["page.html"]
    assert "player-name" in page and "<script" not in page
    assert json.loads(body["failed_files"]["blueprint.json"])["fields"]["name"]["css"] == "td.name"


def test_the_token_is_sent_but_never_reported(serve):
    # The healer answers 401 and echoes the token back: the reason must not carry it.
    server = serve(lambda req: (401, json.dumps({"status": "error",
                                                        "message": f"bad token {HEALER_TOKEN}"}).encode()))
    res = client_for(server).heal_cycle(make_ctx(), 1, [])
    assert server.headers[0]["Authorization"] == f"Bearer {HEALER_TOKEN}"
    assert res.outcome == "http_error" and res.http_status == 401 and "HTTP 401" in res.reason
    assert HEALER_TOKEN not in repr(res) and "bad token ***" in res.reason
    assert HEALER_TOKEN not in repr(HealerConfig(url="http://x", token=HEALER_TOKEN))
    # Without a token, no Authorization header at all.
    CodeHealerClient(HealerConfig(url=server.url)).heal_cycle(make_ctx(), 1, [])
    assert "Authorization" not in server.headers[1]


def test_no_source_secret_reaches_the_healer(serve):
    server = serve(lambda req: healed({"blueprint.json": json.dumps(FIXED)}))
    client = client_for(server)
    for cycle in (1, 3, 5):   # every tier, the deep one sends the last good page too
        client.heal_cycle(make_ctx(), cycle, [{"cycle": 1, "outcome": "refused",
                                               "reason": f"saw {API_KEY}", "changes_summary": ""}])
    for raw in server.requests:
        no_secret_in(raw)
        bp = json.loads(json.loads(raw)["failed_files"]["blueprint.json"])
        assert bp["headers"] == {"Authorization": "***", "X-Client": "***"} and bp["cookies"] == {"sessionid": "***"}
        assert bp["url"] == "http://***:***@127.0.0.1:8080/stats?api_key=***&page=2"


SHOP_URL = "http://shop.example/list"

SHOP_PAGE = f"""<html><body><p>Signed in with session {SESSION}; token {BEARER}</p>
<form><input type="hidden" name="cart" value="c4rt-99f1"></form>
<nav><a href="{SHOP_URL}?page=3">next</a> <a href="http://shop.example/os/linux">Linux</a></nav>
<table class="goods"><tr class="product"><td class="title">Mozilla mug</td><td class="price">12.50</td></tr>
</table></body></html>"""

SHOP = from_dict({
    "url": f"{SHOP_URL}?page=2", "every": "1h", "items": "table.items tr.item",
    "fields": {"title": {"css": "td.name"}, "price": {"css": "td.price", "type": "float"}},
    "headers": {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64)", "Referer": SHOP_URL,
                "Accept-Language": "en-US,en;q=0.9", "X-Client": "price", "Authorization": f"Bearer {BEARER}"},
    "cookies": {"sessionid": SESSION, "prefs": "theme=dark-mode&cart=c4rt-99f1"},
})


def test_harmless_headers_are_not_treated_as_secrets():
    lits = secret_literals(SHOP)
    assert BEARER in lits and f"Bearer {BEARER}" in lits and SESSION in lits
    assert "dark-mode" in lits and "c4rt-99f1" in lits   # cookie values, split on name=value pairs
    for harmless in ("price", "Linux", "x86_64)", "Mozilla/5.0", SHOP_URL, "en-US", "Bearer", "theme"):
        assert harmless not in lits, harmless
    # Only the credential after an auth scheme is split off; other secret headers count whole.
    lits = secret_literals(from_dict({"url": SHOP_URL, "fields": {"a": {"css": "a"}}, "headers": {
        "Authorization": "Token abcd1234", "X-Api-Key": "key part two", "Cookie": "sid=zz99yy88; lang=en"}}))
    assert {"abcd1234", "key part two", "zz99yy88"} <= set(lits)
    assert not {"part", "two", "Token", "sid", "lang"} & set(lits)


def test_a_source_with_harmless_headers_still_shows_its_page_to_the_healer(serve):
    server = serve(lambda req: (500, b"{}"))
    ctx = make_ctx(source_name="shop", url=f"{SHOP_URL}?page=2", blueprint=SHOP, current_html=SHOP_PAGE,
                   original_html=SHOP_PAGE.replace("goods", "items").replace("product", "item"),
                   html_diff='- <table class="items">\n+ <table class="goods">\n  <td class="price">',
                   error_message="required field title is null", validation_errors=["required field title is null"],
                   validation_report=f"FAILED: title null; Cookie: sessionid={SESSION}; price ok")
    client_for(server).heal_cycle(ctx, 5, [])
    raw = server.requests[0]
    text = raw.decode("utf-8")
    assert BEARER not in text and SESSION not in text and "c4rt-99f1" not in text
    files = json.loads(raw)["failed_files"]
    for name in ("page.html", "last_good.html"):
        page = files[name]
        assert '<td class="price">12.50</td>' in page and ">Linux</a>" in page and "Mozilla mug" in page, page
        assert f'href="{SHOP_URL}?page=3"' in page and 'href="http://shop.example/os/linux"' in page, page
    assert '<td class="price">' in files["diff.txt"]
    bp = json.loads(files["blueprint.json"])
    assert bp["fields"]["price"]["css"] == "td.price" and bp["url"] == f"{SHOP_URL}?page=2"
    messages = json.dumps(build_messages(ctx, 5, []))
    assert "td.price" in messages and SHOP_URL in messages and BEARER not in messages and SESSION not in messages


def test_two_requests_for_the_same_context_are_byte_identical(serve):
    server = serve(lambda req: (500, b"{}"))
    client = client_for(server)
    history = [{"cycle": 1, "outcome": "timeout", "reason": "timed out after 30s", "changes_summary": ""}]
    client.heal_cycle(make_ctx(), 2, history)
    client.heal_cycle(make_ctx(), 2, history)
    assert server.requests[0] == server.requests[1]
    assert server.requests[0] == encode_request(build_request(make_ctx(), 2, history, client.config))
    client.heal_cycle(make_ctx(), 3, history)
    assert server.requests[2] != server.requests[0]


def test_a_slow_healer_times_out_and_the_next_cycle_works(serve):
    slow = serve(lambda req: healed({"blueprint.json": json.dumps(FIXED)}), delay=3.0)
    res = client_for(slow, timeouts=(0.5, 5.0)).heal_cycle(make_ctx(), 1, [])
    assert not res.ok and res.outcome == "timeout" and res.reason == "timed out after 0.5s"
    assert res.http_status is None and res.blueprint is None
    fast = serve(lambda req: healed({"blueprint.json": json.dumps(FIXED)}))
    history = [{"cycle": 1, "outcome": res.outcome, "reason": res.reason, "changes_summary": ""}]
    res2 = client_for(fast, timeouts=(0.5, 5.0)).heal_cycle(make_ctx(), 2, history)
    assert res2.ok and res2.outcome == "healed"
    assert json.loads(fast.requests[0])["history"] == [{"cycle": 1, "outcome": "timeout"}]  # minimal tier


@pytest.mark.parametrize("status, body, outcome, reason", [
    (500, {"status": "error", "message": "Failed to generate fix: model returned invalid syntax"}, "http_error",
     "healer answered HTTP 500: Failed to generate fix: model returned invalid syntax"),
    (503, b"<html>down</html>", "http_error", "healer answered HTTP 503: <html>down</html>"),
    (504, {"status": "timeout", "message": "Healer timed out after 30s"}, "timeout", "timed out after 30s"),
    (200, b"{not json", "bad_response", "not JSON"),
    (200, [1, 2], "bad_response", "not a JSON object"),
    (200, {"status": "error", "message": "cannot fix"}, "bad_response", "status 'error': cannot fix"),
    (200, {"status": "healed"}, "bad_response", "no modified_files"),
    (200, {"status": "healed", "modified_files": {}}, "bad_response", "no modified_files"),
    (200, {"status": "healed", "modified_files": {"logic.py": "x = 1"}}, "bad_response",
     "neither blueprint.json nor parser.py"),
    (200, {"status": "healed", "modified_files": {"blueprint.json": "{oops"}}, "refused",
     "blueprint.json is not valid JSON"),
    (200, {"status": "healed", "modified_files": {"blueprint.json": json.dumps({"fields": {}})}}, "refused",
     "blueprint.json is not a valid blueprint: fields:"),
    (200, {"status": "healed", "modified_files": {"blueprint.json": json.dumps(
        {"fields": {"name": {"css": "td[[["}}})}}, "refused", "fields.name.css"),
    (200, {"status": "healed", "modified_files": {"blueprint.json": json.dumps(
        {"fields": {"name": {"css": "td", "type": "date"}}})}}, "refused", "fields.name.type"),
    (200, {"status": "healed", "modified_files": {"blueprint.json": json.dumps(
        dict(FIXED, url="http://evil.example/stats"))}}, "refused", "candidate moves the source to another host"),
    (200, {"status": "healed", "modified_files": {"blueprint.json": BLUEPRINT.to_json()}}, "refused",
     "unchanged"),
    (200, {"status": "healed", "modified_files": {"blueprint.json": json.dumps(FIXED) + " " * 3000}}, "refused",
     "(limit 2000)"),
])
def test_every_failure_is_a_cycle_result_with_a_reason(serve, status, body, outcome, reason):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    server = serve(lambda req: (status, raw))
    res = client_for(server, max_file_bytes=2000).heal_cycle(make_ctx(), 1, [])
    assert not res.ok and res.blueprint is None
    assert res.outcome == outcome and reason in res.reason, res.reason
    assert res.http_status == status and "\n" not in res.reason


def test_an_unreachable_healer_is_an_error_not_an_exception():
    res = CodeHealerClient(HealerConfig(url="http://127.0.0.1:9/api/heal", token=HEALER_TOKEN)).heal_cycle(
        make_ctx(), 1, [])
    assert not res.ok and res.outcome == "error" and "cannot reach the healer" in res.reason
    bad = CodeHealerClient(HealerConfig(url="http://127.0.0.1:9/api/heal")).heal_cycle(make_ctx(), 0, [])
    assert bad.outcome == "error" and "cycle must be" in bad.reason


def test_a_looping_parser_passes_the_check_and_is_killed_when_run(serve):
    loop = "import re\n\ndef parse(html):\n    while True:\n        pass\n"
    server = serve(lambda req: healed({"parser.py": loop}, "rewrote as a parser"))
    res = client_for(server).heal_cycle(make_ctx(), 1, [])
    assert res.ok and res.outcome == "healed" and res.blueprint.parser == loop
    with pytest.raises(ParserRejected, match="wall clock"):
        run_parser(res.blueprint.parser, NEW_PAGE, wall_seconds=1)


def test_a_parser_importing_os_is_refused(serve):
    evil = "import os\n\ndef parse(html):\n    return {'name': os.environ.get('HOME')}\n"
    server = serve(lambda req: healed({"parser.py": evil}))
    res = client_for(server).heal_cycle(make_ctx(), 1, [])
    assert res.outcome == "refused" and res.reason.startswith("parser.py is refused: parser imports 'os'")


def test_a_good_parser_candidate_runs_in_the_sandbox(serve):
    code = ("from selectolax.lexbor import LexborHTMLParser\n\ndef parse(html):\n"
            "    t = LexborHTMLParser(html)\n"
            "    return [{'name': r.css_first('td.player-name').text(), 'score': int(r.css_first('td.pts').text())}\n"
            "            for r in t.css('tr.row-player')]\n")
    server = serve(lambda req: healed({"parser.py": code}))
    res = client_for(server).heal_cycle(make_ctx(), 1, [])
    assert res.ok and res.blueprint.kind == "code" and res.blueprint.url == SOURCE_URL
    assert run_parser(res.blueprint.parser, NEW_PAGE) == [{"name": "Ann", "score": 12}, {"name": "Bo", "score": 7}]


def test_a_code_parser_source_sends_its_parser(serve):
    parser = "def parse(html):\n    return {'name': 'x'}\n"
    bp = from_dict({"url": "http://127.0.0.1:8080/x", "parser": parser, "fields": {"name": {"type": "str"}}})
    server = serve(lambda req: healed({"parser.py": parser.replace("'x'", "'y'")}))
    res = client_for(server).heal_cycle(make_ctx(blueprint=bp, url=bp.url), 1, [])
    files = json.loads(server.requests[0])["failed_files"]
    assert files["parser.py"] == parser and "parser" not in json.loads(files["blueprint.json"])
    assert res.ok and "'y'" in res.blueprint.parser


def test_a_code_parser_source_healed_with_both_files_keeps_the_new_parser(serve):
    # The code-healer API has healers return every file they touched: blueprint.json comes back
    # (without the parser it never carried) next to the rewritten parser.py.
    parser = "def parse(html):\n    return {'name': 'x'}\n"
    bp = from_dict({"url": "http://127.0.0.1:8080/x", "parser": parser, "fields": {"name": {"type": "str"}}})

    def answer(req):
        sent = req["failed_files"]["blueprint.json"]
        return healed({"blueprint.json": sent, "parser.py": parser.replace("'x'", "'y'")})

    server = serve(answer)
    res = client_for(server).heal_cycle(make_ctx(blueprint=bp, url=bp.url), 1, [])
    assert res.ok, res.reason
    assert res.blueprint.parser == parser.replace("'x'", "'y'") and res.blueprint.url == bp.url


def test_a_code_parser_source_healed_with_blueprint_json_alone_keeps_its_parser(serve):
    parser = "def parse(html):\n    return {'name': 'x', 'n': 1}\n"
    bp = from_dict({"url": "http://127.0.0.1:8080/x", "parser": parser, "fields": {"name": {"type": "str"}}})
    server = serve(lambda req: healed({"blueprint.json": json.dumps(
        {"fields": {"name": {"type": "str"}, "n": {"type": "int", "required": False}}})}))
    res = client_for(server).heal_cycle(make_ctx(blueprint=bp, url=bp.url), 1, [])
    assert res.ok, res.reason
    assert res.blueprint.parser == parser and set(res.blueprint.fields) == {"name", "n"}


def test_a_parser_with_a_forbidden_import_is_refused_in_both_files_too(serve):
    evil = "import os\n\ndef parse(html):\n    return {'name': os.getcwd()}\n"
    bp = from_dict({"url": "http://127.0.0.1:8080/x", "parser": "def parse(html):\n    return {'name': 'x'}\n",
                    "fields": {"name": {"type": "str"}}})
    server = serve(lambda req: healed({"blueprint.json": json.dumps({"fields": {"name": {}}}),
                                             "parser.py": evil}))
    res = client_for(server).heal_cycle(make_ctx(blueprint=bp, url=bp.url), 1, [])
    assert res.outcome == "refused" and res.reason.startswith("parser.py is refused: parser imports 'os'")


def test_tiers_escalate_with_the_cycle():
    assert [tier_for(c) for c in range(1, 7)] == ["minimal", "minimal", "context", "context", "deep", "deep"]
    history = [{"cycle": 1, "outcome": "refused", "reason": "no match", "changes_summary": "changed td"}]
    b1, b3, b5 = (build_request(make_ctx(), c, history) for c in (1, 3, 5))
    assert b1["history"] == [{"cycle": 1, "outcome": "refused"}] and "expected.json" not in b1["failed_files"]
    assert b3["history"][0]["reason"] == "no match" and "expected.json" in b3["failed_files"]
    assert "last_good.html" not in b3["failed_files"] and "previous_attempts" not in b3
    assert "last_good.html" in b5["failed_files"] and b5["previous_attempts"][0]["strategy"] == "builtin"
    assert HealerConfig().timeout_for(1) == 30 and HealerConfig().timeout_for(5) == 120
    assert HealerConfig().timeout_for(9) == 120


# ---------------------------------------------------------------- OpenAI-compatible backend


def chat_answer(content: str) -> tuple[int, bytes]:
    return 200, json.dumps({"id": "x", "choices": [{"index": 0, "message": {"role": "assistant",
                                                                               "content": content}}]}).encode()


def test_an_openai_compatible_server_heals(serve):
    content = "Here you go:\n```json\n" + json.dumps(FIXED, indent=2) + "\n```\nDone."
    server = serve(lambda req: chat_answer(content))
    client = OpenAIHealerClient(HealerConfig(url=server.base, token=HEALER_TOKEN, kind="openai", model="m-1"))
    res = client.heal_cycle(make_ctx(), 3, [])
    assert res.ok and res.outcome == "healed", res.reason
    assert extract(NEW_PAGE, res.blueprint).data == [{"name": "Ann", "score": 12}, {"name": "Bo", "score": 7}]
    path, headers, raw = server.paths[0], server.headers[0], server.requests[0]
    body = json.loads(raw)
    assert path == "/v1/chat/completions" and headers["Authorization"] == f"Bearer {HEALER_TOKEN}"
    assert body["model"] == "m-1" and body["temperature"] == 0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    user = body["messages"][1]["content"]
    assert "tier: context" in user and "## What Changed (HTML Diff)" in user and "## Expected Data Schema" in user
    assert "```json fenced block" in user
    no_secret_in(raw)
    client.heal_cycle(make_ctx(), 3, [])
    assert server.requests[1] == raw   # byte-identical again


@pytest.mark.parametrize("content, outcome, reason", [
    ("I cannot help with that.", "bad_response", "no fenced code block"),
    ("```python\nimport socket\ndef parse(html):\n    return {}\n```", "refused", "imports 'socket'"),
    ("```json\n{\"fields\": {\"name\": {\"css\": \"td.player-name\"}}, \"url\": \"https://other.test/\"}\n```",
     "refused", "another host"),
])
def test_openai_answers_are_checked_like_healer_answers(serve, content, outcome, reason):
    server = serve(lambda req: chat_answer(content))
    res = OpenAIHealerClient(HealerConfig(url=server.base + "/v1", kind="openai")).heal_cycle(make_ctx(), 1, [])
    assert res.outcome == outcome and reason in res.reason
    assert server.paths[0] == "/v1/chat/completions"


def test_openai_server_errors(serve):
    server = serve(lambda req: (429, json.dumps({"error": {"message": "rate limited"}}).encode()))
    res = OpenAIHealerClient(HealerConfig(url=server.base, kind="openai")).heal_cycle(make_ctx(), 1, [])
    assert res.outcome == "http_error" and "HTTP 429: rate limited" in res.reason
    server2 = serve(lambda req: (200, b'{"choices": []}'))
    res = OpenAIHealerClient(HealerConfig(url=server2.base, kind="openai")).heal_cycle(make_ctx(), 1, [])
    assert res.outcome == "bad_response" and "choices[0].message.content" in res.reason


def test_chat_url_and_fenced_blocks():
    assert chat_url("http://h:1") == "http://h:1/v1/chat/completions"
    assert chat_url("http://h:1/v1/") == "http://h:1/v1/chat/completions"
    assert chat_url("http://h/openai/v1/chat/completions") == "http://h/openai/v1/chat/completions"
    assert files_from_answer("```\n{\"a\": 1}\n```") == {"blueprint.json": "{\"a\": 1}\n"}
    parser = "def parse(h):\n  return {}\n"
    assert files_from_answer(f"x\n```py\n{parser}```") == {"parser.py": parser}
    assert files_from_answer("no block") is None


def test_make_client_picks_the_backend(monkeypatch):
    assert make_client(HealerConfig()) is None
    assert isinstance(make_client(HealerConfig(url="http://h")), CodeHealerClient)
    assert isinstance(make_client(HealerConfig(url="http://h", kind="openai", model="m")), OpenAIHealerClient)
    with pytest.raises(ValueError, match="kind"):
        make_client(HealerConfig(url="http://h", kind="carrier-pigeon"))
    monkeypatch.setenv("CODE_HEALER_URL", "http://env-healer/api/heal")
    monkeypatch.setenv("CODE_HEALER_TOKEN", "from-env")
    cfg = HealerConfig.from_env(HealerConfig(url="http://file", timeouts=(1, 2), kind="openai", model="m"))
    assert cfg.url == "http://env-healer/api/heal" and cfg.token == "from-env" and cfg.timeouts == (1, 2)
    assert cfg.kind == "openai" and cfg.model == "m"
    monkeypatch.delenv("CODE_HEALER_URL")
    assert HealerConfig.from_env(HealerConfig(url="http://file")).url == "http://file"


def test_the_prompt_tiers():
    m1 = build_messages(make_ctx(), 1, [{"cycle": 1, "outcome": "refused", "reason": "x"}])[1]["content"]
    m5 = build_messages(make_ctx(), 5, [{"cycle": 4, "outcome": "refused", "reason": "nothing matched"}])[1]["content"]
    assert "tier: minimal" in m1 and "smallest selector change" in m1 and "## Validation Report" not in m1
    assert "- cycle 1: refused" in m1 and "nothing matched" not in m1
    assert "tier: deep" in m5 and "root cause" in m5 and "nothing matched" in m5
    assert "earlier builtin repair: rejected" in m5 and "```python" in m5
    for text in (m1, m5):
        for secret in (API_KEY, SESSION, BEARER, PASSWORD):
            assert secret not in text


# ---------------------------------------------------------------- secrets


@pytest.mark.parametrize("text, secret", [
    ("Authorization: Bearer sk-abc123def456ghi789", "sk-abc123def456ghi789"),
    ("header bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "eyJhbGciOiJIUzI1NiJ9"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
    ("fetch https://alice:s3cretpw@example.com/x", "s3cretpw"),
    ("fetch https://alice:s3cretpw@example.com/x", "alice"),
    ("GET /data?api_key=abcd1234&page=2", "abcd1234"),
    ("GET /data?access_token=tok_zz99&x=1", "tok_zz99"),
    ("Cookie: sessionid=abcdef123; csrftoken=zzz", "abcdef123"),
    ("Set-Cookie: sid=31d4d96e407aad42; Path=/", "31d4d96e407aad42"),
    ("sessionid=q1w2e3r4 was used", "q1w2e3r4"),
    ('{"password": "hunter2", "user": "bob"}', "hunter2"),
    ("key AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE"),
    ("value 0123456789abcdef0123456789abcdef0123 here", "0123456789abcdef0123456789abcdef0123"),
    ("b64 aGVsbG8gd29ybGQgdGhpcyBpcyBhIHRlc3Q9Pz8/ here", "aGVsbG8gd29ybGQgdGhpcyBpcyBhIHRlc3Q9Pz8/"),
    ("k sk-live-4eC39HqLyjWDarjtT1zdp7dc8dLx9kQ2 k", "4eC39HqLyjWDarjtT1zdp7dc8dLx9kQ2"),
    ("write to john.doe+x@example.co.uk today", "john.doe"),
])
def test_sanitize_masks_secrets(text, secret):
    out = sanitize_for_healer(text)
    assert secret not in out and "***" in out


@pytest.mark.parametrize("text", [
    '<td class="player-name">Bob</td><a href="/p/12">x</a> <div data-sort-key="score">',
    "the-quick-brown-fox-jumps-over-the-lazy-dog-2023",
    "ReallyLongCamelCaseClassNameForComponentsX1",
    "/images/products/2023/big-sale-banner-final-version-large.jpg",
    "basic information about Basic Auth",
    "table.league tr.row-player > td:nth-child(2)",
])
def test_sanitize_leaves_ordinary_text_alone(text):
    assert sanitize_for_healer(text) == text


def test_literal_secrets_and_redaction():
    lits = secret_literals(BLUEPRINT, SOURCE_URL)
    for secret in (API_KEY, SESSION, BEARER, PASSWORD):
        assert secret in lits
    assert sanitize_for_healer(f"x {SESSION} y short", lits) == "x *** y short"
    red = redact_blueprint(BLUEPRINT)
    assert BEARER not in json.dumps(red) and red["fields"] == BLUEPRINT.to_dict()["fields"]
    assert mask_url("http://h/x?page=2&token=abc") == "http://h/x?page=2&token=***"
    assert mask_url("http://u:p@h/") == "http://***:***@h/"


def test_trim_page_removes_scripts_styles_and_comments():
    out = trim_page(OLD_PAGE + "<svg><path d='M0'/></svg><noscript>n</noscript>", 10_000)
    assert "var secret" not in out and "td{}" not in out and "build 42" not in out
    assert "<svg" not in out and "noscript" not in out and 'class="name"' in out
    assert len(trim_page(NEW_PAGE * 100, 500)) == 500


def test_a_code_healer_is_told_what_the_parser_check_refuses():
    from healerd.adapters.prompt import PARSER_RULES

    bp = from_dict({"url": "http://127.0.0.1:8080/x", "parser": "def parse(html):\n    return {'name': 'x'}\n",
                    "fields": {"name": {"type": "str"}}})
    text = build_messages(make_ctx(blueprint=bp, url=bp.url), 1, [])[1]["content"]
    assert PARSER_RULES in text and "rebind any built-in name" in text
    assert PARSER_RULES in build_messages(make_ctx(), 5, [])[1]["content"]   # the deep tier may answer code
    assert PARSER_RULES not in build_messages(make_ctx(), 1, [])[1]["content"]
