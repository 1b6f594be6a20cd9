"""Block detection on realistic challenge/login pages, and no false alarms on ordinary pages."""

from __future__ import annotations

import pytest

from healerd.core import errors
from healerd.core.classify import detect_block, failure_fingerprint
from tests.support.paths import CORPUS

ARTICLE = " ".join(["The league table below lists every player with their score this season."] * 40)
NAV = '<nav><a href="/">Home</a> <a href="/stats">Stats</a> <a href="/login">Log in</a></nav>'


def normal(extra: str = "", head: str = "") -> str:
    rows = "".join(f"<tr><td>Player {i}</td><td>{i * 3}</td></tr>" for i in range(30))
    return (f"<html><head><title>League stats</title>{head}</head><body>{NAV}{extra}"
            f"<main><h1>Stats</h1><p>{ARTICLE}</p><table>{rows}</table></main>"
            f"<footer>© 2026 League</footer></body></html>")


CLOUDFLARE_JS = """<!DOCTYPE html><html lang="en-US"><head><title>Just a moment...</title>
<meta http-equiv="refresh" content="390"></head><body><div class="main-wrapper" role="main">
<div class="main-content"><h1 class="zone-name-title h1">www.example.com</h1>
<h2 class="h2" id="challenge-running">Checking if the site connection is secure</h2>
<noscript><div id="challenge-error-title">Enable JavaScript and cookies to continue</div></noscript></div></div>
<script>(function(){window._cf_chl_opt={cvId: '2',cZone: "www.example.com",cType: 'managed'};}());</script>
</body></html>"""

CLOUDFLARE_BLOCK = """<html><head><title>Attention Required! | Cloudflare</title></head><body>
<div id="cf-wrapper"><h1>Sorry, you have been blocked</h1><h2>You are unable to access example.com</h2>
<p>This website is using a security service to protect itself from online attacks.</p>
<p>Cloudflare Ray ID: <strong>7d1a2b3c4d5e6f70</strong></p></div></body></html>"""

JUST_A_MOMENT_PLAIN = ("<html><head><title>Just a moment...</title></head><body><p>Verifying you are human. "
                       "This may take a few seconds.</p></body></html>")

AKAMAI = """<HTML><HEAD><TITLE>Access Denied</TITLE></HEAD><BODY><H1>Access Denied</H1>
You don't have permission to access "http://www.example.com/stats" on this server.<P>
Reference&#32;&#35;18&#46;5b3c1402&#46;1700000000&#46;1a2b3c4d</BODY></HTML>"""

PERIMETERX = """<html><head><title>Access to this page has been denied</title>
<script src="https://client.perimeterx.net/PXabc/main.min.js"></script></head><body>
<div class="px-captcha-error-container"><h1>Before we continue...</h1>
<p>Press &amp; Hold to confirm you are a human (and not a bot).</p><div id="px-captcha"></div></div></body></html>"""

DATADOME = """<html><head><title>example.com</title></head><body style="margin:0">
<script>var dd={'rt':'c','cid':'AHrlqAAAAAMA','hsh':'2211F522','host':'geo.captcha-delivery.com'}</script>
<script src="https://ct.captcha-delivery.com/c.js"></script>
<iframe src="https://geo.captcha-delivery.com/captcha/?initialCid=AHrlqAAAAAMA" width="100%" height="100%">
</iframe></body></html>"""

PARDON = """<html><head><title>Pardon Our Interruption</title></head><body><h1>Pardon Our Interruption</h1>
<p>As you were browsing something about your browser made us think you were a bot.</p></body></html>"""

INCAPSULA = """<html><head><META NAME="robots" CONTENT="noindex,nofollow"></head><body>
<iframe id="main-iframe" src="/_Incapsula_Resource?CWUDNSAI=24&xinfo=0-12345-0%200NNN" frameborder=0>
Request unsuccessful. Incapsula incident ID: 123000450012345678-9012345</iframe></body></html>"""

RECAPTCHA_WALL = """<html><head><title>One more step</title>
<script src="https://www.google.com/recaptcha/api.js" async defer></script></head><body>
<h1>Please complete the security check to continue</h1><form method="post">
<div class="g-recaptcha" data-sitekey="6Lc_aXkUAAAAAB"></div><button>Continue</button></form></body></html>"""

