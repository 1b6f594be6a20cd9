"""Recognising pages that are not the page (bot walls, login walls) and fingerprinting failures.

`detect_block` looks for the markers that bot-protection vendors put on their
challenge and block pages, for captcha pages, and for pages whose main content is
a login form. Markers that also appear on ordinary pages protected by the same
vendor (a captcha on a contact form, a vendor's analytics script, an "access
denied" sentence in an article) only count when the page is little more than
that: short visible text, or an error status.
"""

from __future__ import annotations

import hashlib
import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

SHORT_PAGE = 1000           # visible characters: a challenge/denial page is shorter than this
TINY_PAGE = 300             # ... a page that is nothing but a vendor's script and a line of text
BIG_FORM = 1000             # a form with more text than this wraps the page (ASP.NET), not a login box
LOGIN_WALL_TEXT = 500       # visible characters outside the login form on a login wall
LOGIN_TITLED_TEXT = 1500    # ... when the title also says "log in" / "sign in"

# Markers that only appear on challenge/block pages: always a block.
_STRONG = (
    ("_cf_chl_opt", "Cloudflare bot challenge"),
    ("cf-chl-", "Cloudflare bot challenge"),
    ("__cf_chl_", "Cloudflare bot challenge"),
    ("cf-browser-verification", "Cloudflare browser check"),
    ("attention required! | cloudflare", "Cloudflare block page (Attention Required)"),
    ("captcha-delivery.com", "DataDome challenge"),
    ("px-captcha", "PerimeterX (HUMAN) challenge"),
    ("pardon our interruption", "bot block page (Pardon Our Interruption)"),
    ("incapsula incident id", "Imperva/Incapsula block page"),
    ("sucuri website firewall", "Sucuri firewall block page"),
    ("checking your browser before accessing", "browser check interstitial"),
    ("checking if the site connection is secure", "browser check interstitial"),
    ("our systems have detected unusual traffic", "unusual-traffic block page"),
)
# Markers that count only on a page shorter than the given number of visible
# characters (or on an error status): they also occur on ordinary pages.
_WEAK = (
    ("g-recaptcha", "captcha page (reCAPTCHA)", SHORT_PAGE),
    ("www.google.com/recaptcha", "captcha page (reCAPTCHA)", SHORT_PAGE),
    ("h-captcha", "captcha page (hCaptcha)", SHORT_PAGE),
    ("hcaptcha.com", "captcha page (hCaptcha)", SHORT_PAGE),
    ("cf-turnstile", "captcha page (Cloudflare Turnstile)", SHORT_PAGE),
    ("challenges.cloudflare.com", "captcha page (Cloudflare Turnstile)", SHORT_PAGE),
    ("verify you are human", "human-verification page", SHORT_PAGE),
    ("verify you are a human", "human-verification page", SHORT_PAGE),
    ("are you a robot", "human-verification page", SHORT_PAGE),
    ("press & hold", "PerimeterX (HUMAN) challenge", SHORT_PAGE),
    ("checking your browser", "browser check interstitial", SHORT_PAGE),
    ("access denied", "access-denied page", SHORT_PAGE),
    ("access to this page has been denied", "access-denied page", SHORT_PAGE),
    ("you don't have permission to access", "access-denied page", SHORT_PAGE),
    ("request unsuccessful", "Imperva/Incapsula block page", SHORT_PAGE),
    # vendors' script tags are on every page they protect: only a nearly empty page counts
    ("_incapsula_resource", "Imperva/Incapsula challenge", TINY_PAGE),
    ("perimeterx", "PerimeterX (HUMAN) challenge", TINY_PAGE),
    ("datadome", "DataDome challenge", TINY_PAGE),
)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)
_TITLE_BLOCKS = (
    ("just a moment", "Cloudflare challenge interstitial (Just a moment...)"),
    ("attention required", "Cloudflare block page (Attention Required)"),
    ("access denied", "access-denied page"),
    ("security check", "security-check page"),
    ("captcha", "captcha page"),
    ("are you a robot", "human-verification page"),
    ("bot verification", "human-verification page"),
)
_LOGIN_TITLE = re.compile(r"\b(log ?in|sign ?in|anmelden|connexion|iniciar sesi)", re.I)
_PASSWORD = re.compile(r"""type\s*=\s*["']?password""", re.I)
_NOISE = ("script", "style", "noscript", "template", "svg")


def _visible_text(tree: LexborHTMLParser) -> str:
    body = tree.body or tree.root
    if body is None:
        return ""
    text = body.text(deep=True, separator=" ")
    return " ".join(text.split())


def _strip_noise(tree: LexborHTMLParser) -> None:
    for tag in _NOISE:
        for node in tree.css(tag):
            node.decompose()


