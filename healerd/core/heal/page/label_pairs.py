"""Labelled pairs: the label a modern layout writes beside a value, in a node of the same kind.

A table rewritten as cards keeps each column's header beside each value
(`<div><span>Price</span><span>14.99</span></div>`), and so do the key/value rows of
settings pages and spec sheets built from two divs. The value's label is then its sibling
of the same tag, which the older rule (a label is a `<th>`, `<dt>`, `<label>`, a heading, or a
sibling of another kind) passes over. A pair is told from two items of a list by its shape:
its holder has exactly two element children, the key first with no element inside it (text
only), the value second, and the holder is no list, table row or menu (whose two items are
peers, not a name and its value).
"""

from __future__ import annotations

import re

# holders whose children are peers (items, cells, options), never a name and its value
PEER_HOLDERS = frozenset({"ul", "ol", "menu", "nav", "dl", "table", "thead", "tbody", "tfoot", "tr", "select",
                          "datalist", "optgroup", "colgroup"})


_WORD = re.compile(r"[^\W_]+")
MAX_ADDED_WORDS = 2     # "Storage" -> "Your storage", "Price (current)": a few words added, none taken away


def label_renamed(old: str, new: str) -> bool:
    """Is `new` the old label reworded, every old word kept and at most two added ("Your storage")?

    Both labels normalised (`fingerprint.norm_label`). A renamed column header still names its
    column; a label sharing only part of the old one's words ("Storage used" for "Storage limit") does not.
    """
    was, now = _WORD.findall(old), _WORD.findall(new)
    return bool(was) and new != old and set(was) <= set(now) and len(now) - len(was) <= MAX_ADDED_WORDS


def is_label_pair(holder_tag: str, child_tags: list[str], value_pos: int, key_is_text_only: bool) -> bool:
    """Is the child at `value_pos` of a holder with these children's tags the value of a labelled pair?

    `key_is_text_only`: the child before it holds text and no element.
    """
    return (holder_tag not in PEER_HOLDERS and len(child_tags) == 2 and value_pos == 1
            and key_is_text_only and child_tags[0] == child_tags[1])