HCAPTCHA_WALL = """<html><head><title>Verify</title></head><body><p>Please verify you are human.</p>
<div class="h-captcha" data-sitekey="10000000-ffff-ffff-ffff-000000000001"></div>
<script src="https://hcaptcha.com/1/api.js"></script></body></html>"""

TURNSTILE_WALL = """<html><head><title>Checking</title></head><body><p>One moment.</p>
<div class="cf-turnstile" data-sitekey="0x4AAAAAAA"></div></body></html>"""

LOGIN_WALL = """<html><head><title>Sign in – Example Stats</title></head><body>
<header><a href="/">Example Stats</a></header>
<main><h1>Sign in to continue</h1><form action="/session" method="post">
<label>Email <input type="email" name="email"></label>
<label>Password <input type="password" name="password"></label>
<label><input type="checkbox" name="remember"> Remember me</label>
<button type="submit">Sign in</button><a href="/forgot">Forgot your password?</a></form>
<p>New here? <a href="/signup">Create an account</a></p></main>
<footer>© 2026 Example Stats · <a href="/privacy">Privacy</a></footer></body></html>"""

LOGIN_PAGE_WITH_SOME_TEXT = """<html><head><title>Log in | Example</title></head><body>
<form action="/login" method="post"><input name="u"><input type="password" name="p"><button>Log in</button></form>
<p>""" + " ".join(["Members get access to full historical statistics and exports."] * 12) + """</p></body></html>"""


@pytest.mark.parametrize("html, expect", [
    (CLOUDFLARE_JS, "Cloudflare"),
    (CLOUDFLARE_BLOCK, "Cloudflare"),
    (JUST_A_MOMENT_PLAIN, "Just a moment"),
    (AKAMAI, "access-denied"),
    (PERIMETERX, "PerimeterX"),
    (DATADOME, "DataDome"),
    (PARDON, "Pardon Our Interruption"),
    (INCAPSULA, "Incapsula"),
    (RECAPTCHA_WALL, "reCAPTCHA"),
    (HCAPTCHA_WALL, "hCaptcha"),
    (TURNSTILE_WALL, "Turnstile"),
    (LOGIN_WALL, "login wall"),
    (LOGIN_PAGE_WITH_SOME_TEXT, "login wall"),
])
def test_blocks_are_recognised(html, expect):
    reason = detect_block(html, 200, {})
    assert reason is not None and expect in reason
    assert "\n" not in reason


def test_cloudflare_mitigated_header():
    assert "Cloudflare" in detect_block("<html><body>x</body></html>", 403, {"CF-Mitigated": "challenge"})


def test_401_is_a_login_requirement():
    assert "login required" in detect_block("", 401, {})


@pytest.mark.parametrize("html", [
    normal(),
    # a small login link in the navigation (already in NAV) and a newsletter form
    normal('<form action="/subscribe"><input type="email" name="email" placeholder="Your email">'
           '<button>Subscribe to our newsletter</button></form>'),
    # a login box with a password field in the header of a content page
    normal('<form action="/login" class="mini-login"><input name="user"><input type="password" name="pw">'
           '<button>Log in</button></form>'),
    # an ASP.NET page: one form wraps the whole page, a login box inside
    "<html><head><title>Stats</title></head><body><form id='aspnetForm' method='post'>"
    "<input type='password' name='ctl00$pw'>" + normal()[normal().index("<main>"):] + "</form></body></html>",
    # a comment form protected by reCAPTCHA under a long article
    normal('<form><textarea></textarea><div class="g-recaptcha" data-sitekey="x"></div></form>',
           head='<script src="https://www.google.com/recaptcha/api.js"></script>'),
    # vendors' scripts on an ordinary protected page
    normal(head='<script src="https://js.datadome.co/tags.js"></script>'
                '<script src="//client.perimeterx.net/PX12345/main.min.js"></script>'
                '<script src="/_Incapsula_Resource?SWJIYLWA=719d34d31c8e3a6e6fffd425f7e032f3"></script>'
                '<script src="/cdn-cgi/challenge-platform/scripts/jsd/main.js"></script>'),
    # an article that mentions "access denied" and "captcha"
    normal("<p>Why you see Access Denied errors and how captcha systems work.</p>"),
    "",
    "<html><body><table><tr><td>1</td></tr></table></body></html>",
])
def test_ordinary_pages_are_not_blocks(html):
    assert detect_block(html, 200, {}) is None


