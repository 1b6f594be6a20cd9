"""Extraction exactly as docs/REFERENCE.md ("Extraction") defines it.

- Parse with selectolax's lexbor backend.
- Without `items`: each field's selector on the whole document, first match.
- A field (or `items`) with a list of selectors tries them in order: the first
  selector that matches a node wins (for `items`: the first that matches any).
- With `items`: each node `items` matches is one record, in document order; each
  field is `item.css_first(css)`.
- A value is `node.text(deep=True, separator="")` with whitespace collapsed, or the
  attribute's value as is; no match is None.
- Work is bounded before any of it is done: `check_page` counts the elements and
  measures the nesting of the raw HTML with C-speed scans (a page nested 100,000 levels
  deep costs the HTML parser minutes) and `extract(..., max_items=N)` refuses more than N
  items before building a record; both raise `PageTooLarge` (error class TOO_LARGE).
- `int`/`float` take the first number in the text (`-?\\d[\\d,]*(\\.\\d+)?`, commas
  dropped); text with no number gives None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from healerd.core import errors
from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.errors import HealerdError

NUMBER = re.compile(r"-?\d[\d,]*(\.\d+)?")
MAX_ELEMENTS = 250_000
MAX_DEPTH = 256
MAX_ITEMS = 10_000
# Elements that never nest: void elements, and those whose end tag a page may leave out
# (a following sibling closes them), which would otherwise count as ever deeper nesting.
_FLAT = frozenset({
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr",
    "param", "keygen", "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "thead", "tbody",
    "tfoot", "colgroup", "caption", "rb", "rt", "rtc", "rp", "html", "head", "body",
})


@dataclass(frozen=True)
class PageLimits:
    """The work bounds of one page ([fetch] max_items, max_elements, max_depth)."""

    max_items: int = MAX_ITEMS
    max_elements: int = MAX_ELEMENTS
    max_depth: int = MAX_DEPTH


class PageTooLarge(ValueError, HealerdError):
    """A page over a work bound (elements, nesting, items); `error_type` is TOO_LARGE."""

    error_type = errors.TOO_LARGE


def _alternation(words: list[str]) -> str:
    """A regex alternation matching exactly `words`, as a prefix tree (the engine tries a branch
    per distinct first letter instead of one per word)."""
    by_first: dict[str, list[str]] = {}
    for w in words:
        by_first.setdefault(w[0], []).append(w[1:])
    parts = []
    for first, rests in sorted(by_first.items()):
        longer = [r for r in rests if r]
        if not longer:
            parts.append(first)
        else:
            parts.append(f"{first}(?:{_alternation(longer)})" + ("?" if "" in rests else ""))
    return "|".join(parts)


# One match per start or end tag whose name is not flat, on the ASCII-lowercased UTF-8 bytes of
# the page; the group is b"" (a start tag, +1) or b"/" (an end tag, -1). Flat tags do not match
# (the lookahead), so the C engine skips them; a match ends inside the name, which holds no "<",
# so the next one starts where the next tag as written does. A tag as written is "<" or "</"
# then an ASCII letter, its name ASCII letters and digits. Bytes: non-ASCII characters are
# bytes >= 0x80 there, and bytes.lower() folds only A-Z, so no character lowercases into a tag
# the text does not hold (str.lower() maps the Kelvin sign to "k").
_NONFLAT_TAG = re.compile(
    rb"<(/?)(?!(?:" + _alternation(sorted(_FLAT)).encode() + rb")(?![a-z0-9]))[a-z]")
_NONFLAT_STEP = {b"": 1, b"/": -1}


def nesting_depth(html: str) -> int:
    """The deepest nesting of `html`'s tags as written: the highest running sum (from 0) of +1
    per start tag and -1 per end tag ("<name" / "</name", the name ASCII letters and digits
    starting with a letter), flat elements (`_FLAT`) counting 0. At C speed:
    the regex engine finds the tags, map/accumulate/max add up the steps, no Python per tag."""
    tags = _NONFLAT_TAG.findall(html.encode("utf-8", "surrogatepass").lower())
    return max(accumulate(map(_NONFLAT_STEP.__getitem__, tags), initial=0))


def check_page(html: str | bytes, max_elements: int = MAX_ELEMENTS, max_depth: int = MAX_DEPTH) -> None:
    """Raise PageTooLarge when `html` has more than `max_elements` start tags or nests elements
    deeper than `max_depth`, before anything parses it. The depth is measured on the tags as
    written (end tags a page may omit do not count), so it never overstates a real page's."""
    if isinstance(html, bytes):
        html = html.decode("utf-8", errors="replace")
    # Each element starts with a "<", one character, so a page no longer than a bound cannot
    # pass it: only longer pages have their "<" (then "</") counted and their tags scanned.
    # (Counting every page's "<" first, to skip the scan on pages with few tags, cost ~30 us
    # on each 100 KB listing page and saved little: such pages are short and scan fast.)
    if len(html) > max_elements:
        lt = html.count("<")
        if lt > max_elements:
            count = lt - html.count("</")   # start tags (and comments): C speed, no copies
            if count > max_elements:
                raise PageTooLarge(f"the page has {count} elements, more than max_elements ({max_elements}): "
                                   f"not parsed")
    if len(html) <= max_depth:
        return
    depth = nesting_depth(html)
    if depth > max_depth:
        raise PageTooLarge(f"the page nests elements {depth} deep, more than max_depth ({max_depth}): not parsed")