def _login_wall(tree: LexborHTMLParser) -> str | None:
    """A page whose main content is a login form: a password field and little else."""
    pw = tree.css_first("input[type=password i]")
    if pw is None:
        return None
    total = len(_visible_text(tree))
    form: LexborNode | None = pw
    while form is not None and form.tag != "form":
        form = form.parent
    form_text = len(" ".join(form.text(deep=True, separator=" ").split())) if form is not None else 0
    outside = total - (form_text if form_text <= BIG_FORM else 0)
    title_node = tree.css_first("title")
    title = title_node.text() if title_node is not None else ""
    if outside < LOGIN_WALL_TEXT:
        return "login wall: the page is a login form"
    if _LOGIN_TITLE.search(title) and outside < LOGIN_TITLED_TEXT:
        return f"login wall: a login page ({' '.join(title.split())[:60]!r})"
    return None


def _detect(html: str, status: int, headers: dict) -> tuple[str | None, bool]:
    """(reason, strong): strong reasons come from vendor markers, weak ones from the login heuristic."""
    hdrs = {str(k).lower(): str(v) for k, v in (headers or {}).items()}
    if hdrs.get("cf-mitigated", "").lower() == "challenge":
        return "bot challenge: Cloudflare (cf-mitigated: challenge)", True
    if "x-datadome" in hdrs and status in (401, 403, 405, 429):
        return f"bot challenge: DataDome (HTTP {status})", True
    if status in (401, 407):
        return f"login required (HTTP {status})", True
    if not html:
        return None, False
    low = html.lower()
    for marker, what in _STRONG:
        if marker in low:
            return f"bot challenge: {what} (marker {marker!r})", True
    m = _TITLE.search(low[:20000])
    title = " ".join(m.group(1).split()) if m else ""
    weak = [w for w in _WEAK if w[0] in low]
    titled = [what for marker, what in _TITLE_BLOCKS if marker in title]
    has_password = "password" in low and bool(_PASSWORD.search(low))   # the plain scan is ~30x cheaper
    if not weak and not titled and not has_password:
        return None, False
    tree = LexborHTMLParser(html)
    _strip_noise(tree)
    text_len = len(_visible_text(tree))
    error_status = status in (403, 429, 503)
    if titled and (text_len < SHORT_PAGE or error_status):
        return f"bot challenge: {titled[0]} (title {title[:60]!r})", True
    for marker, what, limit in weak:
        if text_len < limit or error_status:
            return f"bot challenge: {what} (marker {marker!r} on a {text_len}-character page)", True
    if has_password:
        reason = _login_wall(tree)
        if reason:
            return reason, False
    return None, False


def detect_block(html: str, status: int = 200, headers: dict | None = None) -> str | None:
    """A one-line reason when the page is a bot challenge or a login wall, else None."""
    try:
        return _detect(html or "", status, headers or {})[0]
    except Exception:  # a page too broken to inspect is not evidence of a block
        return None


def block_strength(html: str, status: int = 200, headers: dict | None = None) -> tuple[str | None, bool]:
    """(reason, strong): like detect_block, and whether the evidence is a vendor marker (strong)
    rather than the login-form heuristic."""
    try:
        return _detect(html or "", status, headers or {})
    except Exception:
        return None, False


_BINARY_TYPES = ("image/", "audio/", "video/", "font/", "application/pdf", "application/zip", "application/gzip",
                 "application/octet-stream", "application/x-", "application/vnd.", "application/msword")


def not_html_reason(body: bytes, content_type: str | None) -> str | None:
    """A one-line reason when the answer is a binary file rather than a page (or text a parser could read)."""
    ctype = (content_type or "").split(";")[0].strip().lower()
    if ctype.startswith(_BINARY_TYPES) and not ctype.endswith(("+xml", "+json")):
        return f"not HTML: the server sent {ctype}, not a page"
    if b"\x00" in body[:4096]:
        return f"not HTML: the answer is binary{f' ({ctype})' if ctype else ''}, not a page"
    return None


_DIGITS = re.compile(r"\d+")


_URLS = re.compile(r"[a-z][a-z0-9+.-]*://\S+", re.I)


def failure_fingerprint(error_type: str | None, host: str | None, detail: str | None) -> str:
    """A short stable hash of (error class, detail with URLs, the host and digits removed, case folded).

    The host is deliberately left out: the fingerprint says *how* something failed, so the same
    failure on many hosts (our network, our proxy, our parser runtime) shares one fingerprint and
    the systemic breaker can count the distinct hosts it hit."""
    text = _URLS.sub(" ", (detail or "").lower())
    if host:
        text = text.replace(host.lower(), " ")
    norm = " ".join(_DIGITS.sub("", text).split())
    key = f"{error_type or ''}|{norm}"
    return hashlib.sha1(key.encode("utf-8", "replace")).hexdigest()[:16]
