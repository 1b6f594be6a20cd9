"""Placeholders: what a page shows where it hides or lacks a value ("Log in to see the price", "N/A").

A heal that reads a placeholder where the last good records had values has not found the
field: its data is hidden or gone, so the healer refuses it. The phrases are the ones the
drift check (`healerd.core.drift`) looks for after a scrape passed validation; they are
judged the same way: the general ones where the last good values had a shape (a number, a
URL, a date), the walls asking to log in or subscribe on any field, and never when the last
good page showed placeholders already. One judgement more than the drift check's: a text
field whose every new value is a general placeholder ("N/A", a dash) is refused too; the
healer claims a value changed in place only when a value is there.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from healerd.core.validate import value_shape

PLACEHOLDER = re.compile(
    r"^\s*(?:[-\u2010-\u2015\u2212*?]+|n/?a|none|null|tbd|tba|unknown|unavailable|not available|"
    r"(?:please\s+)?(?:log\s*in|sign\s*in|sign\s*up|register|subscribe)(?:\s+(?:now|first|to continue))?|"
    r".*\b(?:log\s*in|sign\s*in|sign\s*up|register|subscribe|members?)\b.*\b(?:to|for)\s+"
    r"(?:see|view|show|get|unlock|reveal|pricing|prices?|the price)\b.*|"
    r"(?:see|view|show) (?:price|details) .*|call for (?:price|pricing)|price on request|ask for (?:a )?price|"
    r"members? only|subscribers? only|coming soon|hidden|\.\.\.|\u2026)\s*$", re.IGNORECASE)
WALL = re.compile(
    r"^\s*(?:(?:please\s+)?(?:log\s*in|sign\s*in|sign\s*up|register|subscribe)(?:\s+(?:now|first|to continue))?|"
    r".*\b(?:log\s*in|sign\s*in|sign\s*up|register|subscribe|members?)\b.*\b(?:to|for)\s+"
    r"(?:see|view|show|get|unlock|reveal|read|pricing|prices?|the price)\b.*|members? only|subscribers? only)\s*$",
    re.IGNORECASE)


def _spread(seq: list[str], k: int) -> list[str]:
    n = len(seq)
    return list(seq) if n <= k else [seq[(j * (n - 1)) // (k - 1)] for j in range(k)]


def _column(data: Any, name: str) -> list[str]:
    rows = data if isinstance(data, list) else [data]
    out = []
    for r in rows:
        v = r.get(name) if isinstance(r, dict) else None
        text = " ".join(str(v).split()) if v is not None else ""
        if text:
            out.append(text)
    return out


def placeholder_field(new: Any, old: Any, names: list[str]) -> tuple[str, str] | None:
    """(field, why) for the first field whose new values show a placeholder where the old had values, else None."""
    for name in names:
        before = _column(old, name)
        if not before:
            continue
        shown = _spread(before, 200)   # the shape most old values had, from a spread of them
        shape, n = Counter(value_shape(v) for v in shown).most_common(1)[0]
        shaped = shape in ("number", "url", "date") and n * 2 >= len(shown)
        pattern = PLACEHOLDER if shaped else WALL
        distinct = set(before)
        if any(pattern.match(v) for v in distinct):
            continue   # the site showed placeholders before: one now is nothing new
        what = f"a {shape}" if shaped else "a value"
        now = [v for v in _column(new, name) if v not in distinct]   # an old value is no placeholder now
        for v in now:
            if pattern.match(v) and (not shaped or value_shape(v) != shape):
                return name, f"it now reads a placeholder {v[:40]!r} where the last good page had {what}"
        if (now and not shaped and len(now) == len(_column(new, name)) and not any(PLACEHOLDER.match(v) for v in distinct)
                and all(PLACEHOLDER.match(v) for v in now)):
            # a text field whose every value is now "N/A" or a dash: the values were not changed, they are gone
            return name, f"it now reads only placeholders ({now[0][:40]!r}) where the last good page had {what}"
    return None
