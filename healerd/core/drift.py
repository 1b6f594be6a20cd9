"""Drift that validation passes: records that still look right but no longer sit where the
last good ones did.

Validation judges a scrape by counts and shapes. A page can pass it and still give wrong
data: a "promoted" look-alike row the old `items` selector picks up with the rest, a decoy
card placed before the real one, a field removed while a "recommended" block still carries
one, a positional selector (`td:nth-child(4)`) now reading the neighbouring column. Each
of these changes the page's structure *around the record*, so:

- `locus_signature(tree, blueprint)` is the cheap trigger, computed where the page is parsed
  (the worker) only when the page's bytes changed: a hash of the structure the blueprint's
  selectors land on (each item's shape two levels down, or each field's first match with its
  path, sibling positions and how many nodes the selector matches), never of the text. Pages
  whose record region is unchanged share it, whatever else on the page moved.
- `drift_reason(...)` runs only when that signature differs from the last good page's. It
  returns one line naming what moved, or None; a scrape with a reason is a breakage
  (SCHEMA_MISMATCH), not data. Its checks, cheapest first: a field now holding another
  field's last good values (a positional shift), a placeholder ("Log in to see the price",
  "N/A", a dash) where a value of a known shape was, rows whose structure differs from their
  siblings when the last good rows were all alike, and the built-in healer's own reading of
  the page: the last good values found again elsewhere, under selectors that give other
  values than production's.

A legit redesign whose values also changed is not drift: no check fires on new values in the
new place (the healer then finds production's selectors unchanged, or cannot place the old
values and says nothing).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from functools import lru_cache
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from healerd.core.blueprint import Blueprint
from healerd.core.extract import extract, item_nodes, parse_html
from healerd.core.headings import _cell, _text, heading_of
from healerd.core.heal.checks.placeholders import PLACEHOLDER, WALL
from healerd.core.heal.pipeline import heal
from healerd.core.validate import value_shape

_DIGITS = re.compile(r"\d+")
_SHAPE_DEPTH = 3          # levels of an item's subtree in its shape
_SHAPE_TOKENS = 48        # tokens of an item's shape at most
_MIN_ALIKE_ROWS = 2       # last good rows needed before "alike" means anything
_SAMPLE_HEAD = 12         # items whose full shape is in the locus: the first ones...
_SAMPLE_TAIL = 4          # ...and the last ones

# What a page shows where it hides or lacks a value (PLACEHOLDER: judged only where the last good
# value had a shape, so a text field that says "N/A" is left alone) and the walls no text says by
# chance (WALL: judged on any field): one list, the healer's, so a heal and the drift check refuse
# the same phrases.


def _class(node: LexborNode) -> str | None:
    """The node's class attribute. attrs.get reads the one attribute where .attributes builds a
    dict of them all (10x the cost); "class" is never case-adjusted, so the two agree on it. A
    node that is no element (a comment) has no attrs."""
    try:
        return node.attrs.get("class")
    except TypeError:
        return node.attributes.get("class")


def _token(node: LexborNode) -> str:
    return _token_of(node.tag, _class(node) or "")


@lru_cache(maxsize=8192)
def _token_of(tag: str | None, cls: str) -> str:
    """A node's token from its tag and class attribute: the same few pairs recur all over a page."""
    classes = _classes(cls)
    return f"{tag}.{classes}" if classes else str(tag)


@lru_cache(maxsize=8192)
def _classes(cls: str) -> str:
    return ".".join(sorted(_DIGITS.sub("0", c) for c in cls.split()))


def _children(node: LexborNode) -> list[LexborNode]:
    return [c for c in node.iter(include_text=False)]


def item_shape(node: LexborNode) -> str:
    """An item's structure: its tag and classes, then its element children's, _SHAPE_DEPTH levels
    down (digits in classes normalised; no text, no attributes but class)."""
    out: list[str] = []

    def walk(n: LexborNode, depth: int) -> None:
        if len(out) >= _SHAPE_TOKENS:
            return
        out.append(_token(n))
        if depth < _SHAPE_DEPTH:
            kids = _children(n)
            if kids:
                out.append("(")
                if depth + 1 < _SHAPE_DEPTH:
                    for c in kids:
                        walk(c, depth + 1)
                else:   # the last level, inline: its nodes' children are not read
                    for c in kids:
                        if len(out) >= _SHAPE_TOKENS:
                            break
                        out.append(_token(c))
                out.append(")")

    walk(node, 1)
    return " ".join(out)


