"""Page indexes and node fingerprints for the built-in healer.

`Page` parses a document once and indexes every element: tag, attributes,
collapsed text, parent, depth, position among siblings, plus dicts from text
and attribute values to nodes (so value look-ups are dict hits, not scans).
`Fingerprint` records what a selector matched on the last good page; `similarity`
compares a fingerprint with a node of the current page.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from selectolax.lexbor import LexborHTMLParser

from healerd.core.extract import parse_html
from healerd.core.heal.page.label_pairs import is_label_pair
from healerd.core.heal.page.texts import collapsed_texts

MAX_INDEXED_TEXT = 5000          # texts longer than this are not value-indexed
LABEL_MAX = 60                   # a label is short text
WALK_AFTER = 32                  # containers one selector is asked of one by one before its matches are read at once
_WORD = re.compile(r"[a-z]+|\d+")
_CASE_STEP = re.compile(r"([a-z])([A-Z])")
_NUM = re.compile(r"^-?\d[\d,]*(\.\d+)?$")
_MONEY = re.compile(r"^[^\d\s]{0,3}\s?-?\d[\d,]*(\.\d+)?\s?[^\d\s]{0,3}$")
_DATE = re.compile(
    r"\b(\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}|(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d)",
    re.I,
)
_URL = re.compile(r"^(https?:|/|\.{1,2}/|#|[\w.-]+\.(html?|php|aspx?)\b)")
_LABEL_TAGS = {"th", "dt", "label", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "b", "legend", "caption"}


def collapse(text: str | None) -> str:
    return " ".join(text.split()) if text else ""


def text_shape(value: str | None) -> str:
    """A coarse kind for a value: empty, number, money, date, url, word, short, text."""
    v = (value or "").strip()
    if not v:
        return "empty"
    if _NUM.match(v):
        return "number"
    if _MONEY.match(v) and any(c.isdigit() for c in v):
        return "money"
    if _DATE.search(v) and len(v) < 40:
        return "date"
    if _URL.match(v) and " " not in v:
        return "url"
    if " " not in v:
        return "word"
    return "short" if len(v) <= 40 else "text"


def words(*parts: str) -> set[str]:
    """Lower-case word tokens of class names, tags, labels (splits on -, _ and case)."""
    out: set[str] = set()
    for part in parts:
        if part:
            out.update(_part_words(part))
    return out


@lru_cache(maxsize=4096)
def _part_words(part: str) -> frozenset[str]:
    """One part's words (a page repeats its class names: each is split once)."""
    return frozenset(_WORD.findall(_CASE_STEP.sub(r"\1 \2", part).lower()))


def jaccard(a: set, b: set) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def norm_label(text: str) -> str:
    return collapse(text).lower().strip(" :*¶#").strip()


def near_closeness(value: str, text: str, attr: str | None) -> float:
    """0..1 closeness when `text` nearly carries `value` (one contains the other, bounded length), else 0.

    A longer text must contain the value whole; a shorter one counts only for text (attribute
    values such as URLs and ids count only when the old value is kept whole) and from 4 characters.
    """
    lv, lt = len(value), len(text)
    if lv < 4 or lt == lv or lt < int(lv * 0.6) or lt > lv * 3 + 40:
        return 0.0
    if lt > lv:
        if value not in text:
            return 0.0
    elif attr or text not in value or lt < 4:
        return 0.0
    return min(lt, lv) / max(lt, lv)


