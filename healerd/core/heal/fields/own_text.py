"""An attribute field's node told apart by its own visible text.

A field read from an attribute (a link's href) lives on a node that also shows text ("next →").
When the old attribute value turns up on several nodes (the "2" page link and the "next »" link
both point at ?page=2), the one whose words agree with the old node's words is the same node
moved, the others are neighbours that share the value by chance. The agreement is a bonus to
the candidate's score, never evidence on its own: the value must still be found exactly.
"""

from __future__ import annotations

from healerd.core.heal.page.fingerprint import Fingerprint, Page, jaccard, words

TEXT_WEIGHT = 0.3   # as much as a partner field agreeing on the same node


def _text_words(text: str | None) -> set[str]:
    """The word tokens of a text that has at least one word with letters (numbers alone say nothing)."""
    found = words(text or "")
    return found if any(any(ch.isalpha() for ch in w) for w in found) else set()


def own_text_bonus(fp: Fingerprint, page: Page, i: int, attr: str | None) -> float:
    """Score bonus for node i carrying an attribute field: its words' agreement with the old node's."""
    if not attr:
        return 0.0
    old = _text_words(fp.extra.get("text"))
    if not old:
        return 0.0
    return TEXT_WEIGHT * jaccard(old, words(page.value(i, None) or ""))
