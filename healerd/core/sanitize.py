"""Secrets never reach logs, alerts, the fix memory or the healer.

`mask_text` replaces credentials with `***`, keeping a hint of what was there
(`Bearer ***`, `api_key=***`, `https://***:***@host`, `ghp_***`, `***@example.com`).
It is idempotent: masking masked text changes nothing. `find_secrets` names the
kinds of secret a text still carries, so a caller can refuse to store it.

What counts as a secret: credentials in URLs, query parameters named like a secret (by
word, as `is_secret_key` judges: `api_token`, `authToken`, `accessKey`, `PHPSESSID`),
`name=value` / `"name": "value"` pairs, Authorization and Cookie headers, AWS keys,
GitHub/GitLab/Slack/OpenAI/Stripe/Google/npm tokens, JWTs, private key blocks,
e-mail addresses (the local part), long random-looking strings (high Shannon
entropy), and every literal the caller names (`source_secrets`: a source's cookie values
and the values of its secret-named headers).
Ordinary words, CSS class names, URL paths, UUIDs, numbers, dates and prices stay.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import quote

MASK = "***"
MIN_LITERAL = 4  # a source secret this long or longer is kept and masked literally; shorter ones would
                 # mask ordinary words (and are not worth guessing from a log either)

# Names in free text (`name=value`, `name: value`, `"name": "value"`): stricter, as `key` or `code`
# are ordinary words there.
_ASSIGN_NAMES = (
    r"[a-z0-9_-]*(?:token|secret|password|passwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|session[_-]?id|sessionid|credentials?)|pwd"
)
# Mapping keys whose values are masked entirely (mask_mapping): by word, so `access_token`,
# `apiKey`, `Set-Cookie` and `client_secret` are secret while `max_tokens` and `diff_signature` are not.
_SECRET_WORDS = frozenset({
    "token", "secret", "password", "passwd", "pwd", "auth", "authorization", "cookie", "cookies",
    "session", "sessionid", "sid", "credential", "credentials", "apikey", "privatekey", "accesskey",
    "csrftoken", "csrf", "xsrf", "jwt", "bearer", "passphrase", "sessid", "phpsessid", "jsessionid",
})
_SECRET_PAIRS = frozenset({("api", "key"), ("private", "key"), ("access", "key"), ("secret", "key"),
                           ("client", "secret"), ("session", "id")})
_SECRET_EXACT = frozenset({"key", "code", "sig", "signature", "pass"})
_HARMLESS_HEADERS = frozenset({
    "user-agent", "accept", "accept-language", "accept-encoding", "content-type", "content-length",
    "cache-control", "pragma", "connection", "dnt", "upgrade-insecure-requests", "if-none-match",
    "if-modified-since", "origin", "host",
})
_FILE_TLDS = frozenset({"png", "jpg", "jpeg", "gif", "svg", "webp", "avif", "ico", "css", "js", "bmp", "tif", "tiff"})
_HASH_CONTEXT = re.compile(r"(?:sha\d*|md5|hash|digest|checksum|etag|commit|integrity|fingerprint)"
                           r"[\"'\s:=(-]*$", re.IGNORECASE)


class Secret(str):
    """A credential from the configuration (the healer token): `str()`, `repr()` and
    f-strings show `***`, so a Config printed in a log or a traceback carries no secret.
    The value is read only with `.reveal()`, where it is sent (the Authorization header)."""

    __slots__ = ()

    def reveal(self) -> str:
        return str.__str__(self)

    def __str__(self) -> str:
        return MASK if self else ""

    def __repr__(self) -> str:
        return f"Secret({MASK!r})" if self else "Secret('')"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def reveal(value: Any) -> Any:
    """The plain value of a Secret (anything else as is)."""
    return value.reveal() if isinstance(value, Secret) else value


class _Rule:
    __slots__ = ("kind", "pattern", "repl")

    def __init__(self, kind: str, pattern: str, repl: str | Callable[[re.Match], str], flags: int = 0):
        self.kind = kind
        self.pattern = re.compile(pattern, flags)
        self.repl = repl

    def sub(self, text: str) -> str:
        return self.pattern.sub(self.repl, text)


def _keep_prefix(group: int = 1) -> Callable[[re.Match], str]:
    return lambda m: m.group(group) + MASK


def _url_credentials(m: re.Match) -> str:
    userinfo = m.group(2)
    return m.group(1) + (f"{MASK}:{MASK}@" if ":" in userinfo else f"{MASK}@")


def _email(m: re.Match) -> str:
    domain = m.group(2)
    if domain.rsplit(".", 1)[-1].lower() in _FILE_TLDS:  # logo@2x.png is a file name
        return m.group(0)
    return f"{MASK}@{domain}"


def shannon_entropy(s: str) -> float:
    """Bits per character of `s`."""
    if not s:
        return 0.0
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def looks_like_key(s: str) -> bool:
    """True for a long random-looking string (a key), False for words, class names, paths, UUIDs.

    At least 32 characters with a run of 16 or more between `-`/`_` separators (so
    UUIDs and hyphenated class names do not count), digits and letters mixed, and
    high Shannon entropy: >= 3.0 bits/char for hex, >= 4.0 for other alphabets,
    which must also switch character class often (random text does, words do not).
    """
    core = s.rstrip("=")
    if len(core) < 32:
        return False
    if max(len(piece) for piece in re.split(r"[-_]+", core)) < 16:
        return False
    chars = [ch for ch in core if ch.isalnum()]
    if not any(ch.isdigit() for ch in chars) or not any(ch.isalpha() for ch in chars):
        return False
    joined = "".join(chars)
    h = shannon_entropy(joined)
    if re.fullmatch(r"[0-9a-f]+|[0-9A-F]+", joined):
        return h >= 3.0
    switches = sum(1 for x, y in zip(chars, chars[1:])
                   if x.isdigit() != y.isdigit() or (x.islower() and y.isupper()))
    return h >= 4.0 and switches / max(1, len(chars) - 1) >= 0.25


def _long_key(m: re.Match) -> str:
    s = m.group(0)
    if not looks_like_key(s):
        return s
    before = m.string[max(0, m.start() - 24):m.start()]
    after = m.string[m.end():m.end() + 6]
    if _HASH_CONTEXT.search(before):
        return s  # a content hash named as such (sha256=..., etag: ...)
    if re.fullmatch(r"[0-9a-fA-F]+", s) and (before.endswith("/") or re.match(r"\.[A-Za-z0-9]{2,5}\b", after)):
        return s  # a content-addressed file name in a URL path (/img/3f2a...9c.jpg)
    return MASK


_AUTH_SCHEME = re.compile(r"(?:bearer|basic|token|digest|negotiate|aws4-hmac-sha256|apikey)\s+", re.IGNORECASE)


def _header_value(m: re.Match) -> str:
    """`Authorization: Bearer ***`: the scheme kept, the credential masked (once)."""
    prefix, value = m.group(1), m.group(2)
    scheme = _AUTH_SCHEME.match(value)
    head = scheme.group(0) if scheme else ""
    if value[len(head):].startswith(MASK):
        return m.group(0)
    return prefix + head + MASK


def _bearer(m: re.Match) -> str:
    token = m.group(2)
    has_mark = any(ch.isdigit() or ch in "+/=" for ch in token)
    mixed = any(ch.isupper() for ch in token[1:]) and any(ch.islower() for ch in token) and len(token) >= 16
    if has_mark or mixed:
        return m.group(1) + MASK
    return m.group(0)  # "Basic instructions": a word, not a credential


def _openai(m: re.Match) -> str:
    body = m.group(2)
    if any(ch.isdigit() for ch in body) and any(ch.isupper() for ch in body):
        return m.group(1) + MASK
    return m.group(0)  # sk-header-navigation-wrapper: a class name


def _aws_secret(m: re.Match) -> str:
    s = m.group(0)
    window = m.string[max(0, m.start() - 60):m.start()].lower()
    if "aws" not in window or not (any(c.isupper() for c in s) and any(c.islower() for c in s)):
        return s
    return MASK


_ASSIGN_NAME = re.compile(_ASSIGN_NAMES, re.IGNORECASE)


def _assignment(m: re.Match) -> str:
    """`password=***`, `"api_key": "***"`: a secret-named name's value masked (once)."""
    if not _ASSIGN_NAME.fullmatch(m.group(2)) or m.group(3).startswith(MASK):
        return m.group(0)
    return m.group(1) + MASK


