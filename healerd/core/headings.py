"""The text that names where a value sits: a table cell's cell and column header, the heading
before a value. Read by the drift checks (`drift.locus_signature` carries each field's heading;
`drift.label_of`) and by the judge's heading check (`candidate_headings`)."""

from __future__ import annotations

import re

from selectolax.lexbor import LexborNode

_DIGITS = re.compile(r"\d+")


def _children(node: LexborNode) -> list[LexborNode]:
    return [c for c in node.iter(include_text=False)]


def _text(node: LexborNode | None) -> str:
    return " ".join(node.text(deep=True, separator=" ").split()) if node is not None else ""


def _cell(node: LexborNode) -> LexborNode | None:
    n: LexborNode | None = node
    for _ in range(3):
        if n is None:
            return None
        if n.tag in ("td", "th"):
            return n
        n = n.parent
    return None



def heading_of(node: LexborNode | None) -> str:
    """The heading that names a value's place, part of its structure: a table cell's column header,
    or the <dt>, <th> or <label> just before it (digits folded). Reordered columns or a reordered
    field list keep every tag where it was but move these. "" when none."""
    if node is None:
        return ""
    cell = _cell(node)
    if cell is not None and cell.parent is not None:
        row = cell.parent
        index = next((i for i, c in enumerate(_children(row)) if c.mem_id == cell.mem_id), -1)
        table = row.parent
        while table is not None and table.tag not in ("table", "-document"):
            table = table.parent
        if table is None or table.tag != "table":
            return ""
        head = table.css_first("thead tr") or table.css_first("tr")
        if head is None or head.mem_id == row.mem_id or head.css_first("th") is None:
            return ""
        heads = _children(head)
        return _DIGITS.sub("0", _text(heads[index]))[:40] if 0 <= index < len(heads) else ""
    prev = node.prev
    while prev is not None and (not prev.tag or prev.tag.startswith("-")):
        prev = prev.prev
    if prev is not None and prev.tag in ("dt", "th", "label"):
        return _DIGITS.sub("0", _text(prev))[:40]
    return ""