def _position(node: LexborNode) -> int:
    i = 0
    p = node.prev
    while p is not None:
        if p.tag and not p.tag.startswith("-"):
            i += 1
        p = p.prev
    return i


def _siblings(node: LexborNode) -> int:
    parent = node.parent
    return len(_children(parent)) if parent is not None else 0


def _path(node: LexborNode | None, stop: LexborNode | None = None, counted: int = 3) -> str:
    """The node's ancestry up to `stop` (or the document): tag, classes and position of each, and
    for the `counted` nearest, how many siblings it has (a dropped row or column shows there)."""
    parts = []
    n = node
    level = 0
    while n is not None and n.tag and n.tag not in ("html", "-document") and (stop is None or n.mem_id != stop.mem_id):
        count = f"/{_siblings(n)}" if level < counted else ""
        parts.append(f"{_token(n)}:{_position(n)}{count}")
        n = n.parent
        level += 1
    return "/".join(reversed(parts))


def _first(scope: LexborNode | LexborHTMLParser, css: str) -> tuple[int, LexborNode | None]:
    try:
        matches = scope.css(css)
    except Exception:   # a selector lexbor refuses: extraction reports it
        return 0, None
    return len(matches), (matches[0] if matches else None)


def locus_signature(tree: LexborHTMLParser, blueprint: Blueprint, items: list[LexborNode] | None = None) -> str:
    """A short hash of the structure the blueprint's selectors land on ("" for a code blueprint).
    `items`: the item nodes extraction found (extract's `items_out`), else they are queried."""
    if blueprint.parser:
        return ""
    parts: set[str] = set()
    if blueprint.items:
        nodes = items if items is not None else item_nodes(tree, blueprint.items_selectors)
        # Each item's classes, and the full shape of the first and last ones: a long list costs
        # no more than _SAMPLE_HEAD + _SAMPLE_TAIL shapes (a look-alike row is usually put on top).
        for cls in {_class(node) for node in nodes}:
            parts.add("class " + _classes(cls or ""))
        under: dict[int | None, str] = {}   # items mostly share their parent: its path once
        for node in nodes[:_SAMPLE_HEAD] + nodes[max(_SAMPLE_HEAD, len(nodes) - _SAMPLE_TAIL):]:
            parts.add("item " + item_shape(node))
            parent = node.parent
            key = parent.mem_id if parent is not None else None
            if key not in under:
                under[key] = "under " + _path(parent, counted=0)[-200:]   # a block of copies elsewhere
            parts.add(under[key])
        if nodes:
            parent = nodes[0].parent
            parts.add("in " + (_token(parent) if parent is not None else ""))
            for name, spec in blueprint.fields.items():   # where each field sits in the first record
                if spec.css is not None:
                    n, first = _first(nodes[0], spec.css)
                    parts.add(f"{name} {min(n, 3)} {_path(first, stop=nodes[0]) if first is not None else '-'}"
                              f" {heading_of(first)}")
    else:
        root = tree.root if tree.root is not None else tree
        for name, spec in blueprint.fields.items():
            if spec.css is None:
                continue
            n, first = _first(root, spec.css)
            parts.add(f"{name} {min(n, 3)} {_path(first) if first is not None else '-'} {heading_of(first)}")
    return hashlib.sha256("\n".join(sorted(parts)).encode("utf-8")).hexdigest()[:16]


def page_locus(html: str, blueprint: Blueprint) -> str:
    """`locus_signature` of a page's text (for a last good page read back from its snapshot)."""
    return locus_signature(parse_html(html or ""), blueprint)


# -- the checks -----------------------------------------------------------------------------

def _rows(data: Any) -> list[dict]:
    if isinstance(data, list):
        return [r for r in data if isinstance(r, dict)]
    return [data] if isinstance(data, dict) else []


def _norm(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)   # an int field's 12 and a float field's 12.0 are the same value
    s = " ".join(str(v).split())
    return s or None


def _column(rows: list[dict], name: str) -> list[str]:
    return [v for v in (_norm(r.get(name)) for r in rows) if v is not None]