class Page:
    """One parsed page with per-element indexes (element order = document order)."""

    def __init__(self, html: str | bytes | LexborHTMLParser):
        self.tree = html if isinstance(html, LexborHTMLParser) else parse_html(html)
        nodes = self.nodes = self.tree.css("*")
        n = len(nodes)
        pos = self.pos = {node.mem_id: i for i, node in enumerate(nodes)}
        self.tags = [node.tag or "" for node in nodes]
        self.attrs = [dict(node.attributes) for node in nodes]
        get = pos.get
        parent = self.parent = [-1 if (par := node.parent) is None else get(par.mem_id, -1) for node in nodes]
        depth = self.depth = [0] * n
        children: list[list[int]] = [[] for _ in range(n)]
        self.children = children
        for i, p in enumerate(parent):
            if p >= 0:
                depth[i] = depth[p] + 1
                children[p].append(i)
        self.end = self._subtree_ends()
        self._attr_index: dict[str, dict[str, list[int]]] = {}
        self._labels: dict[int, tuple[str, str]] = {}
        self._first: dict[tuple[int, str], int | None] = {}     # (container, css) -> first match
        self._asked: dict[str, int] = {}                        # css -> containers asked by css_first
        self._matches: dict[str, list[int]] = {}                # css -> every match, read over the whole page

    # The text and class indexes are built on first use, once: a page that needs no healing
    # (the old blueprint still works) or is only read for a few fingerprints never builds them.
    @cached_property
    def texts(self) -> list[str]:
        """Each element's collapsed text, joined bottom-up (a wrapper's text is never collapsed whole again)."""
        return collapsed_texts(self.nodes, self.pos, self.parent)

    @cached_property
    def text_index(self) -> dict[str, list[int]]:
        """Collapsed text (up to MAX_INDEXED_TEXT characters) -> the elements carrying it, in document order."""
        index: dict[str, list[int]] = {}
        get = index.get
        for i, t in enumerate(self.texts):
            if t and len(t) <= MAX_INDEXED_TEXT:
                hits = get(t)
                if hits is None:
                    index[t] = [i]
                else:
                    hits.append(i)
        return index

    @cached_property
    def by_tag(self) -> dict[str, list[int]]:
        by_tag: dict[str, list[int]] = {}
        for i, tag in enumerate(self.tags):
            by_tag.setdefault(tag, []).append(i)
        return by_tag

    @cached_property
    def by_class(self) -> dict[str, list[int]]:
        by_class: dict[str, list[int]] = {}
        get = by_class.get
        for i, a in enumerate(self.attrs):
            cls = a.get("class")
            if cls:
                for c in set(cls.split()):
                    hits = get(c)
                    if hits is None:
                        by_class[c] = [i]
                    else:
                        hits.append(i)
        return by_class

    def _subtree_ends(self) -> list[int]:
        """end[i]: one past the last element index inside i's subtree."""
        n = len(self.nodes)
        end = list(range(1, n + 1))
        for i in range(n - 1, -1, -1):
            p = self.parent[i]
            if p >= 0 and end[i] > end[p]:
                end[p] = end[i]
        return end

    # -- basic facts ---------------------------------------------------------
    def classes(self, i: int) -> list[str]:
        return (self.attrs[i].get("class") or "").split()

    def contains(self, anc: int, i: int) -> bool:
        """True when i is anc or inside anc's subtree."""
        return anc <= i < self.end[anc]

    def ancestors(self, i: int, limit: int = 1000) -> list[int]:
        parent = self.parent
        out = []
        p = parent[i]
        while p >= 0 and limit > 0:
            out.append(p)
            p = parent[p]
            limit -= 1
        return out

    def sibling_index(self, i: int) -> tuple[int, int]:
        """(1-based index among element siblings, 1-based index among same-tag siblings)."""
        p = self.parent[i]
        if p < 0:
            return 1, 1
        sibs = self.children[p]
        k = sibs.index(i)
        same = sum(1 for s in sibs[:k] if self.tags[s] == self.tags[i])
        return k + 1, same + 1

    def value(self, i: int, attr: str | None) -> str | None:
        if attr:
            return self.attrs[i].get(attr)
        return self.texts[i]

    def index_of(self, node) -> int | None:
        return None if node is None else self.pos.get(node.mem_id)

    def first_in(self, container: int, css: str) -> int | None:
        """The first element matching `css` in container's subtree, the container included: lexbor's
        `css_first` from it, asked once per (container, css).

        lexbor matches a selector against the whole document (its ancestors too), wherever the
        search starts; so once one selector was asked of more than WALK_AFTER containers (a field
        checked in every record of a big listing), its matches are read in one pass over the
        page and each container's first is the first of them inside its subtree.
        """
        hits = self._matches.get(css)
        if hits is None:
            key = (container, css)
            if key in self._first:
                return self._first[key]
            asked = self._asked[css] = self._asked.get(css, 0) + 1
            if asked <= WALK_AFTER:
                got = self._first[key] = self.index_of(self.nodes[container].css_first(css))
                return got
            hits = self._all_matches(css)
        k = bisect_left(hits, container)
        return hits[k] if k < len(hits) and hits[k] < self.end[container] else None

    def first_in_each(self, containers: list[int], css: str) -> list[int | None]:
        """`first_in` for each container: one pass over the page for more than WALK_AFTER of them."""
        if len(containers) <= WALK_AFTER and css not in self._matches:
            return [self.first_in(c, css) for c in containers]
        hits, end = self._all_matches(css), self.end
        out: list[int | None] = []
        for c in containers:
            k = bisect_left(hits, c)
            out.append(hits[k] if k < len(hits) and hits[k] < end[c] else None)
        return out

    def all_matching(self, css: str) -> list[int]:
        """Every element matching `css`, in document order; none for a selector lexbor cannot read."""
        try:
            return self._all_matches(css)
        except Exception:
            return []

    def _all_matches(self, css: str) -> list[int]:
        """Every element matching `css`, in document order (one lexbor pass over the page, kept)."""
        hits = self._matches.get(css)
        if hits is None:
            pos = self.pos
            hits = self._matches[css] = sorted(i for i in (pos.get(n.mem_id) for n in self.tree.css(css))
                                               if i is not None)
        return hits

    # -- value look-ups ------------------------------------------------------
    def attr_index(self, attr: str) -> dict[str, list[int]]:
        idx = self._attr_index.get(attr)
        if idx is None:
            idx = {}
            for i, a in enumerate(self.attrs):
                v = a.get(attr)
                if v is not None:
                    idx.setdefault(v, []).append(i)
            self._attr_index[attr] = idx
        return idx

    def exact(self, value: str, attr: str | None, within: int | None = None) -> list[int]:
        """Elements whose value (text or attribute) equals `value`, optionally inside `within`."""
        hits = (self.attr_index(attr) if attr else self.text_index).get(value)
        if hits is None:
            return []
        if within is not None:
            # the index lists are in document order: the subtree's hits are one slice of them
            lo = bisect_left(hits, within)
            return hits[lo:bisect_left(hits, self.end[within], lo)]
        return hits

    def near(self, value: str, attr: str | None, within: int | None = None, limit: int = 50) -> list[tuple[int, float]]:
        """Elements whose value contains `value` or is contained in it (bounded length); with a 0..1 closeness.

        With `within`, only that subtree is read (not the whole page index), so looking in
        every record container of a listing costs one pass over the page, not one per container.
        """
        if len(value) < 4:
            return []
        out: list[tuple[int, float]] = []
        if within is not None and self.end[within] - within < len(self.text_index):
            for i in range(within, self.end[within]):
                text = self.value(i, attr)
                ok = text and (attr or len(text) <= MAX_INDEXED_TEXT)   # as the text index holds them
                closeness = near_closeness(value, text, attr) if ok else 0.0
                if closeness:
                    out.append((i, closeness))
        else:
            source = self.attr_index(attr) if attr else self.text_index
            for text, idxs in source.items():
                closeness = near_closeness(value, text, attr)
                if not closeness:
                    continue
                for i in idxs:
                    if within is None or self.contains(within, i):
                        out.append((i, closeness))
                if len(out) > limit * 4:
                    break
        out.sort(key=lambda t: (-t[1], t[0]))
        return out[:limit]

    def chain_members(self, i: int) -> list[int]:
        """i with its ancestors and descendants that carry exactly the same text (one visible occurrence)."""
        t = self.texts[i]
        top = i
        while self.parent[top] >= 0 and self.texts[self.parent[top]] == t:
            top = self.parent[top]
        members = [top]
        cur = top
        while True:
            kids = [c for c in self.children[cur] if self.texts[c] == t]
            if len(kids) != 1:
                break
            cur = kids[0]
            members.append(cur)
        return members

    # -- labels --------------------------------------------------------------
    def label(self, i: int) -> str:
        """The text that names node i: column header, <label for>, <dt>, or a short preceding sibling."""
        return self.label_info(i)[0]

    def label_info(self, i: int) -> tuple[str, str]:
        """(label, kind); kind is column | for | dt | label | heading | "" (strong kinds name one field)."""
        got = self._labels.get(i)
        if got is None:
            text, kind = self._find_label(i)
            got = (norm_label(text), kind if text else "")
            self._labels[i] = got
        return got

    def _find_label(self, i: int) -> tuple[str, str]:
        cell = i
        for _ in range(3):
            if cell < 0:
                break
            if self.tags[cell] in ("td", "th"):
                header = self._column_header(cell)
                if header:
                    return header, "column"
                break
            cell = self.parent[cell]
        node_id = self.attrs[i].get("id")
        if node_id:
            for j in self.attr_index("for").get(node_id, []):
                if self.tags[j] == "label":
                    return self.texts[j], "for"
        own = self.texts[i]
        cur = i
        for _level in range(4):
            if cur < 0:
                break
            p = self.parent[cur]
            if p < 0:
                break
            sibs = self.children[p]
            k = sibs.index(cur)
            for s in reversed(sibs[max(0, k - 3):k]):
                t = self.texts[s]
                if not t or len(t) > LABEL_MAX or (own and t == own):
                    continue
                if self.tags[s] in ("dt", "th", "label") or t.endswith(":"):
                    return t, ("dt" if self.tags[s] == "dt" else "label")
                if self.tags[s] in _LABEL_TAGS or self.tags[s] != self.tags[cur]:
                    return t, "heading"
                if is_label_pair(self.tags[p], [self.tags[c] for c in sibs], k, not self.children[s]):
                    return t, "pair"
                break
            for c in sibs:
                if c != cur and self.tags[c] == "label" and self.texts[c] and len(self.texts[c]) <= LABEL_MAX:
                    return self.texts[c], "label"
            cur = p
        return "", ""

    def _column_header(self, cell: int) -> str:
        row = self.parent[cell]
        if row < 0 or self.tags[row] != "tr":
            return ""
        col = [c for c in self.children[row] if self.tags[c] in ("td", "th")].index(cell)
        table = row
        while table >= 0 and self.tags[table] != "table":
            table = self.parent[table]
        if table < 0:
            return ""
        header_row = -1
        for j in range(table + 1, self.end[table]):
            if self.tags[j] == "tr":
                cells = [c for c in self.children[j] if self.tags[c] in ("td", "th")]
                if cells and all(self.tags[c] == "th" for c in cells):
                    header_row = j
                break
        if header_row < 0 or header_row == row:
            return ""
        cells = [c for c in self.children[header_row] if self.tags[c] in ("td", "th")]
        return self.texts[cells[col]] if col < len(cells) else ""


