"""The client of an external code healer (docs/HEALER_API.md), and what both backends share.

One call = one healing cycle: build the request from the DiagnosisContext (every
text masked of secrets first), POST it with the cycle's timeout, and turn the
answer into a CycleResult holding a candidate Blueprint, or a clear reason why
there is none. `heal_cycle` never raises.

Escalation (cheapest first): cycles 1-2 ask for a minimal fix, 3-4 send the full
context, 5 asks for a deep analysis with every previous attempt.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from healerd.adapters.fetch import tls_context
from healerd.adapters.peer import PeerRefused, allowed_uids, guarded_client
from healerd.adapters.sandbox import ParserRejected, check_parser_source
from healerd.core.blueprint import Blueprint, BlueprintError, from_dict
from healerd.core.diagnosis import DiagnosisContext
from healerd.core.peers import plain_secret_refusal, request_url, split_unix_url
from healerd.core.sanitize import MIN_LITERAL, mask_text, mask_url, reveal, secret_values
from healerd.core.selector_bounds import SelectorRefused, check_blueprint

MASK = "***"
TIERS = ("minimal", "context", "deep")
# `untrusted`: nothing was sent, the other end is not trusted with the request (adapters/peer.py).
OUTCOMES = ("healed", "timeout", "http_error", "bad_response", "refused", "error", "untrusted")


@dataclass
class HealerConfig:
    url: str = ""                 # or env CODE_HEALER_URL; http(s)://... or unix:/path/to.sock[:/request/path]
    token: str = ""               # or env CODE_HEALER_TOKEN: sent as Authorization: Bearer
    timeouts: tuple[float, ...] = (30, 45, 60, 90, 120)   # per cycle, seconds
    kind: str = "code-healer"     # or "openai"
    model: str = ""               # for kind="openai"
    max_page_chars: int = 60_000  # page.html cut to this after trimming scripts/styles
    max_file_bytes: int = 2_000_000   # a modified file larger than this is refused
    allowed_user: str = ""        # besides root and the daemon's user, who may serve a local healer

    @classmethod
    def from_env(cls, base: HealerConfig) -> HealerConfig:
        """`base` with CODE_HEALER_URL / CODE_HEALER_TOKEN applied when they are set."""
        return cls(url=os.environ.get("CODE_HEALER_URL") or base.url,
                   token=os.environ.get("CODE_HEALER_TOKEN") or base.token,
                   timeouts=tuple(base.timeouts), kind=base.kind, model=base.model,
                   max_page_chars=base.max_page_chars, max_file_bytes=base.max_file_bytes,
                   allowed_user=base.allowed_user)

    def timeout_for(self, cycle: int) -> float:
        """The cycle's timeout: timeouts[cycle-1], clamped to the last one."""
        if not self.timeouts:
            return 30.0
        return float(self.timeouts[min(max(cycle, 1), len(self.timeouts)) - 1])

    def __repr__(self) -> str:  # the token never shows up in a repr or a log line
        return (f"HealerConfig(url={mask_url(self.url)!r}, token={'***' if self.token else ''!r}, "
                f"timeouts={self.timeouts!r}, kind={self.kind!r}, model={self.model!r})")


@dataclass
class CycleResult:
    cycle: int
    ok: bool
    outcome: str                  # healed | timeout | http_error | bad_response | refused | error | untrusted
    reason: str                   # one clear line
    blueprint: Blueprint | None   # the candidate
    changes_summary: str
    http_status: int | None
    duration_ms: float
    request_bytes: int


def tier_for(cycle: int) -> str:
    """The escalation: 1-2 minimal, 3-4 context, 5 and later deep."""
    if cycle <= 2:
        return "minimal"
    if cycle <= 4:
        return "context"
    return "deep"


# ---------------------------------------------------------------- secrets

_SECRET_KEY = (r"(?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|id[_-]?token|token|"
               r"secret|client[_-]?secret|password|passwd|pwd|passphrase|session[_-]?id|sessionid|sessid|sid|"
               r"sig|signature|auth|authorization|credentials?|jwt|private[_-]?key|key|csrf[_-]?token|xsrf[_-]?token)")