def _secret_param(m: re.Match) -> str:
    """`?api_token=***`: a query parameter named like a secret (by word, as for mapping keys)."""
    return m.group(1) + MASK if is_secret_key(m.group(2)) else m.group(0)


_RULES: tuple[_Rule, ...] = (
    _Rule("private_key",
          r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)",
          lambda m: f"{m.group(1)}{MASK}{m.group(2)}"),
    _Rule("url_credentials", r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://)([^/\s@:?#\"'<>]+(?::[^/\s?#\"'<>]*)?)@",
          lambda m: m.group(0) if m.group(2) in (MASK, f"{MASK}:{MASK}") else _url_credentials(m)),
    _Rule("authorization_header", r"(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)([^\s\"',;][^\"'\r\n]*)",
          _header_value, re.IGNORECASE),
    _Rule("cookie_header", r"(\b(?:set-)?cookie[\"']?\s*[:=]\s*[\"']?)(?=[^\s=;\"']+=)([^\"'\r\n]+)",
          _keep_prefix(), re.IGNORECASE),
    _Rule("bearer_token", r"(\b(?:bearer|basic)\s+)([A-Za-z0-9._~+/-]{8,}=*)", _bearer, re.IGNORECASE),
    _Rule("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", "eyJ" + MASK),
    _Rule("aws_access_key", r"\b((?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA))[A-Z0-9]{16}\b",
          _keep_prefix()),
    _Rule("aws_secret_key", r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])", _aws_secret),
    _Rule("github_token", r"\b(gh[pousr]_)[A-Za-z0-9]{30,}\b|\b(github_pat_)[A-Za-z0-9_]{22,}",
          lambda m: (m.group(1) or m.group(2)) + MASK),
    _Rule("gitlab_token", r"\b(glpat-)[A-Za-z0-9_-]{20,}", _keep_prefix()),
    _Rule("slack_token", r"\b(xox[abposr]-)[A-Za-z0-9-]{10,}", _keep_prefix()),
    _Rule("slack_webhook", r"(hooks\.slack\.com/services/)[A-Za-z0-9/]{20,}", _keep_prefix()),
    _Rule("stripe_key", r"\b((?:sk|pk|rk)_(?:live|test)_|whsec_)[A-Za-z0-9]{10,}", _keep_prefix()),
    _Rule("openai_key", r"(?<![A-Za-z0-9_-])(sk-(?:proj-|svcacct-|admin-|ant-(?:api\d+-)?)?)([A-Za-z0-9_-]{20,})",
          _openai),
    _Rule("google_api_key", r"\b(AIza)[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])", _keep_prefix()),
    _Rule("npm_token", r"\b(npm_)[A-Za-z0-9]{36}\b", _keep_prefix()),
    _Rule("secret_param", r"([?&;]([A-Za-z0-9_.\[\]-]+)=)(?!\*\*\*(?:[&#\s\"'<>]|$))([^&#\s\"'<>]+)",
          _secret_param),
    _Rule("secret_assignment",
          r"((?<![A-Za-z0-9_-])[\"']?([A-Za-z0-9_-]{3,})[\"']?\s*[:=]\s*[\"']?)([^\s\"',;&}{\[][^\s\"',;&}]*)",
          _assignment),
    _Rule("email", r"(?<![A-Za-z0-9._%+*-])([A-Za-z0-9._%+-]+)@((?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,})\b", _email),
    _Rule("high_entropy_key", r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{32,}(?![A-Za-z0-9_-])", _long_key),
)