def parse_html(html: str | bytes) -> LexborHTMLParser:
    if isinstance(html, bytes):
        html = html.decode("utf-8", errors="replace")
    return LexborHTMLParser(html)


# The attribute names the HTML parser keeps in mixed case (SVG's and MathML's, in the spec's
# "adjust SVG/MathML attributes" steps), lowercased: every other attribute name is lowercase.
_MIXED_CASE = frozenset((
    "attributename attributetype basefrequency baseprofile calcmode clippathunits diffuseconstant edgemode "
    "filterunits glyphref gradienttransform gradientunits kernelmatrix kernelunitlength keypoints keysplines "
    "keytimes lengthadjust limitingconeangle markerheight markerunits markerwidth maskcontentunits maskunits "
    "numoctaves pathlength patterncontentunits patterntransform patternunits pointsatx pointsaty pointsatz "
    "preservealpha preserveaspectratio primitiveunits refx refy repeatcount repeatdur requiredextensions "
    "requiredfeatures specularconstant specularexponent spreadmethod startoffset stddeviation stitchtiles "
    "surfacescale systemlanguage tablevalues targetx targety textlength viewbox viewtarget xchannelselector "
    "ychannelselector zoomandpan definitionurl").split())


@lru_cache(maxsize=256)
def _one_attribute(attr: str) -> bool:
    """Whether `attrs.get(attr)` (one attribute, looked up without regard to case) gives what
    `attributes.get(attr)` (a dict of them all, by exact name: 10x the cost) does: for a lowercase
    name that the parser never keeps in mixed case."""
    return attr == attr.lower() and attr not in _MIXED_CASE


def node_value(node: LexborNode | None, attr: str | None) -> str | None:
    if node is None:
        return None
    if attr:
        return node.attrs.get(attr) if _one_attribute(attr) else node.attributes.get(attr)
    return " ".join(node.text(deep=True, separator="").split())


def first_number(text: str | None) -> float | None:
    if text is None:
        return None
    m = NUMBER.search(text)
    if not m:
        return None
    return float(m.group(0).replace(",", ""))


def coerce(raw: str | None, ftype: str) -> Any:
    """The typed value of a raw string: str as is; int/float from the first number."""
    if raw is None:
        return None
    if ftype == "str":
        return raw
    num = first_number(raw)
    if num is None:
        return None
    if ftype == "int":
        return int(num)
    return num