_SECRET_NAME = re.compile(rf"(?i)^[\w.-]*{_SECRET_KEY}$")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s@?#\"'<>]+)@")
_BEARER = re.compile(r"(?i)\b(bearer)(\s+)([A-Za-z0-9\-._~+/]{6,}=*)")
_BASIC = re.compile(r"(?i)\b(basic|digest)(\s+)([A-Za-z0-9+/]{8,}={0,2})(?![\w+/=])")
_HEADER_LINE = re.compile(r"(?im)\b((?:proxy-)?authorization|(?:set-)?cookie|x-api-key|api-key|x-auth-token)"
                          r"(\s*[:=]\s*)([^\r\n\"']+)")
_QUOTED_KV = re.compile(rf"(?i)([\"'][\w.-]*{_SECRET_KEY}[\"']\s*:\s*[\"'])([^\"'\r\n]+)([\"'])")
_KV = re.compile(rf"(?i)(?<![\w.-])([\w.-]*{_SECRET_KEY}=)([^&\s\"'<>;,]+)")
_AWS = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")


def _char_class(c: str) -> str:
    return "u" if c.isupper() else "l" if c.islower() else "d" if c.isdigit() else "o"


def _looks_random(s: str) -> bool:
    """Is a long token a key (hex, base64, base36) rather than a word, a slug or a CamelCase name?

    Keys switch between upper case, lower case and digits far more often than names do,
    and hold few long lower-case runs (words). About 1 % of random base64 keys escape
    this test; the source's own secrets are masked exactly, by value, anyway.
    """
    core = s.rstrip("=")
    has_digit = any(c.isdigit() for c in core)
    if re.fullmatch(r"[0-9a-fA-F]+", core):
        return has_digit and any(c.isalpha() for c in core)
    if core.isalnum() and has_digit and any(c.isalpha() for c in core) and \
            sum(c.isdigit() for c in core) / len(core) >= 0.2:
        return True
    switches = sum(_char_class(a) != _char_class(b) for a, b in zip(core, core[1:])) / max(1, len(core) - 1)
    words = sum(len(m) for m in re.findall(r"[a-z]{5,}", core)) / len(core)
    parts = core.strip("-").split("-")
    slug = len(parts) >= 3 and all(
        len(p) <= 3 or sum(len(m) for m in re.findall(r"[A-Z]?[a-z]{3,}", p)) >= 0.5 * len(p) for p in parts)
    return switches >= 0.35 and words <= 0.3 and not slug


def _looks_encoded(s: str) -> bool:
    """A base64 credential rather than an ordinary word (after "Basic")."""
    return s.endswith("=") or any(c.isdigit() for c in s) or _looks_random(s) or \
        (any(c.isupper() for c in s[1:]) and any(c.islower() for c in s))


def _mask_userinfo(m: re.Match) -> str:
    return m.group(1) + (f"{MASK}:{MASK}@" if ":" in m.group(2) else f"{MASK}@")


def sanitize_for_healer(text: str, literals: tuple[str, ...] | list[str] = ()) -> str:
    """`text` with secrets masked as ***: every string in `literals` (the source's own
    header/cookie/URL secrets), bearer/basic tokens, auth and cookie header values,
    secret-looking key=value pairs (api_key=..., sessionid=..., "password": "..."),
    credentials in URLs, AWS access keys, then everything `mask_text` masks in logs and the
    fix memory (GitHub/Slack/Stripe tokens, `password: x`, secret query parameters, emails,
    long random-looking keys), so both sides catch the same secrets and keep the same
    ordinary text (class names, hashed file names, UUIDs)."""
    if not text:
        return text or ""
    for lit in sorted({x for x in literals if x and len(x) >= MIN_LITERAL}, key=len, reverse=True):
        text = text.replace(lit, MASK)
    text = _URL_USERINFO.sub(_mask_userinfo, text)
    text = _HEADER_LINE.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    text = _BEARER.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    text = _BASIC.sub(lambda m: m.group(1) + m.group(2) + MASK if _looks_encoded(m.group(3)) else m.group(0), text)
    text = _QUOTED_KV.sub(lambda m: m.group(1) + MASK + m.group(3), text)
    text = _KV.sub(lambda m: m.group(1) + MASK, text)
    text = _AWS.sub(MASK, text)
    return mask_text(text)


def secret_literals(bp: Blueprint, url: str | None = None) -> tuple[str, ...]:
    """The literal secret values a source's blueprint holds (`sanitize.secret_values`: cookie
    values, secret-named header values, URL credentials, secret query values), for `bp.url`
    and `url`."""
    found = set(secret_values(bp.url, bp.headers, bp.cookies))
    if url:
        found.update(secret_values(url))
    return tuple(sorted(found))