def _literals(extra_secrets: Iterable[str]) -> list[str]:
    out: set[str] = set()
    for s in extra_secrets or ():
        if not isinstance(s, str):
            continue
        s = s.strip()
        if len(s) < MIN_LITERAL or s == MASK:
            continue
        out.add(s)
        q = quote(s, safe="")
        if q != s:
            out.add(q)
    return sorted(out, key=len, reverse=True)


def mask_text(text: str, extra_secrets: Iterable[str] = ()) -> str:
    """`text` with every secret replaced by `***` (keeping a hint of its kind)."""
    if not text:
        return text if isinstance(text, str) else ("" if text is None else str(text))
    if not isinstance(text, str):
        text = str(text)
    for lit in _literals(extra_secrets):
        text = text.replace(lit, MASK)
    for rule in _RULES:
        text = rule.sub(text)
    return text


_CONTROL = re.compile(r"[\x00-\x20\x7f]")
_URL_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)([^/?#@]*)@")


def mask_url(url: Any, extra_secrets: Iterable[str] = ()) -> str:
    """`url` fit for a log line or an output: control characters and spaces escaped (no line
    breaks in log lines), `user:pass@` masked, the value of every query parameter named like a
    secret (`is_secret_key`: `token`, `api_key`, `code`, `sig`, ... but not `author`) masked,
    then everything `mask_text` masks (with `extra_secrets`, a source's own values).
    The one URL mask of healerd: fetch errors, status output and the healer's view use it."""
    if not isinstance(url, str):
        return "<not a URL>"
    if not extra_secrets and "@" not in url and "?" not in url and "=" not in url and not _CONTROL.search(url):
        return mask_text(url)
    out = _CONTROL.sub(lambda m: f"%{ord(m.group(0)):02X}", url)
    out = _URL_USERINFO.sub(lambda m: m.group(1) + (f"{MASK}:{MASK}@" if ":" in m.group(2) else f"{MASK}@"),
                            out, count=1)
    qpos = out.find("?")
    if qpos >= 0:
        head, rest = out[:qpos + 1], out[qpos + 1:]
        rest, hashmark, frag = rest.partition("#")
        parts = []
        for piece in re.split(r"([&;])", rest):
            name, eq, value = piece.partition("=")
            parts.append(f"{name}={MASK}" if eq and value and is_secret_key(name) else piece)
        out = head + "".join(parts) + hashmark + frag
    return mask_text(out, extra_secrets)


def _mask_all(value: Any) -> Any:
    """Every leaf of `value` masked, its shape kept."""
    if isinstance(value, dict):
        return {k: _mask_all(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_mask_all(v) for v in value]
    if value is None or isinstance(value, bool):
        return value
    return MASK


def is_secret_key(name: Any) -> bool:
    """True for a mapping key named like a secret (token, password, cookie, api_key, ...)."""
    if not isinstance(name, str):
        return False
    key = name.strip()
    low = key.lower()
    if low in _SECRET_EXACT or low.startswith(("x-amz-", "x-goog-")):
        return True
    words = [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", key)]
    if any(w in _SECRET_WORDS for w in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in zip(words, words[1:]))


def is_secret_header(name: Any) -> bool:
    """True for a request header whose value is a credential (Authorization, Cookie, X-Api-Key,
    X-CSRF-Token, X-Signature, ...); False for User-Agent, Referer, Accept-Language, X-Client, ...

    Only these count as a source's secrets: masking the value of `X-Client: price` or the words
    of a User-Agent wherever they occur would blank out ordinary page text and selectors.
    """
    if not isinstance(name, str) or name.strip().lower() in _HARMLESS_HEADERS:
        return False
    words = [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)]
    return is_secret_key(name) or bool(words and words[-1] in _SECRET_EXACT)


def _pair_values(value: str) -> list[str]:
    """The values of the `name=value` pairs in `value` (`sid=x; lang=en`, `a=1&b=2`)."""
    out = []
    for piece in re.split(r"[;,&]", value):
        name, eq, val = piece.partition("=")
        val = val.strip().strip("\"'")
        if eq and re.fullmatch(r"[\w.$-]+", name.strip()) and val:
            out.append(val)
    return out


def source_secrets(headers: Any, cookies: Any) -> list[str]:
    """The literal secret values of a source's request settings, to be masked wherever they occur.

    Every cookie value (cookies are session state) and the value of every secret-named header
    (`is_secret_header`), each whole and split into the values of its `name=value` pairs; the
    credential after an auth scheme (`Bearer x`, `Basic x`, `Token x`) split into its words.
    Nothing else is split into words: a word of a value is usually an ordinary word.
    Values shorter than MIN_LITERAL (4) characters are left out: the same threshold `mask_text`
    masks literals at, so every value kept here is masked.
    """
    found: set[str] = set()

    def add(value: str) -> None:
        value = value.strip().strip("\"'")
        found.add(value)
        found.update(_pair_values(value))

    for name, value in (headers or {}).items():
        if not isinstance(value, str) or not is_secret_header(name):
            continue
        add(value)
        scheme = _AUTH_SCHEME.match(value.strip())
        if scheme:
            credential = value.strip()[scheme.end():]
            add(credential)
            for word in credential.split():
                add(word.strip(",;"))
    for value in (cookies or {}).values():
        if isinstance(value, str):
            add(value)
    return sorted(x for x in found if len(x) >= MIN_LITERAL)


def secret_values(url: Any = None, headers: Any = None, cookies: Any = None) -> list[str]:
    """Every literal secret of a source: `source_secrets` (cookie values, secret-named header
    values), plus the credentials of its URL and the values of its secret-named query
    parameters; each at least MIN_LITERAL characters. Mask these wherever a source's data goes."""
    from urllib.parse import unquote, urlsplit

    found: set[str] = set(source_secrets(headers, cookies))
    if isinstance(url, str) and url:
        users: tuple[str | None, ...]
        try:
            parts = urlsplit(url)
            users = (parts.username, parts.password)
        except ValueError:
            parts, users = None, ()
        for x in users:
            if x:
                found.update((x, unquote(x)))
        for piece in re.split(r"[&;]", parts.query if parts else ""):
            name, _, value = piece.partition("=")
            if value and is_secret_key(unquote(name)):
                found.update((value, unquote(value)))
    return sorted(x for x in found if len(x) >= MIN_LITERAL)


def blueprint_secrets(blueprint: Any) -> list[str]:
    """`secret_values` of a blueprint (a Blueprint, its dict, or its JSON text)."""
    import json

    d = blueprint
    if isinstance(d, str):
        try:
            d = json.loads(d)
        except ValueError:
            return []
    if hasattr(d, "to_dict"):
        d = d.to_dict()
    if not isinstance(d, dict):
        return []
    return secret_values(d.get("url"), d.get("headers"), d.get("cookies"))


def mask_mapping(d: Any, extra_secrets: Iterable[str] = ()) -> Any:
    """A deep copy of `d` with the values of secret-named keys masked entirely and strings masked.

    Under a `headers` key, each header's value is masked entirely unless the header
    is a harmless one (User-Agent, Accept, ...). Non-dict input is masked as a value.
    """
    extra = list(extra_secrets or ())
    return _mask_value(d, extra, None)


def _mask_value(value: Any, extra: list[str], key: str | None) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            ks = str(k)
            if is_secret_key(ks):
                out[k] = _mask_all(v)
            elif ks.lower() == "headers" and isinstance(v, dict):
                out[k] = {hk: (_mask_value(hv, extra, hk) if str(hk).lower() in _HARMLESS_HEADERS
                               else _mask_all(hv)) for hk, hv in v.items()}
            else:
                out[k] = _mask_value(v, extra, ks)
        return out
    if isinstance(value, (list, tuple)):
        return [_mask_value(v, extra, key) for v in value]
    if isinstance(value, str):
        return mask_text(value, extra)
    return value


def find_secrets(text: str, extra_secrets: Iterable[str] = ()) -> list[str]:
    """The kinds of secret `text` carries (sorted, each once), e.g. ["aws_access_key", "bearer_token"]."""
    if not text:
        return []
    if not isinstance(text, str):
        text = str(text)
    found = set()
    for lit in _literals(extra_secrets):
        if lit in text:
            found.add("extra_secret")
            text = text.replace(lit, MASK)
    for rule in _RULES:
        masked = rule.sub(text)
        if masked != text:
            found.add(rule.kind)
            text = masked
    return sorted(found)