def test_short_data_page_is_not_a_block():
    html = ('<html><head><title>Scores</title></head><body><table class="stats">'
            '<tr class="player"><td class="name">Ada</td><td class="score">31</td></tr></table></body></html>')
    assert detect_block(html, 200, {}) is None


def test_broken_input_does_not_raise():
    assert detect_block("<<<>>>" * 1000 + "<input type=password", 200, None) is None
    assert detect_block("<input type=password>", 200, None).startswith("login wall")
    assert detect_block(None, 200, None) is None
    assert detect_block("\x00\ufffd" * 50, 200, {"cf-mitigated": None}) is None


def test_failure_fingerprint_is_short_stable_and_normalised():
    a = failure_fingerprint(errors.HTTP_ERROR, "Example.org", "503 Service Unavailable at 10:02:33")
    b = failure_fingerprint(errors.HTTP_ERROR, "example.org", "503 service unavailable at  11:45:01")
    assert a == b and len(a) == 16 and all(c in "0123456789abcdef" for c in a)
    assert a != failure_fingerprint(errors.TIMEOUT, "example.org", "503 Service Unavailable at 10:02:33")
    # The host is not part of it: the same failure on many hosts is one fingerprint (the systemic breaker
    # counts the hosts), including when the detail names the host or a URL on it.
    assert a == failure_fingerprint(errors.HTTP_ERROR, "other.org", "503 Service Unavailable at 10:02:33")
    assert failure_fingerprint(errors.NETWORK, "a.org", "connection refused: http://a.org:81/x") == \
        failure_fingerprint(errors.NETWORK, "b.org", "connection refused: http://b.org:82/y")
    assert a != failure_fingerprint(errors.HTTP_ERROR, "example.org", "connection refused")
    assert failure_fingerprint(None, None, None) == failure_fingerprint(None, None, "")




def test_no_real_corpus_page_is_taken_for_a_block():
    pages = sorted(CORPUS.rglob("before.html")) + sorted(CORPUS.rglob("after.html"))
    assert len(pages) > 100
    flagged = [(str(p.relative_to(CORPUS)), detect_block(p.read_text(errors="replace"), 200, {})) for p in pages]
    assert [f for f in flagged if f[1]] == []


def test_a_binary_answer_is_not_html_but_text_a_parser_could_read_is():
    from healerd.core.classify import not_html_reason

    assert not_html_reason(b"%PDF-1.7 ...", "application/pdf").startswith("not HTML: the server sent application/pdf")
    assert not_html_reason(b"\x89PNG\r\n\x1a\n\x00\x00", "image/png")
    assert not_html_reason(b"PK\x03\x04\x00\x00", None).startswith("not HTML: the answer is binary")
    assert not_html_reason(b"<html><body>x</body></html>", "text/html; charset=utf-8") is None
    assert not_html_reason(b'{"a": 1}', "application/json") is None
    assert not_html_reason(b"<feed/>", "application/atom+xml") is None
    assert not_html_reason(b"<html/>", None) is None


def test_sqlite_schema_notices_are_kept_out_of_the_log():
    import logging

    from healerd.logsetup import _not_sqlite_schema

    schema = logging.LogRecord("root", logging.INFO, "", 0, "SQLITE_LOG: statement aborts at 1: [SELECT ...]", (), None)
    schema.sqlite_code = 17
    other = logging.LogRecord("root", logging.ERROR, "", 0, "SQLITE_LOG: disk I/O error", (), None)
    other.sqlite_code = 10
    plain = logging.LogRecord("healerd", logging.INFO, "", 0, "ready", (), None)
    assert not _not_sqlite_schema(schema)
    assert _not_sqlite_schema(other) and _not_sqlite_schema(plain)