@dataclass
class Extraction:
    """What a blueprint gave on one page.

    `data` is one dict (no `items`) or a list of dicts, typed; `raw` has the same
    shape with the raw strings, so the validator can tell "no match" (raw None)
    from "matched but not a number" (raw str, value None).
    """

    data: dict[str, Any] | list[dict[str, Any]]
    raw: dict[str, str | None] | list[dict[str, str | None]]
    item_count: int | None  # None for single-record blueprints


def first_node(root: LexborNode | LexborHTMLParser, selectors: tuple[str, ...]) -> LexborNode | None:
    """The first match of the first selector that matches anything under `root`, or None."""
    for css in selectors:
        node = root.css_first(css)
        if node is not None:
            return node
    return None


def item_nodes(tree: LexborHTMLParser, selectors: tuple[str, ...]) -> list[LexborNode]:
    """The item nodes of the first `items` selector that matches any node."""
    for css in selectors:
        nodes = tree.css(css)
        if nodes:
            return nodes
    return []


_Plan = tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, int, str | None, str], ...]]


@lru_cache(maxsize=1024)
def _plan(fields: tuple[FieldSpec, ...]) -> _Plan:
    """How a record is built from `fields`: (each distinct selector list, looked up once per record
    however many fields read it (a link's text and its href); per field in order (name, index of
    its lookup or -1 without `css`, attr, type))."""
    lookups: list[tuple[str, ...]] = []
    columns = []
    for spec in fields:
        sels = spec.selectors
        if not sels:
            columns.append((spec.name, -1, spec.attr, spec.type))
            continue
        if sels not in lookups:
            lookups.append(sels)
        columns.append((spec.name, lookups.index(sels), spec.attr, spec.type))
    return tuple(lookups), tuple(columns)


def _record(root: LexborNode | LexborHTMLParser, plan: _Plan) -> tuple[dict, dict]:
    lookups, columns = plan
    nodes = [root.css_first(sels[0]) if len(sels) == 1 else first_node(root, sels) for sels in lookups]
    data: dict[str, Any] = {}
    raw: dict[str, str | None] = {}
    for name, at, attr, ftype in columns:
        node = nodes[at] if at >= 0 else None
        value = node_value(node, attr)
        raw[name] = value
        data[name] = value if ftype == "str" else coerce(value, ftype)
    return data, raw


def extract(page: str | bytes | LexborHTMLParser, blueprint: Blueprint, max_items: int | None = None,
            items_out: list | None = None) -> Extraction:
    """Run a selector blueprint on a page (HTML text or an already parsed tree).

    With `max_items`, a page whose `items` selector matches more nodes raises PageTooLarge
    before any record is built. `items_out`, a list, receives the item nodes (for the drift
    trigger, healerd.core.drift, which then need not query them again)."""
    tree = page if isinstance(page, LexborHTMLParser) else parse_html(page)
    if blueprint.items:
        nodes = item_nodes(tree, blueprint.items_selectors)
        if items_out is not None:
            items_out.extend(nodes)
        if max_items is not None and len(nodes) > max_items:
            raise PageTooLarge(f"the items selector matched {len(nodes)} items, more than max_items "
                               f"({max_items})")
        plan = _plan(tuple(blueprint.fields.values()))
        data_list, raw_list = [], []
        for item in nodes:
            d, r = _record(item, plan)
            data_list.append(d)
            raw_list.append(r)
        return Extraction(data_list, raw_list, len(data_list))
    root = tree.root if tree.root is not None else tree
    d, r = _record(root, _plan(tuple(blueprint.fields.values())))
    return Extraction(d, r, None)


def extract_field(tree: LexborHTMLParser, items: str | None, css: str, attr: str | None) -> list[str | None]:
    """The raw values one field selector gives: one per item, or a single-element list."""
    if items:
        return [node_value(item.css_first(css), attr) for item in tree.css(items)]
    root = tree.root if tree.root is not None else tree
    return [node_value(root.css_first(css), attr)]