def _same_records(new: Any, old: Any, names: list[str]) -> bool:
    a, b = _rows(new), _rows(old)
    return len(a) == len(b) and all(_norm(x.get(n)) == _norm(y.get(n)) for x, y in zip(a, b) for n in names)


def shifted_column(new: Any, old: Any, names: list[str]) -> str | None:
    """A field now holding another field's last good values, and (almost) none of its own."""
    new_rows, old_rows = _rows(new), _rows(old)
    for name in names:
        now = _column(new_rows, name)
        if not now:
            continue
        own = set(_column(old_rows, name))
        need = max(1, (len(now) + 1) // 2)
        if sum(v in own for v in now) >= need:
            continue
        for other in names:
            if other == name:
                continue
            theirs = set(_column(old_rows, other))
            if theirs and sum(v in theirs for v in now) >= need:
                return (f"{name} now holds what {other} held on the last good page "
                        f"(e.g. {now[0][:40]!r}): a positional selector reads another column")
    return None


def placeholder(new: Any, old: Any, names: list[str]) -> str | None:
    """A placeholder where the last good value had a shape (number, URL, date) and none was one."""
    new_rows, old_rows = _rows(new), _rows(old)
    for name in names:
        before = _column(old_rows, name)
        if not before:
            continue
        shapes = Counter(value_shape(v) for v in before)
        shape, n = shapes.most_common(1)[0]
        shaped = shape in ("number", "url", "date") and n * 2 >= len(before)
        pattern = PLACEHOLDER if shaped else WALL
        if any(pattern.match(v) for v in before):
            continue   # the site showed placeholders before: one now is nothing new
        now = _column(new_rows, name)
        for v in now:
            if pattern.match(v) and (not shaped or value_shape(v) != shape):
                what = f"a {shape}" if shaped else "a value"
                return f"{name} shows a placeholder {v[:40]!r} where the last good page had {what}"
        if (len(now) >= 2 and len(now) == len(new_rows) and all(PLACEHOLDER.match(v) for v in now)
                and not any(PLACEHOLDER.match(v) for v in before)):
            # a text field may say "N/A" in a record (a single record's too), never in every record of
            # a list where none did before
            return f"{name} shows a placeholder {now[0][:40]!r} in every record where the last good page had values"
    return None


def odd_rows(blueprint: Blueprint, before: LexborHTMLParser, after: LexborHTMLParser) -> str | None:
    """Rows whose structure differs from their siblings' when the last good rows were all alike."""
    if not blueprint.items:
        return None
    old = item_nodes(before, blueprint.items_selectors)
    if len(old) < _MIN_ALIKE_ROWS or len({item_shape(n) for n in old}) != 1:
        return None
    now = item_nodes(after, blueprint.items_selectors)
    if len(now) < _MIN_ALIKE_ROWS:
        return None
    shapes = [item_shape(n) for n in now]
    usual, count = Counter(shapes).most_common(1)[0]
    odd = [i for i, s in enumerate(shapes) if s != usual]
    if not odd or len(odd) * 3 > len(shapes):
        return None
    i = odd[0]
    extra = sorted(set(shapes[i].split()) - set(usual.split()) - {"(", ")"})
    what = f" (it has {', '.join(extra[:3])})" if extra else ""
    return (f"{len(odd)} of {len(shapes)} records differ in structure from their siblings, "
            f"record {i + 1} first{what}: a look-alike block such as a promoted row")


def label_of(node: LexborNode | None) -> str:
    """The text that names a value's node: its row's header cell and its column's header for a
    table cell, the <dt> before a <dd>, else a short previous sibling. "" when none."""
    if node is None:
        return ""
    cell = _cell(node)
    if cell is not None and cell.parent is not None:
        row = cell.parent
        cells = _children(row)
        index = next((i for i, c in enumerate(cells) if c.mem_id == cell.mem_id), -1)
        row_head = next((c for c in cells if c.tag == "th" and c.mem_id != cell.mem_id), None)
        if row_head is None and index > 0 and len(_text(cells[0])) <= 40:
            row_head = cells[0]   # a two-column table of name and value: the name cell
        table = row.parent
        while table is not None and table.tag not in ("table", "-document"):
            table = table.parent
        col_head = ""
        if table is not None and table.tag == "table":
            head = table.css_first("thead tr") or table.css_first("tr")
            if head is not None and head.mem_id != row.mem_id and head.css_first("th") is not None:
                heads = _children(head)
                col_head = _text(heads[index]) if 0 <= index < len(heads) else ""
        return " | ".join(t[:40] for t in (_text(row_head), col_head))
    n: LexborNode | None = node
    for _ in range(2):   # the node's own previous sibling, or its parent's
        if n is None:
            break
        prev = n.prev
        while prev is not None and (not prev.tag or prev.tag.startswith("-")):
            prev = prev.prev
        if prev is not None:
            text = _text(prev)
            if prev.tag in ("dt", "th", "label") or (0 < len(text) <= 40 and not _DIGITS.search(text)):
                return text[:60]
            return ""
        n = n.parent
    return ""


_WORD = re.compile(r"[^\W\d_]{3,}")


def _renamed(was: str, now: str) -> bool:
    """Two labels that name different things: neither holds the other and they share no word
    (so "Code" -> "Code (current)" or "Price" -> "Our price" is the same label reworded)."""
    for a, b in zip(was.split(" | "), now.split(" | ")):
        a, b = a.strip().rstrip(":").lower(), b.strip().rstrip(":").lower()
        if not a or not b or a in b or b in a:
            continue
        if not set(_WORD.findall(a)) & set(_WORD.findall(b)):
            return True
    return False


def relabelled(blueprint: Blueprint, before: LexborHTMLParser, after: LexborHTMLParser, new: Any, old: Any,
               names: list[str]) -> str | None:
    """A field whose value changed while the label beside it changed too: the selector now points at
    another labelled value (a row or column dropped under a positional selector)."""
    scopes: list[LexborNode | LexborHTMLParser | None] = []
    for tree in (before, after):
        if blueprint.items:
            items = item_nodes(tree, blueprint.items_selectors)
            scopes.append(items[0] if items else None)
        else:
            scopes.append(tree.root if tree.root is not None else tree)
    was_scope, now_scope = scopes
    if was_scope is None or now_scope is None:
        return None
    new_rows, old_rows = _rows(new), _rows(old)
    if not new_rows or not old_rows:
        return None
    for name in names:
        spec = blueprint.fields[name]
        value = _norm(new_rows[0].get(name))
        if spec.css is None or value is None or value == _norm(old_rows[0].get(name)):
            continue
        was = label_of(_first(was_scope, spec.css)[1])
        now = label_of(_first(now_scope, spec.css)[1])
        if was.strip(" |") and now.strip(" |") and _renamed(was, now):
            return (f"{name} now sits beside the label {now.strip(' |')!r} where it was {was.strip(' |')!r}: "
                    f"its selector points at another value")
    return None


def _chain(node: LexborNode) -> list[LexborNode]:
    out = []
    n: LexborNode | None = node
    while n is not None and n.tag and n.tag != "-document":
        out.append(n)
        n = n.parent
    return out


def _common(nodes: list[LexborNode]) -> LexborNode | None:
    """The nearest element holding every node of `nodes`."""
    chains = [_chain(n) for n in nodes]
    shared = set.intersection(*({a.mem_id for a in c} for c in chains)) if chains else set()
    return next((a for a in chains[0] if a.mem_id in shared), None) if chains else None


def _inside(node: LexborNode, block: LexborNode) -> bool:
    return any(a.mem_id == block.mem_id for a in _chain(node))


def split_record(blueprint: Blueprint, before: LexborHTMLParser, after: LexborHTMLParser, new: Any, old: Any,
                 names: list[str]) -> str | None:
    """A single record's field whose value changed and that left the block holding the record's
    other fields (a field removed while a "recommended" block elsewhere still carries one)."""
    if blueprint.items:
        return None
    new_rows, old_rows = _rows(new), _rows(old)
    if not new_rows or not old_rows:
        return None
    roots = [t.root if t.root is not None else t for t in (before, after)]
    was: dict[str, LexborNode] = {}
    now: dict[str, LexborNode] = {}
    for n in names:
        a, b = _first(roots[0], blueprint.fields[n].css or "")[1], _first(roots[1], blueprint.fields[n].css or "")[1]
        if a is not None and b is not None:
            was[n], now[n] = a, b
    for name in names:
        value = _norm(new_rows[0].get(name))
        if value is None or value == _norm(old_rows[0].get(name)) or name not in was:
            continue
        others = [o for o in names if o != name and o in was]
        if not others:
            continue
        block = _common([was[o] for o in others] + [was[name]])   # the record's block on the last good page
        if block is None or block.tag in ("html", "body") or not _inside(was[name], block):
            continue
        here = _common([now[o] for o in others])
        if here is None:
            continue
        # the block that holds the other fields now: the nearest ancestor of theirs that looks like
        # the old block (wrappers may have been added in between); none: nothing to compare
        holder = next((a for a in _chain(here) if _token(a) == _token(block)), None)
        if holder is None or holder.tag in ("html", "body"):
            continue
        if not _inside(now[name], holder):
            return (f"{name} is no longer inside the block holding {', '.join(others)} "
                    f"({_token(holder)}): it reads another block's value {value[:40]!r}")
    return None


def copies(new: Any, old: Any, names: list[str]) -> str | None:
    """Records that repeat other records of the scrape exactly, where the last good ones never did:
    the items selector also picks up a block of copies (a "related" or "recommended" list)."""
    def key(r: dict) -> tuple:
        return tuple(_norm(r.get(n)) for n in names)

    old_keys = [key(r) for r in _rows(old)]
    if len(set(old_keys)) != len(old_keys):
        return None
    seen: set[tuple] = set()
    repeated = 0
    for r in _rows(new):
        k = key(r)
        if any(v is not None for v in k):
            repeated += k in seen
            seen.add(k)
    if not repeated:
        return None
    return (f"{repeated} of {len(_rows(new))} records repeat another record exactly: the items selector also "
            f"picks up a block of copies")


def left_behind(blueprint: Blueprint, after: LexborHTMLParser, new: Any, old: Any, names: list[str]) -> str | None:
    """Most of the last good text values are still on the page, but no longer under the selectors."""
    texts = [n for n in names if blueprint.fields[n].type == "str" and blueprint.fields[n].attr is None]
    if not texts:
        return None
    page: str | None = None
    # All text fields together, then each alone: one field moved away while the others stayed
    # is diluted in the pooled values (a label now read where the value was).
    for group in [texts] + ([[n] for n in texts] if len(texts) > 1 else []):
        now = {v for n in group for v in _column(_rows(new), n)}
        before = {v for n in group for v in _column(_rows(old), n) if len(v) >= 4}
        missing = before - now
        if not before or len(missing) * 2 < len(before):
            continue
        if page is None:
            body = after.body if after.body is not None else after.root
            page = " ".join(body.text(deep=True, separator="").split()) if body is not None else ""
        still = [v for v in missing if v in page and not any(v in n for n in now)]
        if len(still) * 2 < len(before) or (blueprint.items and len(still) < 2):
            continue
        what = "" if group is texts else f" of {group[0]}"
        return (f"{len(still)} of the {len(before)} last good values{what} are still on the page but no longer "
                f"under the selectors (e.g. {sorted(still)[0][:40]!r})")
    return None


def healer_reading(blueprint: Blueprint, before_html: str, old: Any, after_html: str, new: Any,
                   names: list[str]) -> str | None:
    """The built-in healer finds the last good records again under other selectors, and they are
    not as many as production's: its items selector picks up look-alikes (or misses records)."""
    try:
        result = heal(blueprint, before_html, old, after_html)
    except Exception:
        return None
    if not result.ok or result.unchanged or result.blueprint is None:
        return None
    healed = extract(after_html, result.blueprint).data
    if _same_records(healed, new, names):
        return None
    a, b = _rows(new), _rows(healed)
    if blueprint.items and len(a) != len(b):
        return (f"the last good records are found again as {len(b)} records, but the items selector "
                f"now gives {len(a)}: it also picks up look-alike blocks")
    # Field by field, the healer's reading is not proof: where values changed in place, it may
    # find a stale copy of an old value elsewhere (a link repeated in a sidebar).
    return None


def drift_reason(blueprint: Blueprint, before_html: str, old_records: Any, after_html: str,
                 new_data: Any) -> str | None:
    """Why this scrape's records are not where the last good ones were, or None. Call it only when
    the page's `locus_signature` differs from the last good page's."""
    if blueprint.parser or not old_records or new_data is None:
        return None
    names = [n for n, f in blueprint.fields.items() if f.css is not None]
    if _same_records(new_data, old_records, names):
        return None
    why = (shifted_column(new_data, old_records, names) or placeholder(new_data, old_records, names)
           or copies(new_data, old_records, names))
    if why:
        return why
    before, after = parse_html(before_html or ""), parse_html(after_html or "")
    why = (odd_rows(blueprint, before, after) or split_record(blueprint, before, after, new_data, old_records, names)
           or left_behind(blueprint, after, new_data, old_records, names)
           or relabelled(blueprint, before, after, new_data, old_records, names))
    if why:
        return why
    return healer_reading(blueprint, before_html or "", old_records, after_html or "", new_data, names)


def page_drift(blueprint: Blueprint, before_html: str | None, old_records: Any, after_html: str,
               new_data: Any) -> str | None:
    """`drift_reason` when the page's locus differs from the last good page's, else None: the same
    judgement the Validator makes on a scrape, for a page judged elsewhere (the Doctor's diagnosis)."""
    if not before_html or not old_records or blueprint.parser:
        return None
    if page_locus(before_html, blueprint) == page_locus(after_html, blueprint):
        names = [n for n, f in blueprint.fields.items() if f.css is not None]
        # a value hidden in place, or columns reordered under positional selectors, moves no structure
        return placeholder(new_data, old_records, names) or shifted_column(new_data, old_records, names)
    return drift_reason(blueprint, before_html, old_records, after_html, new_data)


def placeholder_suspect(new_data: Any, sample: Any) -> bool:
    """A placeholder in a field whose last good value (in the Validator's stand-in sample,
    validate.last_good_sample) had a shape: worth the full check even where the structure did
    not move. Cheap: a regular expression on the values of those fields only."""
    rows = _rows(sample)
    if not rows:
        return False
    judged = {n for n, v in rows[0].items() if _norm(v) is not None and value_shape(v) in ("number", "url", "date")}
    new_rows = _rows(new_data)
    if any((PLACEHOLDER if n in judged else WALL).match(v) for r in new_rows for n in rows[0]
           if isinstance(v := r.get(n), str)):
        return True
    # a text field hidden in every record (see `placeholder`)
    filled = [n for n, v in rows[0].items() if _norm(v) is not None and not PLACEHOLDER.match(str(v))]
    return len(new_rows) >= 2 and any(all(isinstance(v := r.get(n), str) and PLACEHOLDER.match(v) for r in new_rows)
                                  for n in filled)


def shift_suspect(new_data: Any, sample: Any) -> bool:
    """Evidence that a field now gives another field's values, from the Validator's stand-in
    sample of the last good records (validate.last_good_sample): a column reordered under
    positional selectors moves no structure the locus sees, so it is worth the full check
    (`drift_reason`'s `shifted_column` over every last good record).

    A value of field m's sample turning up in field n (where it is not n's own) is not enough:
    fields that legitimately share values (a category and a tag, a title and a link text) do
    that on every changed page. Over the new records, n must hold m's sample values more often
    than n's own sample values AND more often than m itself still does: the values moved.
    Cheap: one dict lookup per value (the sample's values and the new ones are alike
    extracted and coerced), and the counting only once such a value is seen."""
    fields_of: dict[Any, set[str]] = {}
    for r in _rows(sample):
        for n, v in r.items():
            if v is not None and v != "" and isinstance(v, (str, int, float)):
                fields_of.setdefault(v, set()).add(n)
    if not fields_of:
        return False
    rows = _rows(new_data)
    if not _gives_another_fields_value(rows, fields_of):
        return False   # the usual page: one dict lookup per value, no counting
    own: dict[str, int] = {}               # field -> new values that are its own sample values
    moved: dict[tuple[str, str], int] = {}   # (field, other) -> new values that are other's only
    for r in rows:
        for n, v in r.items():
            if isinstance(v, (str, int, float)) and (fs := fields_of.get(v)) is not None:
                if n in fs:
                    own[n] = own.get(n, 0) + 1
                else:
                    for m in fs:
                        moved[n, m] = moved.get((n, m), 0) + 1
    return any(k > own.get(n, 0) and k > own.get(m, 0) for (n, m), k in moved.items())


def _gives_another_fields_value(rows: list[dict], fields_of: dict[Any, set[str]]) -> bool:
    for r in rows:
        for n, v in r.items():
            if isinstance(v, (str, int, float)) and (fs := fields_of.get(v)) is not None and n not in fs:
                return True
    return False