def redact_blueprint(bp: Blueprint, with_parser: bool = False) -> dict[str, Any]:
    """The blueprint's dict form (Blueprint.to_dict) with no secret left: header/cookie values become ***,
    URL credentials and secret query values are masked. The parser is left out unless asked."""
    d = bp.to_dict()
    if d.get("url"):
        d["url"] = mask_url(d["url"])
    if bp.headers:
        d["headers"] = {k: MASK for k in bp.headers}
    if bp.cookies:
        d["cookies"] = {k: MASK for k in bp.cookies}
    if not with_parser:
        d.pop("parser", None)
    return d


# ---------------------------------------------------------------- request


def trim_page(html: str | None, max_chars: int) -> str:
    """The page without script/style/noscript/svg elements, comments and the text of hidden nodes
    (`visible.visible_html`: what a browser would not render is not sent), cut to `max_chars`."""
    if not html:
        return ""
    try:
        from selectolax.lexbor import LexborHTMLParser

        from healerd.core.visible import visible_html

        tree = LexborHTMLParser(visible_html(html))
        tree.strip_tags(["script", "style", "noscript", "svg", "template"])
        if tree.root is not None:
            for node in [n for n in tree.root.traverse(include_text=True) if n.tag == "-comment"]:
                node.decompose()
        text = tree.html or ""
    except Exception:  # a page selectolax cannot handle: strip with regexes instead
        text = re.sub(r"(?is)<(script|style|noscript|svg|template)\b.*?</\1\s*>", "", html)
        text = re.sub(r"(?s)<!--.*?-->", "", text)
    text = re.sub(r"\n\s*\n+", "\n", text)
    return text[:max_chars]


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _sample(value: Any, n: int = 3) -> Any:
    return value[:n] if isinstance(value, list) else value


def _history_entries(history: list[dict], tier: str, literals: tuple[str, ...]) -> list[dict]:
    out = []
    for h in history or []:
        entry = {"cycle": h.get("cycle"), "outcome": str(h.get("outcome", ""))}
        if tier != "minimal":
            entry["reason"] = sanitize_for_healer(_one_line(h.get("reason", "") or "", 500), literals)
            entry["changes_summary"] = sanitize_for_healer(_one_line(h.get("changes_summary", "") or "", 500), literals)
        out.append(entry)
    return out


def build_request(ctx: DiagnosisContext, cycle: int, history: list[dict],
                  config: HealerConfig | None = None) -> dict:
    """The exact JSON body of one healing cycle (the code-healer API's request, plus `tier` and `history`)."""
    if not isinstance(cycle, int) or cycle < 1:
        raise ValueError(f"cycle must be a whole number >= 1, got {cycle!r}")
    config = config or HealerConfig()
    tier = tier_for(cycle)
    lit = secret_literals(ctx.blueprint, ctx.url)

    def clean(text: str) -> str:
        return sanitize_for_healer(text or "", lit)

    blueprint_json = json.dumps(redact_blueprint(ctx.blueprint), indent=2, sort_keys=True, ensure_ascii=False)
    files: dict[str, str] = {
        "blueprint.json": clean(blueprint_json),
        "page.html": clean(trim_page(ctx.current_html, config.max_page_chars)),
        "diff.txt": clean(ctx.html_diff or ""),
    }
    if ctx.blueprint.parser:
        files["parser.py"] = clean(ctx.blueprint.parser)
    if tier in ("context", "deep"):
        expected = {"expected_schema": ctx.expected_schema, "last_good_records": _sample(ctx.last_good_records),
                    "actual_output": _sample(ctx.actual_output)}
        files["expected.json"] = clean(json.dumps(expected, indent=2, sort_keys=True, ensure_ascii=False,
                                                  default=str))
    if tier == "deep" and ctx.original_html:
        files["last_good.html"] = clean(trim_page(ctx.original_html, config.max_page_chars))

    errors_list = [clean(e) for e in ctx.validation_errors]
    first = "; ".join(_one_line(e, 200) for e in errors_list[:3])
    summary = _one_line(f"{ctx.error_type}: {first}" if first else f"{ctx.error_type}: {clean(ctx.error_message)}",
                        500)
    body: dict[str, Any] = {
        "project_id": ctx.source_name,
        "cycle": cycle,
        "tier": tier,
        "failed_files": files,
        "pytest_errors": {
            "exit_code": 1,
            "error_count": max(1, len(ctx.validation_errors)),
            "error_summary": summary,
            "stderr": clean(ctx.error_message or "")[-1000:],
            "stdout": clean(ctx.validation_report or "")[-2000:],
        },
        "history": _history_entries(history, tier, lit),
    }
    if tier == "deep":
        body["previous_attempts"] = [
            {"strategy": str(p.get("strategy", "")), "outcome": str(p.get("outcome", "")),
             "reason": clean(_one_line(p.get("reason", "") or "", 500))}
            for p in ctx.previous_attempts]
    return body