@dataclass
class Fingerprint:
    """What an old selector matched on the last good page."""

    tag: str
    node_id: str
    classes: set[str]
    class_words: set[str]
    attrs: dict[str, str]
    value: str
    shape: str
    label: str
    label_kind: str
    ancestor_words: set[str]
    ancestor_tags: list[str]
    sib_index: int
    extra: dict = field(default_factory=dict)


_SKIP_ATTRS = {"class", "id", "style"}


def fingerprint(page: Page, i: int, value: str | None) -> Fingerprint:
    anc = page.ancestors(i, 4)
    anc_words: set[str] = set()
    for a in anc:
        anc_words |= {"<" + page.tags[a]} | words(*page.classes(a))
    cls = page.classes(i)
    return Fingerprint(
        tag=page.tags[i],
        node_id=page.attrs[i].get("id") or "",
        classes=set(cls),
        class_words=words(*cls),
        attrs={k: v for k, v in page.attrs[i].items() if k not in _SKIP_ATTRS and v is not None},
        value=value or "",
        shape=text_shape(value),
        label=page.label_info(i)[0],
        label_kind=page.label_info(i)[1],
        ancestor_words=anc_words,
        ancestor_tags=[page.tags[a] for a in anc],
        sib_index=page.sibling_index(i)[0],
        extra={"text": page.texts[i] or ""},
    )


