"""fingerprint.words splits each part once (cached) and gives what splitting it afresh gives."""

from __future__ import annotations

import re

from healerd.core.heal.page.fingerprint import words


def _afresh(*parts: str) -> set[str]:
    out: set[str] = set()
    for part in parts:
        if part:
            out.update(re.findall(r"[a-z]+|\d+", re.sub(r"([a-z])([A-Z])", r"\1 \2", part).lower()))
    return out


def test_words_as_split_afresh() -> None:
    parts = ["cardTitle-x9", "product_name", "", "HTMLParser", "a1b2", "css-1q2w3e", "<li", "Price:", "ÉtéPrix"]
    for k in range(len(parts)):
        assert words(*parts[k:]) == _afresh(*parts[k:])
        assert words(*parts[k:]) == _afresh(*parts[k:])      # the second time from the cache
    got = words("cardTitle")
    got.add("changed")                                        # the caller's set is its own
    assert words("cardTitle") == {"card", "title"}