def encode_request(body: dict) -> bytes:
    """Canonical JSON bytes: the same context always gives the same bytes."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# ---------------------------------------------------------------- the answer


@dataclass
class Candidate:
    outcome: str                  # healed | bad_response | refused
    reason: str
    blueprint: Blueprint | None


def _host_of(url: str | None) -> tuple[str | None, int | None]:
    try:
        parts = urlsplit(url or "")
        return (parts.hostname or None), parts.port
    except ValueError:
        return None, None


def candidate_from_files(ctx: DiagnosisContext, files: Any, config: HealerConfig) -> Candidate:
    """A candidate Blueprint from a healer's modified_files (blueprint.json and/or parser.py).

    The candidate keeps the source's url, schedule, headers and cookies: a healer can
    change what is extracted, never where it is fetched from or what is sent.
    """
    if not isinstance(files, dict) or not files:
        return Candidate("bad_response", "the healer returned no modified_files", None)
    for name, content in files.items():
        if not isinstance(content, str):
            return Candidate("bad_response", f"modified file {_one_line(str(name), 80)!r} is not text", None)
        size = len(content.encode("utf-8", "replace"))
        if size > config.max_file_bytes:
            return Candidate("refused", f"modified file {_one_line(str(name), 80)!r} is {size} bytes "
                                        f"(limit {config.max_file_bytes})", None)
    bp_text, parser_text = files.get("blueprint.json"), files.get("parser.py")
    if bp_text is None and parser_text is None:
        names = ", ".join(sorted(_one_line(str(n), 40) for n in files))
        return Candidate("bad_response", f"modified_files holds neither blueprint.json nor parser.py (got {names})",
                         None)
    original = ctx.blueprint
    parser = original.parser
    candidate = original
    if bp_text is not None:
        try:
            data = json.loads(bp_text)
        except json.JSONDecodeError as exc:
            return Candidate("refused", f"blueprint.json is not valid JSON: {exc.msg} at line {exc.lineno}", None)
        if not isinstance(data, dict):
            return Candidate("refused", "blueprint.json is not a JSON object", None)
        data = dict(data)
        cand_url = data.pop("url", None)
        if cand_url is not None:
            orig_host = _host_of(original.url or ctx.url)
            if not isinstance(cand_url, str) or _host_of(cand_url) != orig_host:
                return Candidate("refused", "candidate moves the source to another host", None)
        for key in ("headers", "cookies", "every", "name"):
            data.pop(key, None)
        if "parser" not in data:
            # The request's blueprint.json leaves the parser out (it travels as parser.py): a
            # blueprint.json sent back with parser.py goes with that parser, and one sent back
            # alone for a parser source keeps the source's parser where its fields need one.
            fields = data.get("fields")
            selectorless = not isinstance(fields, dict) or any(
                not (isinstance(f, dict) and f.get("css")) for f in fields.values())
            if parser_text is not None:
                data["parser"] = parser_text
            elif original.parser and selectorless:
                data["parser"] = original.parser
        try:
            parsed = from_dict(data, check_parser=False)   # the parser is checked below, with its own message
        except BlueprintError as exc:
            return Candidate("refused", f"blueprint.json is not a valid blueprint: {_one_line(str(exc))}", None)
        if "parser" in data:
            parser = parsed.parser
        elif all(f.css for f in parsed.fields.values()):
            parser = None
        candidate = Blueprint(fields=parsed.fields, url=original.url, every=original.every, items=parsed.items,
                              headers=dict(original.headers), cookies=dict(original.cookies), parser=parser,
                              fetch=original.fetch, wait_for=original.wait_for)
    if parser_text is not None:
        parser = parser_text
        candidate = candidate.with_parser(parser_text)
    if candidate.parser is not None:
        try:
            check_parser_source(candidate.parser)
        except ParserRejected as exc:
            return Candidate("refused", f"parser.py is refused: {exc.reason}", None)
    try:   # every selector the healer wrote: bounded before anything evaluates it
        check_blueprint(candidate, trusted=original)
    except SelectorRefused as exc:
        return Candidate("refused", f"blueprint.json is refused: {exc}", None)
    if candidate.to_dict() == original.to_dict():
        return Candidate("refused", "the candidate is the current blueprint unchanged", None)
    what = "a candidate parser" if candidate.parser and candidate.parser != original.parser else \
        "a candidate blueprint"
    return Candidate("healed", what, candidate)


# ---------------------------------------------------------------- HTTP


@dataclass
class HttpAnswer:
    status: int | None
    body: bytes
    outcome: str | None           # None when an answer arrived; else timeout | error | bad_response
    reason: str


def post_json(client: httpx.Client, url: str, data: bytes, headers: dict[str, str], timeout: float,
              max_bytes: int) -> HttpAnswer:
    """POST `data`; the whole exchange must finish within `timeout` and answer at most `max_bytes`."""
    deadline = time.monotonic() + timeout
    try:
        with client.stream("POST", url, content=data, headers=headers, timeout=httpx.Timeout(timeout)) as resp:
            body = bytearray()
            for chunk in resp.iter_bytes():
                body.extend(chunk)
                if len(body) > max_bytes:
                    return HttpAnswer(resp.status_code, b"", "bad_response",
                                      f"the healer's answer exceeds {max_bytes} bytes")
                if time.monotonic() > deadline:
                    return HttpAnswer(resp.status_code, b"", "timeout", f"timed out after {timeout:g}s")
            return HttpAnswer(resp.status_code, bytes(body), None, "")
    except PeerRefused as exc:   # the other end is not trusted: not a byte of the request was written
        return HttpAnswer(None, b"", "untrusted", str(exc))
    except httpx.TimeoutException:
        return HttpAnswer(None, b"", "timeout", f"timed out after {timeout:g}s")
    except httpx.HTTPError as exc:
        return HttpAnswer(None, b"", "error", f"cannot reach the healer: {type(exc).__name__}: {exc}")
    except Exception as exc:  # anything else in the transport: a failed cycle, never a crash
        return HttpAnswer(None, b"", "error", f"healer call failed: {type(exc).__name__}: {exc}")


def message_of(body: bytes) -> str:
    """The `message` of a JSON error body (code-healer or OpenAI style), else the start of the text."""
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _one_line(body[:300].decode("utf-8", "replace"), 200)
    if isinstance(data, dict):
        if isinstance(data.get("message"), str):
            return _one_line(data["message"], 200)
        err = data.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return _one_line(err["message"], 200)
        if isinstance(err, str):
            return _one_line(err, 200)
    return ""


def classify_status(status: int, body: bytes, timeout: float) -> tuple[str, str] | None:
    """(outcome, reason) for a non-2xx answer, None for 2xx."""
    if 200 <= status < 300:
        return None
    msg = message_of(body)
    if status == 504:
        return "timeout", f"timed out after {timeout:g}s (healer answered HTTP 504{': ' + msg if msg else ''})"
    if 300 <= status < 400:
        return "http_error", f"the healer redirected (HTTP {status}); redirects are not followed"
    return "http_error", f"healer answered HTTP {status}{': ' + msg if msg else ''}"


@dataclass
class Answer:
    """What a backend read from a 2xx answer: an outcome, its reason, and a candidate if healed."""

    outcome: str
    reason: str
    blueprint: Blueprint | None = None
    summary: str = ""


class _ClientBase:
    """What both backends share: config, the HTTP client, and turning outcomes into CycleResults."""

    def __init__(self, config: HealerConfig, client: httpx.Client | None = None):
        self.config = config
        self._own = client is None
        # The process's one TLS context: a client per heal attempt would load the CA bundle each time.
        # Every connection is checked before the request is written: who listens on a loopback port,
        # who serves a unix socket (healerd.adapters.peer).
        self.client = client or guarded_client(
            config.url, allowed_uids(config.allowed_user), verify=tls_context(),
            plain_secret=bool(config.token) and split_unix_url(config.url) is None
            and config.url.lower().startswith("http:"))

    def close(self) -> None:
        if self._own:
            self.client.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.config.token:
            h["Authorization"] = f"Bearer {reveal(self.config.token)}"
        return h

    def _max_answer(self) -> int:
        return 4 * self.config.max_file_bytes + 65536

    def _clean(self, text: str, ctx: DiagnosisContext | None, limit: int = 300) -> str:
        lits = list(secret_literals(ctx.blueprint, ctx.url)) if ctx is not None else []
        if self.config.token:
            lits.append(reveal(self.config.token))
        return _one_line(sanitize_for_healer(str(text), lits), limit)

    def heal_cycle(self, ctx: DiagnosisContext, cycle: int, history: list[dict]) -> CycleResult:
        """One cycle: build and send the backend's request, classify transport and HTTP failures
        the same way for every backend, then let the backend read a 2xx answer."""
        started = time.perf_counter()
        try:
            data = encode_request(self._request_body(ctx, cycle, history))
        except Exception as exc:
            return self._result(ctx, cycle, "error", f"cannot build the request: {type(exc).__name__}: {exc}",
                                started=started)
        refusal = plain_secret_refusal(self.config.url, bool(self.config.token))
        if refusal:
            return self._result(ctx, cycle, "untrusted", f"refused to send to the healer: {refusal}; nothing was sent",
                                started=started)
        timeout = self.config.timeout_for(cycle)
        ans = post_json(self.client, self._endpoint(), data, self._headers(), timeout, self._max_answer())
        n = len(data)
        if ans.outcome:
            return self._result(ctx, cycle, ans.outcome, ans.reason, started=started, status=ans.status,
                                request_bytes=n)
        bad = classify_status(ans.status, ans.body, timeout)
        if bad:
            return self._result(ctx, cycle, bad[0], bad[1], started=started, status=ans.status, request_bytes=n)
        a = self._read_answer(ctx, ans.body)
        return self._result(ctx, cycle, a.outcome, a.reason, started=started, status=ans.status, request_bytes=n,
                            blueprint=a.blueprint, summary=a.summary)

    def _request_body(self, ctx: DiagnosisContext, cycle: int, history: list[dict]) -> dict:
        raise NotImplementedError

    def _endpoint(self) -> str:
        raise NotImplementedError

    def _read_answer(self, ctx: DiagnosisContext, body: bytes) -> Answer:
        raise NotImplementedError

    def _result(self, ctx: DiagnosisContext | None, cycle: int, outcome: str, reason: str, *, started: float,
                status: int | None = None, request_bytes: int = 0, blueprint: Blueprint | None = None,
                summary: str = "") -> CycleResult:
        ok = outcome == "healed" and blueprint is not None
        return CycleResult(cycle=cycle, ok=ok, outcome=outcome,
                           reason=self._clean(reason or ("healed" if ok else outcome), ctx),
                           blueprint=blueprint, changes_summary=self._clean(summary, ctx, 500),
                           http_status=status, duration_ms=round((time.perf_counter() - started) * 1000, 3),
                           request_bytes=request_bytes)


class CodeHealerClient(_ClientBase):
    """The code-healer API (docs/HEALER_API.md): POST the failed files and errors, receive modified files."""

    def _request_body(self, ctx: DiagnosisContext, cycle: int, history: list[dict]) -> dict:
        return build_request(ctx, cycle, history, self.config)

    def _endpoint(self) -> str:
        return request_url(self.config.url)

    def _read_answer(self, ctx: DiagnosisContext, body: bytes) -> Answer:
        try:
            payload = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return Answer("bad_response", f"the healer's answer is not JSON ({exc})")
        if not isinstance(payload, dict):
            return Answer("bad_response", "the healer's answer is not a JSON object")
        status = payload.get("status")
        summary = payload.get("changes_summary") if isinstance(payload.get("changes_summary"), str) else ""
        if status != "healed":
            msg = payload.get("message") if isinstance(payload.get("message"), str) else ""
            outcome = "timeout" if status == "timeout" else "bad_response"
            return Answer(outcome, f"the healer answered status {_one_line(str(status), 40)!r}"
                                   + (f": {msg}" if msg else ""))
        cand = candidate_from_files(ctx, payload.get("modified_files"), self.config)
        return Answer(cand.outcome, cand.reason, cand.blueprint, summary)
