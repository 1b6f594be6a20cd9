"""The Doctor's structural HTML diff: what changed in the DOM, not just "it broke".

A page becomes one line per element, in document order: the element's CSS-like
path below <body> (`div.wrap > table.stats > tr.player > td.name`, the last
PATH_DEPTH levels) and its own direct text. Two such listings are compared with
difflib. Scripts, styles, SVG, <noscript>, <template> and comments are noise and
are dropped.

Work is bounded: a page over the element or nesting bound (`extract.check_page`) is not
parsed at all, and the whole diff has a time budget (DIFF_BUDGET_S); past either, the diff is
one line saying why (TOO_LARGE_NOTE / OVER_BUDGET_NOTE).

`diff_signature` hashes only the structural part of a diff (paths, no text,
digits normalised), so one template change seen on many pages of a site gives
one signature; `template_signature` hashes a page's skeleton, so pages sharing a
template can be recognised.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import time
from collections import Counter
from collections.abc import Iterator

from selectolax.lexbor import LexborHTMLParser, LexborNode

from healerd.core.errors import HealerdError
from healerd.core.extract import PageTooLarge, check_page

PATH_DEPTH = 8              # levels of the path shown per line
TEMPLATE_DEPTH = 4          # levels of the skeleton hashed by template_signature
BLOCK_LINES = 100           # removed/added lines shown per change block
COST_BUDGET = 400_000       # above this estimated matching work the diff runs on a reduced form
SKIP_TAGS = frozenset({"script", "style", "svg", "noscript", "template"})
NO_ORIGINAL = "(no last good page to compare with: the structural diff is unavailable)"
TRUNCATED = "... diff truncated: {n} more lines"
DIFF_BUDGET_S = 5.0         # wall-clock budget of one structural diff
TOO_LARGE_NOTE = "# no structural diff: the {which} page is too large to compare ({why})"
OVER_BUDGET_NOTE = "# no structural diff: comparing the pages took more than its {budget:g}s budget"


class DiffBudgetExceeded(HealerdError):
    """The structural diff ran past its time budget."""


class _Clock:
    def __init__(self, budget: float | None):
        self.until = None if budget is None else time.monotonic() + budget
        self.budget = budget

    def check(self) -> None:
        if self.until is not None and time.monotonic() > self.until:
            raise DiffBudgetExceeded()

_DIGITS = re.compile(r"\d+")
_REPEAT = re.compile(r"^(.*)  \(x(\d+)\)$")


def _segment(node: LexborNode, with_id: bool = True) -> str:
    """`tag#id.class1.class2` for one element."""
    attrs = node.attributes
    seg = node.tag or "?"
    el_id = attrs.get("id") if with_id else None
    if el_id:
        el_id = "".join(el_id.split())
        if el_id:
            seg += "#" + el_id
    cls = attrs.get("class")
    if cls:
        names = cls.split()
        if names:
            seg += "." + ".".join(names)
    return seg


def _walk(html: str, with_text: bool, max_depth: int | None = None, with_ids: bool = True,
          clock: _Clock | None = None) -> Iterator[tuple[list[str], str]]:
    """Yield (segments, own_text) per element below <body>, in document order.

    `segments` is the live path stack (copy it to keep it). One pass over the
    tree with an explicit stack; no per-element CSS queries. A page over the element or
    nesting bound yields nothing (it is never parsed); `clock` is checked every 1024 nodes.
    """
    if not html:
        return
    try:
        check_page(html)
    except PageTooLarge:
        return
    tree = LexborHTMLParser(html)
    body = tree.body
    if body is None:
        return
    path: list[str] = []
    # Each stack entry: the next sibling to visit at that depth.
    stack = [body.child]
    seen = 0
    while stack:
        seen += 1
        if clock is not None and not seen & 1023:
            clock.check()
        node = stack[-1]
        if node is None:
            stack.pop()
            if path:
                path.pop()
            continue
        stack[-1] = node.next
        if not node.is_element_node:
            continue
        tag = node.tag
        if tag in SKIP_TAGS:
            continue
        path.append(_segment(node, with_ids))
        text = ""
        if with_text:
            parts = []
            child = node.child
            while child is not None:
                if child.is_text_node:
                    parts.append(child.text_content or "")
                child = child.next
            if parts:
                text = " ".join("".join(parts).split())
        yield path, text
        if max_depth is not None and len(path) >= max_depth:
            path.pop()
            continue
        stack.append(node.child)


def structure_lines(html: str, max_text: int = 50, clock: _Clock | None = None) -> list[str]:
    """One line per element: its path (last PATH_DEPTH levels) and `: own text` when it has some."""
    out: list[str] = []
    for path, text in _walk(html or "", with_text=True, clock=clock):
        line = " > ".join(path[-PATH_DEPTH:])
        if text:
            line += ": " + text[:max_text]
        out.append(line)
    return out


def _collapse(lines: list[str]) -> list[str]:
    """Runs of identical consecutive lines as one line with a count."""
    out: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        j = i + 1
        while j < n and lines[j] == lines[i]:
            j += 1
        out.append(lines[i] if j - i == 1 else f"{lines[i]}  (x{j - i})")
        i = j
    return out


def _trim_common(a: list[str], b: list[str]) -> tuple[list[str], list[str], int]:
    """Drop the common prefix and suffix beyond the context lines; returns the offset kept."""
    n = min(len(a), len(b))
    pre = 0
    while pre < n and a[pre] == b[pre]:
        pre += 1
    suf = 0
    while suf < n - pre and a[len(a) - 1 - suf] == b[len(b) - 1 - suf]:
        suf += 1
    keep = 2  # context lines each side
    start = max(0, pre - keep)
    end_cut = max(0, suf - keep)
    return a[start:len(a) - end_cut], b[start:len(b) - end_cut], start


def _paths_only(lines: list[str]) -> list[str]:
    return [line.split(": ", 1)[0] for line in lines]


def _inventory(lines: list[str]) -> list[str]:
    """Each distinct path once, sorted, with how often it occurs."""
    counts = Counter(_paths_only(lines))
    return [p if n == 1 else f"{p}  (x{n})" for p, n in sorted(counts.items())]


def _cost(a: list[str], b: list[str]) -> int:
    """A rough measure of difflib's matching work: pairs of equal, non-popular lines.

    SequenceMatcher treats lines occurring in more than 1% of `b` as junk (autojunk);
    the rest cost about count_a * count_b each.
    """
    cb = Counter(b)
    ca = Counter(a)
    popular = len(b) // 100 + 1 if len(b) >= 200 else len(b) + 1
    return len(a) + len(b) + sum(ca[x] * n for x, n in cb.items() if n <= popular)


def _reduce(a: list[str], b: list[str]) -> tuple[list[str], list[str], str]:
    """The most detailed form of the two listings that difflib can compare quickly.

    Full lines; else runs of identical lines collapsed; else paths only (no text),
    collapsed; else an inventory of distinct paths with counts.
    """
    if _cost(a, b) <= COST_BUDGET:
        return a, b, ""
    forms = (
        (lambda x: _collapse(x), "identical consecutive lines collapsed"),
        (lambda x: _collapse(_paths_only(x)), "text left out, identical consecutive lines collapsed"),
    )
    for make, note in forms:
        ra, rb = make(a), make(b)
        if _cost(ra, rb) <= COST_BUDGET:
            return ra, rb, note
    return _inventory(a), _inventory(b), "the page is too large to diff line by line: distinct paths with counts"


def structural_diff(original_html: str | None, current_html: str, max_lines: int = 400,
                    max_chars: int = 20000, budget_s: float | None = DIFF_BUDGET_S) -> str:
    """A unified diff (last-good -> current) of the pages' structure lines; "" when identical.

    Large pages are compared on a reduced form (see `_reduce`), named in a first line. A page
    over the element or nesting bound, or a diff running past `budget_s` seconds, gives one
    line saying so instead.
    """
    if original_html is None:
        return NO_ORIGINAL
    for which, html in (("last good", original_html), ("current", current_html or "")):
        try:
            check_page(html)
        except PageTooLarge as exc:
            return TOO_LARGE_NOTE.format(which=which, why=exc)
    clock = _Clock(budget_s)
    try:
        return _diff(original_html, current_html, max_lines, max_chars, clock)
    except DiffBudgetExceeded:
        return OVER_BUDGET_NOTE.format(budget=budget_s)


def _diff(original_html: str, current_html: str, max_lines: int, max_chars: int, clock: _Clock) -> str:
    a = structure_lines(original_html, clock=clock)
    b = structure_lines(current_html or "", clock=clock)
    if a == b:
        return ""
    a, b, offset = _trim_common(a, b)
    a, b, note = _reduce(a, b)
    clock.check()
    if note:
        offset = 0  # line numbers of a reduced form do not map back to the page
    out: list[str] = [f"# reduced diff: {note}"] if note else []
    size = sum(len(line) + 1 for line in out)
    more = 0
    for line in _unified(a, b, offset):
        if more or len(out) >= max_lines or size + len(line) + 1 > max_chars:
            more += 1
            continue
        clock.check()
        out.append(line)
        size += len(line) + 1
    if len(out) == (1 if note else 0):
        return ""  # only text changed, and the reduced form leaves text out
    if more:
        out.append(TRUNCATED.format(n=more))
    return "\n".join(out)


def _range(start: int, stop: int) -> str:
    """A unified-diff hunk range (difflib's convention)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def _unified(a: list[str], b: list[str], offset: int) -> Iterator[str]:
    """difflib's unified diff (n=2) with line numbers shifted by `offset`, and long runs of
    removed or added lines cut at BLOCK_LINES each, so a truncated diff shows both sides."""
    yield "--- last-good"
    yield "+++ current"
    matcher = difflib.SequenceMatcher(None, a, b)
    for group in matcher.get_grouped_opcodes(2):
        first, last = group[0], group[-1]
        yield (f"@@ -{_range(first[1] + offset, last[2] + offset)} "
               f"+{_range(first[3] + offset, last[4] + offset)} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for line in a[i1:i2]:
                    yield " " + line
                continue
            if tag in ("replace", "delete"):
                yield from _capped("-", a[i1:i2], "removed")
            if tag in ("replace", "insert"):
                yield from _capped("+", b[j1:j2], "added")


def _capped(sign: str, lines: list[str], what: str) -> Iterator[str]:
    for line in lines[:BLOCK_LINES]:
        yield sign + line
    if len(lines) > BLOCK_LINES:
        yield f"... {len(lines) - BLOCK_LINES} more {what} lines"


def _path_of(line: str) -> str:
    path = line.split(": ", 1)[0]
    m = _REPEAT.match(path)
    if m:
        path = m.group(1)
    return _DIGITS.sub("0", path.strip())


def diff_signature(diff_text: str) -> str:
    """A short stable hash of the structural change in a diff: changed paths only, no text.

    Paths present on both sides (text-only changes) do not count; digit runs are
    normalised. "" when the diff has no structural change.
    """
    if not diff_text:
        return ""
    removed: set[str] = set()
    added: set[str] = set()
    for line in diff_text.splitlines():
        if line.startswith(("---", "+++")) or line[:1] not in ("-", "+"):
            continue
        body = line[1:]
        if body.startswith("... diff truncated"):
            continue
        (removed if line[0] == "-" else added).add(_path_of(body))
    gone, new = removed - added, added - removed
    if not gone and not new:
        return ""
    material = "\n".join(["-" + p for p in sorted(gone)] + ["+" + p for p in sorted(new)])
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


def template_signature(html: str) -> str:
    """A short stable hash of the page skeleton: the set of tag.class paths down to TEMPLATE_DEPTH.

    Ids and text are left out and digits normalised, so two pages rendered from
    one template share the signature. "" for a page without elements.
    """
    paths: set[str] = set()
    for path, _ in _walk(html or "", with_text=False, max_depth=TEMPLATE_DEPTH, with_ids=False):
        paths.add(_DIGITS.sub("0", " > ".join(path)))
    if not paths:
        return ""
    return hashlib.sha256("\n".join(sorted(paths)).encode("utf-8")).hexdigest()[:16]

