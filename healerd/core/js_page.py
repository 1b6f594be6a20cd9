"""Does a page fetched over HTTP look like a shell its scripts fill in (a single-page app)? Then
"No items" most likely means the records are drawn by JavaScript, and the way to read them is a
browser fetch (`fetch = "browser"`), which the message says."""

from __future__ import annotations

import re

_MOUNT = re.compile(r"<(?:div|main|section|app-root)\b[^>]*\bid\s*=\s*[\"']?(?:app|root|__next|__nuxt|svelte|main-app|"
                    r"react-root|vue-app)[\"']?[^>]*>\s*</(?:div|main|section|app-root)>", re.IGNORECASE)
_NOSCRIPT_JS = re.compile(r"<noscript\b[^>]*>[^<]{0,400}javascript", re.IGNORECASE)
_SCRIPT = re.compile(r"<script\b[^>]*>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
_SCRIPT_SRC = re.compile(r"<script\b[^>]*\bsrc\s*=", re.IGNORECASE)
_TAGS = re.compile(r"<(script|style|template)\b.*?</\1\s*>|<[^>]+>", re.IGNORECASE | re.DOTALL)

HINT = 'the page looks drawn by JavaScript: try fetch = "browser" in the blueprint'


def script_rendered(html: str | None) -> bool:
    """True for a page with scripts whose visible text is next to nothing, or with an empty app
    mount point (`<div id="app"></div>`, `#root`, `#__next`) or a noscript "enable JavaScript"."""
    if not html:
        return False
    head = html[:2_000_000]
    scripts = _SCRIPT.findall(head)
    if not scripts and not _SCRIPT_SRC.search(head):
        return False
    if _MOUNT.search(head) or _NOSCRIPT_JS.search(head):
        return True
    text = " ".join(_TAGS.sub(" ", head).split())
    return len(text) < 200 and sum(len(s) for s in scripts) > len(text)