def similarity(fp: Fingerprint, page: Page, i: int, value: str | None = None) -> float:
    """0..1 structural likeness of node i to the fingerprint (tag, classes, attributes, ancestors, shape, position)."""
    tag_s = 1.0 if page.tags[i] == fp.tag else 0.0
    cls = page.classes(i)
    if fp.classes or cls:
        cls_s = max(jaccard(fp.classes, set(cls)), 0.8 * jaccard(fp.class_words, words(*cls)))
    else:
        cls_s = 0.7
    attrs = page.attrs[i]
    names = {k for k in attrs if k not in _SKIP_ATTRS}
    if fp.attrs or names:
        same_vals = sum(1 for k, v in fp.attrs.items() if attrs.get(k) == v)
        attr_s = 0.6 * jaccard(set(fp.attrs), names) + 0.4 * (same_vals / max(len(fp.attrs), 1))
    else:
        attr_s = 0.7
    if fp.node_id and attrs.get("id") == fp.node_id:
        attr_s = 1.0
    anc = page.ancestors(i, 4)
    anc_words: set[str] = set()
    for a in anc:
        anc_words |= {"<" + page.tags[a]} | words(*page.classes(a))
    anc_s = jaccard(fp.ancestor_words, anc_words)
    v = page.value(i, None) if value is None else value
    shape_s = 1.0 if text_shape(v) == fp.shape else 0.0
    pos_s = 1.0 if page.sibling_index(i)[0] == fp.sib_index else 0.0
    return 0.25 * tag_s + 0.2 * cls_s + 0.1 * attr_s + 0.25 * anc_s + 0.1 * shape_s + 0.1 * pos_s
