"""A failing source's diagnosis context as the Doctor gives it to a healer: a page redesigned, its blueprint with planted secrets (URL password, API key, bearer token, session cookie), and the fixed blueprint."""

from __future__ import annotations

from healerd.core import errors
from healerd.core.blueprint import from_dict
from healerd.core.diagnosis import DiagnosisContext

API_KEY = "k9Qz7XwL2mN4pR8s"


SESSION = "sess-7f3a9c2e41b8d6"


BEARER = "sk-live-abc123DEF456ghi789"


PASSWORD = "hunter2pass"


HEALER_TOKEN = "healer-token-Zq81xYv"


OLD_PAGE = """<html><head><script>var secret = 1;</script><style>td{}</style></head><body>
<!-- build 42 -->
<table class="stats"><tr class="player"><td class="name">Ann</td><td class="score">12</td></tr>
<tr class="player"><td class="name">Bo</td><td class="score">7</td></tr></table></body></html>"""


NEW_PAGE = f"""<html><head><script>var token = "{BEARER}";</script></head><body>
<p>Signed in with session {SESSION}; key {API_KEY}</p>
<table class="league"><tr class="row-player"><td class="player-name">Ann</td><td class="pts">12</td></tr>
<tr class="row-player"><td class="player-name">Bo</td><td class="pts">7</td></tr></table></body></html>"""


SOURCE_URL = f"http://scorer:{PASSWORD}@127.0.0.1:8080/stats?api_key={API_KEY}&page=2"


BLUEPRINT = from_dict({
    "url": SOURCE_URL, "every": "15m", "items": "table.stats tr.player",
    "fields": {"name": {"css": "td.name"}, "score": {"css": "td.score", "type": "int"}},
    "headers": {"Authorization": f"Bearer {BEARER}", "X-Client": "scores"},
    "cookies": {"sessionid": SESSION},
})


FIXED = {"url": "http://127.0.0.1:8080/stats", "items": "table.league tr.row-player",
         "fields": {"name": {"css": "td.player-name"}, "score": {"css": "td.pts", "type": "int"}}}


def make_ctx(**over) -> DiagnosisContext:
    base = dict(
        source_name="scores", url=SOURCE_URL, blueprint=BLUEPRINT, version=1, error_type=errors.PARSE_ERROR,
        error_message=f"required field name is null in 2 of 2 items (cookie sessionid={SESSION})",
        failure_count=2, last_success_at=1_700_000_000.0, original_html=OLD_PAGE, current_html=NEW_PAGE,
        html_diff='- <table class="stats">\n+ <table class="league">\n- <td class="name">\n'
                  '+ <td class="player-name">',
        expected_schema={"name": "str", "score": "int"}, actual_output=[{"name": None, "score": None}] * 2,
        last_good_records=[{"name": "Ann", "score": 12}, {"name": "Bo", "score": 7}],
        validation_errors=["required field name is null in 2 of 2 items", "item count 0 (was 2)"],
        validation_report=f"FAILED: name null; Authorization: Bearer {BEARER}",
        previous_attempts=[{"strategy": "builtin", "outcome": "rejected", "reason": "no selector matched"}],
    )
    base.update(over)
    return DiagnosisContext(**base)
