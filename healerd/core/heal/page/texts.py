"""Every element's collapsed text, built bottom-up once per page.

An element's text (lexbor's `text(deep=True)`: its descendant text nodes joined) is the
concatenation of its children's, so the wrappers of a big page (html, body, main, the list)
each carry the whole page. Collapsing each of them again (`" ".join(t.split())` over a
megabyte) costs more than the rest of the index. Here an element whose children already
carry a lot of text is never read whole: its collapsed text is joined from its children's,
kept as `Piece`s (collapsed text, raw length, raw first and last character white or not).

`collapse(a + b)` is `collapse(a)`, a space when `a` ends or `b` starts with white space,
then `collapse(b)` (one of them empty: the other); `str.split` and `str.isspace` agree on
what is white space, so the result is the very string `" ".join((a + b).split())` gives.
"""

from __future__ import annotations

from typing import Any, NamedTuple

JOIN_FROM = 2048   # raw characters under an element's children from which its text is joined, not read


class Piece(NamedTuple):
    text: str       # collapsed
    size: int       # raw length
    lead: bool      # the raw text starts with white space
    trail: bool     # the raw text ends with white space


_EMPTY = Piece("", 0, False, False)


def piece(raw: str) -> Piece:
    if not raw:
        return _EMPTY
    return Piece(" ".join(raw.split()), len(raw), raw[0].isspace(), raw[-1].isspace())


def join(pieces: list[Piece]) -> Piece:
    """The piece of the pieces' raw texts concatenated."""
    parts: list[str] = []
    size = 0
    lead = trail = False
    gap = False                  # white space since the last non-empty collapsed part
    for p in pieces:
        if not p.size:
            continue
        if not size:
            lead = p.lead
        size += p.size
        trail = p.trail
        if p.text:
            if parts and (gap or p.lead):
                parts.append(" ")
            parts.append(p.text)
            gap = p.trail
        else:
            gap = True           # a white-space-only raw text
    return Piece("".join(parts), size, lead, trail)


def collapsed_texts(nodes: list[Any], pos: dict[int, int], parent: list[int]) -> list[str]:
    """Each element's collapsed `text(deep=True, separator="")`, in the order of `nodes` (document order).

    `pos` maps a node's `mem_id` to its index, `parent[i]` is i's parent's index (-1 for none).
    Elements are read in reverse document order, so a node's children are done before it.
    """
    n = len(nodes)
    texts = [""] * n
    size = [0] * n             # raw length
    lead = [False] * n         # raw text starts with white space
    trail = [False] * n        # raw text ends with white space
    below = [0] * n            # raw length under the element children
    for i in range(n - 1, -1, -1):
        if below[i] >= JOIN_FROM:
            parts: list[Piece] = []
            for child in nodes[i].iter(include_text=True):
                k = pos.get(child.mem_id)
                if k is not None:
                    parts.append(Piece(texts[k], size[k], lead[k], trail[k]))
                elif child.is_text_node:
                    parts.append(piece(child.text_content or ""))
                elif child.is_element_node:     # an element the index does not hold
                    parts.append(piece(child.text(deep=True, separator="")))
            got = join(parts)
            texts[i], s, lead[i], trail[i] = got.text, got.size, got.lead, got.trail
        else:
            raw = nodes[i].text(deep=True, separator="")
            s = len(raw)
            if s:
                texts[i] = " ".join(raw.split())
                lead[i] = raw[0].isspace()
                trail[i] = raw[-1].isspace()
        size[i] = s
        p = parent[i]
        if p >= 0:
            below[p] += s
    return texts
