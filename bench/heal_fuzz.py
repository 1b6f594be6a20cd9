"""Generated redesigns: score the built-in healer on seeded mutations of real pages.

    python bench/heal_fuzz.py CORPUS_DIR [--cases 600] [--seed 1] [--kind SUBSTRING] [--show N] [--modern] [--attrs]

From the last good page of each corpus case (any case whose old blueprint works on its
before.html), each generated case composes one to three of the changes real redesigns
make — class and id renames, CSS-module hashed class names, added wrappers (`div.meta`),
a field moved to another region (a footer link) or to the end of its record, table →
div grid / definition list, label text changed, sibling reorder, decoy "related" /
"recommended" blocks carrying copies of the values, attribute noise, the records' own
values changed (the decoys keeping the old ones), whitespace and entity changes — and, for about one case in five, a negative change (one field's data
removed everywhere: the healer must refuse).

With --modern, the redesigns of modern frontends join the mix: utility-class soups,
styled-components class hashes, tables rewritten as cards of labelled pairs, values split
into spans, labels merged into the value's node, a "Recommended" block or a "promoted" row
with a badge placed before the real data; and, as the other half of the negatives, a
placeholder ("Log in to see the price", "N/A", ...) where one field's values were. Without
it the mix (and so every figure for a given seed) is what it was.

With --attrs, values kept only in an attribute join the mix (attr-only): one text field's values
move into `data-value`, `data-<field>`, `title` or `aria-label` of its node or of a new child
while the visible text goes away or becomes a placeholder; its negative (attr-gone) leaves that
attribute an opaque token, the values gone from the page. Without it the mix is what it was.

The truth is not guessed: before mutating, every record container and field node is
marked; after mutating, the marked nodes give the expected values; the marks are then
removed. A case whose old selectors still give the truth is a control (the healer must
keep the blueprint). Everything is deterministic per seed.

Prints a table per mutation kind (a case counts under each change it composes) and, as
its last line, one JSON object {"cases", "heal_rate", "wrong_rate", "refusal_rate",
"negatives_refused", "crashes", "median_ms"}; with --proposals also how the refusals' best
guesses (the candidate the daemon stages for a person) fare: bench/heal.py's `proposal_figures`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import statistics
import sys
from collections.abc import Callable

from selectolax.lexbor import LexborHTMLParser

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heal as bench  # noqa: E402  (bench/heal.py: loading cases, judging, the corpus number rule)

from healerd.core.blueprint import Blueprint, FieldSpec  # noqa: E402
from healerd.core.extract import extract  # noqa: E402

MARK_FIELD = "data-fz-field"
MARK_RECORD = "data-fz-record"
WORDS = ["alpha", "nova", "card", "tile", "box", "unit", "entry", "blk", "itm", "cell", "pane", "zone"]


# ---------------------------------------------------------------------------
# the page being mutated
# ---------------------------------------------------------------------------

class Work:
    """One page under mutation: its tree, the blueprint, the marked nodes' names."""

    def __init__(self, html: str, bp: Blueprint, rng: random.Random):
        self.tree = LexborHTMLParser(html)
        self.bp = bp
        self.rng = rng
        self.notes: list[str] = []
        self.attr_fields: dict[str, str] = {}   # field -> the attribute its values moved into (attr-only)

    def parse_one(self, html: str):
        frag = LexborHTMLParser(f"<html><body>{html}</body></html>")
        return frag.body.child if frag.body.child is not None and frag.body.child.tag != "-text" else _first_el(frag.body)

    def records(self):
        return self.tree.css(f"[{MARK_RECORD}]")

    def field_nodes(self, name: str | None = None):
        if name is None:
            return self.tree.css(f"[{MARK_FIELD}]")
        return self.tree.css(f'[{MARK_FIELD}~="{name}"]')

    def body(self):
        return self.tree.body


def _first_el(node):
    c = node.child if node is not None else None
    while c is not None and c.tag in ("-text", "_text", "-comment", "_comment"):
        c = c.next
    return c


def _elements(node):
    c = node.child
    while c is not None:
        if c.tag and not c.tag.startswith(("-", "_")):
            yield c
        c = c.next


def mark(tree, bp: Blueprint) -> bool:
    """Mark the record containers and the field nodes the old blueprint finds; False when nothing is found."""
    if bp.items:
        recs = tree.css(bp.items)
        if not recs:
            return False
        for r in recs:
            r.attrs[MARK_RECORD] = "1"
            for name, spec in bp.fields.items():
                n = r.css_first(spec.css)
                if n is not None:
                    _add_mark(n, name)
        return True
    found = False
    for name, spec in bp.fields.items():
        n = tree.css_first(spec.css)
        if n is not None:
            _add_mark(n, name)
            found = True
    return found


def _add_mark(node, name: str) -> None:
    old = node.attrs.get(MARK_FIELD) or ""
    node.attrs[MARK_FIELD] = (old + " " + name).strip()


def truth_blueprint(bp: Blueprint, attrs: dict[str, str] | None = None) -> Blueprint:
    """The marked nodes as a blueprint; `attrs` names the fields whose value a mutation moved into an attribute."""
    attrs = attrs or {}
    fields = {n: FieldSpec(n, f'[{MARK_FIELD}~="{n}"]', s.type, attrs.get(n, s.attr), s.required)
              for n, s in bp.fields.items()}
    return Blueprint(fields=fields, items=f"[{MARK_RECORD}]" if bp.items else None)


def strip_marks(html: str) -> str:
    tree = LexborHTMLParser(html)
    for n in tree.css(f"[{MARK_FIELD}], [{MARK_RECORD}]"):
        for a in (MARK_FIELD, MARK_RECORD):
            if a in n.attrs:
                del n.attrs[a]
    return tree.html


def clean_copy_html(node) -> str:
    """A node's HTML with the marks removed (copies must never count as the truth)."""
    return strip_marks(f"<html><body>{node.html}</body></html>").split("<body>", 1)[1].rsplit("</body>", 1)[0]


# ---------------------------------------------------------------------------
# mutations: each returns a short note, or None when it does not apply
# ---------------------------------------------------------------------------

def _class_tokens(bp: Blueprint) -> set[str]:
    import re
    out: set[str] = set()
    for css in [bp.items or ""] + [s.css or "" for s in bp.fields.values()]:
        out.update(re.findall(r"\.(-?[A-Za-z_][\w-]*)", css))
    return out


def _id_tokens(bp: Blueprint) -> set[str]:
    import re
    out: set[str] = set()
    for css in [bp.items or ""] + [s.css or "" for s in bp.fields.values()]:
        out.update(re.findall(r"#(-?[A-Za-z_][\w-]*)", css))
    return out


def _rename_classes(w: Work, new_name: Callable[[str], str]) -> int:
    n = 0
    for node in w.tree.css("[class]"):
        cls = node.attrs.get("class") or ""
        toks = cls.split()
        if not toks:
            continue
        node.attrs["class"] = " ".join(new_name(t) for t in toks)
        n += 1
    return n


def m_rename_classes(w: Work):
    wanted = _class_tokens(w.bp)
    if not wanted:
        return None
    mapping = {t: f"{w.rng.choice(WORDS)}-{w.rng.randrange(10**4):04d}" for t in sorted(wanted)}
    _rename_classes(w, lambda t: mapping.get(t, t))
    return "renamed classes " + ",".join(sorted(wanted))


def m_css_modules(w: Work):
    salt = w.rng.randrange(10**9)
    def hashed(t):
        h = hashlib.sha1(f"{salt}:{t}".encode()).hexdigest()[:5]
        return f"{t.title().replace('-', '')}_{t}__{h}" if w.rng.random() < 0.5 else f"css-{h}{t[:1]}"
    # one mapping per token, chosen once (the rng must not be consulted per occurrence)
    mapping: dict[str, str] = {}
    def once(t):
        if t not in mapping:
            mapping[t] = hashed(t)
        return mapping[t]
    n = _rename_classes(w, once)
    return f"css-module hashed classes on {n} elements" if n else None


def m_rename_ids(w: Work):
    ids = _id_tokens(w.bp)
    if not ids:
        return None
    for node in w.tree.css("[id]"):
        if node.attrs.get("id") in ids:
            node.attrs["id"] = f"{node.attrs['id']}-{w.rng.randrange(100, 999)}"
    return "renamed ids " + ",".join(sorted(ids))


def _wrap(w: Work, node, cls: str) -> None:
    wrapper = w.parse_one(f'<div class="{cls}"></div>')
    node.insert_before(wrapper)
    new = node.prev
    new.insert_child(node)
    node.decompose()


def m_wrap(w: Work):
    nodes = w.field_nodes()
    if not nodes:
        return None
    picked = w.rng.sample(nodes, min(len(nodes), w.rng.choice([1, 2])))
    names = list(dict.fromkeys(node.attrs.get(MARK_FIELD) for node in picked))   # in order: a set's would vary per process
    for name in names:
        cls = w.rng.choice(["meta", "wrapper", "inner", "flex-row", "field-wrap"])
        for node in w.field_nodes(name.split()[0]):
            if node.attrs.get(MARK_FIELD) == name:
                _wrap(w, node, cls)
    return f"wrapped {len(names)} field(s) in a div"


def m_wrap_container(w: Work):
    recs = w.records()
    target = recs[0].parent if recs else (w.field_nodes()[0].parent if w.field_nodes() else None)
    if target is None or target.tag in ("html", "body", "table", "tbody", "thead", "tr", "ul", "ol", "dl"):
        return None
    _wrap(w, target, w.rng.choice(["container", "layout", "page-main"]))
    return "wrapped the records' region"


def m_move_field(w: Work):
    names = [n for n in w.bp.fields]
    w.rng.shuffle(names)
    for name in names:
        nodes = [n for n in w.field_nodes(name) if n.attrs.get(MARK_FIELD) == name]
        if not nodes:
            continue
        if w.bp.items:
            # within each record: to the end of its container, in a new div
            for node in nodes:
                rec = node.parent
                while rec is not None and MARK_RECORD not in rec.attrs:
                    rec = rec.parent
                if rec is None or rec.tag in ("tr", "table", "tbody", "ul", "ol", "dl", "select"):
                    return None
                box = w.parse_one('<div class="extra"></div>')
                rec.insert_child(box)
                box = rec.last_child
                box.insert_child(node)
                node.decompose()
            return f"moved field {name} to the end of each record"
        node = nodes[0]
        body = w.body()
        foot = w.parse_one(f'<footer class="{w.rng.choice(["site-foot", "byline", "page-footer"])}"><p>Posted by </p></footer>')
        body.insert_child(foot)
        target = body.last_child.css_first("p")
        if node.tag == "a" or w.rng.random() < 0.5:
            target.insert_child(node)
        else:
            link = w.parse_one('<a href="#more"></a>')
            target.insert_child(link)
            target.last_child.insert_child(node)
        node.decompose()
        return f"moved field {name} into a footer"
    return None


def _retag_html(node, tag: str, extra_class: str | None = None) -> str:
    attrs = dict(node.attrs)
    if extra_class:
        attrs["class"] = (extra_class + " " + (attrs.get("class") or "")).strip()
    a = "".join(f' {k}="{_esc(v)}"' if v is not None else f" {k}" for k, v in attrs.items())
    return f"<{tag}{a}>{node.inner_html or ''}</{tag}>"


def _esc(v: str) -> str:
    return v.replace("&", "&amp;").replace('"', "&quot;")


def m_table_to_grid(w: Work):
    tables = [t for t in w.tree.css("table") if t.css_first(f"[{MARK_FIELD}], [{MARK_RECORD}]") is not None]
    if not tables:
        return None
    for t in tables:
        rows = []
        for tr in t.css("tr"):
            cells = "".join(_retag_html(c, "div", "cell") for c in _elements(tr))
            attrs = dict(tr.attrs)
            attrs["class"] = ("grid-row " + (attrs.get("class") or "")).strip()
            a = "".join(f' {k}="{_esc(v)}"' for k, v in attrs.items() if v is not None)
            rows.append(f"<div{a}>{cells}</div>")
        attrs = dict(t.attrs)
        attrs["class"] = ("grid " + (attrs.get("class") or "")).strip()
        a = "".join(f' {k}="{_esc(v)}"' for k, v in attrs.items() if v is not None)
        t.replace_with(w.parse_one(f"<div{a}>{''.join(rows)}</div>"))
    return f"{len(tables)} table(s) became div grids"


def m_table_to_dl(w: Work):
    """A table on a single-record page becomes a definition list: each row's first cell a <dt>, the others <dd>s."""
    if w.bp.items:
        return None
    done = 0
    for t in w.tree.css("table"):
        if t.css_first(f"[{MARK_FIELD}]") is None:
            continue
        rows = t.css("tr")
        if not rows or any(len(list(_elements(tr))) < 2 for tr in rows):
            continue
        parts = []
        for tr in rows:
            k, *vs = list(_elements(tr))
            parts.append(_retag_html(k, "dt") + "".join(_retag_html(v, "dd") for v in vs))
        t.replace_with(w.parse_one(f'<dl class="{w.rng.choice(["specs", "details", "props"])}">{"".join(parts)}</dl>'))
        done += 1
    return f"{done} table(s) became definition lists" if done else None


def m_label_text(w: Work):
    changed = 0
    for node in w.tree.css("th, dt, label, strong, b"):
        if node.css_first(f"[{MARK_FIELD}]") is not None or MARK_FIELD in node.attrs:
            continue
        text = " ".join((node.text(deep=True) or "").split())
        if not text or len(text) > 30:
            continue
        new = w.rng.choice([text.upper(), text.rstrip(":") , "Your " + text.lower(), text.rstrip(":") + " (current)"])
        node.inner_html = _esc(new).replace('"', "&quot;")
        changed += 1
    return f"label text changed on {changed} nodes" if changed else None


def m_reorder(w: Work):
    if w.bp.items:
        recs = w.records()
        if not recs:
            return None
        kids0 = list(_elements(recs[0]))
        if len(kids0) < 2:
            return None
        perm = list(range(len(kids0)))
        w.rng.shuffle(perm)
        if perm == sorted(perm):
            perm = perm[1:] + perm[:1]
        for rec in recs:
            kids = list(_elements(rec))
            if len(kids) != len(perm):
                continue
            html = "".join(kids[p].html for p in perm)
            rec.inner_html = html
        return f"reordered the children of each record ({perm})"
    nodes = w.field_nodes()
    if not nodes:
        return None
    parent = nodes[0].parent
    # climb to a parent with several element children
    while parent is not None and len(list(_elements(parent))) < 2:
        parent = parent.parent
    if parent is None or parent.tag in ("html", "body"):
        return None
    kids = list(_elements(parent))
    perm = list(range(len(kids)))
    w.rng.shuffle(perm)
    if perm == sorted(perm):
        perm = perm[1:] + perm[:1]
    parent.inner_html = "".join(kids[p].html for p in perm)
    return f"reordered {len(kids)} siblings"


def m_decoy(w: Work):
    label = w.rng.choice(["Related", "Recommended", "You may also like", "Customers also viewed"])
    cls = w.rng.choice(["related", "recommended", "also-viewed"])
    if w.bp.items:
        recs = w.records()
        if len(recs) < 2:
            return None
        copies = "".join(clean_copy_html(r) for r in w.rng.sample(recs, min(2, len(recs))))
        if recs[0].tag == "tr":
            return None  # a copied row outside its table is not a realistic block
        block = w.parse_one(f'<aside class="{cls}"><h3>{label}</h3><div class="list">{copies}</div></aside>')
    else:
        nodes = w.field_nodes()
        if not nodes:
            return None
        copies = "".join(f'<div class="rel-item">{clean_copy_html(n)}</div>' for n in w.rng.sample(nodes, min(len(nodes), 2)))
        block = w.parse_one(f'<aside class="{cls}"><h3>{label}</h3>{copies}</aside>')
    anchor = w.records()[0] if w.bp.items else w.field_nodes()[0]
    # beside the record region: before it or after it, at the level of its parent's parent
    target = anchor.parent.parent if anchor.parent is not None and anchor.parent.parent is not None else anchor.parent
    if target is None or target.tag in ("html",):
        return None
    if target.tag == "body":
        target.insert_child(block) if w.rng.random() < 0.5 else (target.child.insert_before(block) if target.child else target.insert_child(block))
    elif w.rng.random() < 0.5:
        target.insert_before(block)
    else:
        target.insert_after(block)
    return f"decoy {label!r} block with copies of values"


def m_attr_noise(w: Work):
    n = 0
    for node in w.tree.css("div, span, p, a, li, td, section, h1, h2, h3"):
        if w.rng.random() < 0.3:
            node.attrs[f"data-{w.rng.choice(['v', 'testid', 'track', 'x'])}"] = f"{w.rng.randrange(10**6):x}"
            n += 1
        if w.rng.random() < 0.1:
            node.attrs["style"] = "margin:0"
            n += 1
    return f"attribute noise on {n} nodes" if n else None


def _whitespace_entities(html: str, rng: random.Random) -> str:
    """Text between tags: extra newlines/indent, some letters as numeric entities; values stay equal."""
    out, i, n = [], 0, len(html)
    in_tag = False
    in_raw = False
    low = html.lower()
    while i < n:
        ch = html[i]
        if ch == "<":
            in_tag = True
            if low.startswith(("<script", "<style"), i):
                in_raw = True
            if low.startswith(("</script", "</style"), i):
                in_raw = False
            out.append(ch)
        elif ch == ">":
            in_tag = False
            out.append(ch)
        elif in_tag or in_raw:
            out.append(ch)
        elif ch == " " and rng.random() < 0.2:
            out.append("\n    ")
        elif ch.isalpha() and ch.isascii() and rng.random() < 0.05:
            out.append(f"&#{ord(ch)};")
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _bump_digits(text: str) -> str:
    """Every digit run's last digit moved on by one (9 -> 8): same shape, another value."""
    import re
    return re.sub(r"\d+", lambda m: m.group(0)[:-1] + ("8" if m.group(0)[-1] == "9" else str(int(m.group(0)[-1]) + 1)), text)


def _change_text(html: str, rng: random.Random) -> str:
    """The first non-blank text between tags changed: numbers bumped, words given a suffix."""
    import re
    parts = re.split(r"(<[^>]*>)", html)
    for k, part in enumerate(parts):
        if part.startswith("<") or not part.strip():
            continue
        if any(ch.isdigit() for ch in part):
            parts[k] = _bump_digits(part)
        else:
            parts[k] = part.rstrip() + rng.choice([" II", " (new)", " Plus", " 2nd ed."]) + part[len(part.rstrip()):]
        return "".join(parts)
    return html


def m_values_changed(w: Work):
    """The records' own values change (another day's prices and names); copies elsewhere keep the old ones."""
    names = list(w.bp.fields)
    picked = set(w.rng.sample(names, max(1, len(names) // 2 + w.rng.randrange(2))))
    n = 0
    for node in w.field_nodes():
        fields = (node.attrs.get(MARK_FIELD) or "").split()
        if not set(fields) & picked:
            continue
        for f in fields:
            attr = w.bp.fields[f].attr
            if attr and node.attrs.get(attr):
                v = node.attrs[attr]
                node.attrs[attr] = _bump_digits(v) if any(ch.isdigit() for ch in v) else v + ("&v=2" if "?" in v else "?v=2")
        if any(not w.bp.fields[f].attr for f in fields):
            node.inner_html = _change_text(node.inner_html or "", w.rng)
        n += 1
    return f"values changed on {n} nodes ({', '.join(sorted(picked))})" if n else None


POSITIVE: dict[str, Callable] = {
    "rename-classes": m_rename_classes,
    "css-modules": m_css_modules,
    "rename-ids": m_rename_ids,
    "wrap": m_wrap,
    "wrap-region": m_wrap_container,
    "move-field": m_move_field,
    "table-to-grid": m_table_to_grid,
    "table-to-dl": m_table_to_dl,
    "label-text": m_label_text,
    "reorder": m_reorder,
    "decoy": m_decoy,
    "attr-noise": m_attr_noise,
    "values-changed": m_values_changed,   # after the decoys, so their copies keep the old values
    "whitespace-entities": None,   # string level, applied last
}


# ---------------------------------------------------------------------------
# modern-frontend redesigns (--modern): utility-class soups, styled-components, tables as cards,
# values split into spans or merged with their labels, decoys and promoted rows before the real
# data, and (a negative) placeholders where the values were
# ---------------------------------------------------------------------------

UTILITIES = ["flex", "grid", "items-center", "justify-between", "gap-2", "gap-4", "px-4", "py-2", "p-3", "mt-2",
             "mb-4", "text-sm", "text-lg", "font-medium", "font-bold", "rounded-lg", "shadow", "border",
             "bg-white", "text-gray-700", "w-full", "hidden", "md:block", "lg:flex", "truncate", "leading-6"]


def m_utility_classes(w: Work):
    """Every element's classes replaced by a utility-class soup: classes no longer name anything."""
    n = 0
    for node in w.tree.css("body *"):
        if node.tag in ("script", "style"):
            continue
        node.attrs["class"] = " ".join(w.rng.sample(UTILITIES, w.rng.randint(2, 6)))
        n += 1
    return f"utility classes on {n} elements" if n else None


def m_styled_components(w: Work):
    """styled-components: each class becomes `sc-<hash> <hash>`, hashed per build."""
    salt = w.rng.random()

    def h(c: str) -> str:
        d = hashlib.sha1(f"{salt}{c}".encode()).hexdigest()
        return f"sc-{d[:6]} {''.join(chr(97 + int(x, 16) % 26) for x in d[6:12])}"
    return f"styled-components classes on {_rename_classes(w, h)} nodes" if w.tree.css("[class]") else None


def m_table_to_cards(w: Work):
    """A table's rows become cards: each cell a labelled pair (the header text beside the value)."""
    tables = [t for t in w.tree.css("table") if t.css_first(f"[{MARK_FIELD}], [{MARK_RECORD}]") is not None]
    if not tables:
        return None
    for t in tables:
        heads = [" ".join(th.text().split()) for th in t.css("tr th")]
        cards = []
        for tr in t.css("tr"):
            cells = list(_elements(tr))
            if all(c.tag == "th" for c in cells):
                continue
            pairs = "".join(f'<div class="pair"><span class="k">{heads[i] if i < len(heads) else ""}</span>'
                            f'{_retag_html(c, "span", "v")}</div>' for i, c in enumerate(cells))
            attrs = {k: v for k, v in tr.attrs.items() if v is not None}
            attrs["class"] = ("card " + (attrs.get("class") or "")).strip()
            a = "".join(f' {k}="{_esc(v)}"' for k, v in attrs.items())
            cards.append(f"<article{a}>{pairs}</article>")
        t.replace_with(w.parse_one(f'<div class="cards">{"".join(cards)}</div>'))
    return f"{len(tables)} table(s) became cards"


def m_split_spans(w: Work):
    """A value split into spans (a price's currency, units and cents): the text reads the same."""
    import re
    n = 0
    for node in w.field_nodes():
        if node.attrs.get(MARK_FIELD) is None or _first_el(node) is not None:
            continue
        text = node.text(deep=True, separator="")
        parts = [p for p in re.split(r"(\d+)", text) if p]
        if len(parts) < 2:
            continue
        node.inner_html = "".join(f'<span class="p{i}">{_esc(p).replace("<", "&lt;")}</span>'
                                  for i, p in enumerate(parts))
        n += 1
    return f"values split into spans on {n} nodes" if n else None


def m_merge_label(w: Work):
    """A label merged into the value's own node ("Price: $24.00"): the value as the page says it."""
    names = [n for n, s in w.bp.fields.items() if s.attr is None]
    if not names:
        return None
    name = w.rng.choice(names)
    nodes = [nd for nd in w.field_nodes(name) if _first_el(nd) is None]
    if not nodes:
        return None
    label = w.rng.choice([name.replace("_", " ").capitalize() + ":", name.upper() + " —"])
    for nd in nodes:
        nd.inner_html = f"{_esc(label)} {nd.inner_html or ''}"
    return f"label merged into {len(nodes)} {name} values"


def m_decoy_before(w: Work):
    """A "recommended" block with look-alike values placed before the real data, in the same markup."""
    if w.bp.items:
        recs = w.records()
        if len(recs) < 2 or recs[0].tag == "tr":
            return None
        copy = clean_copy_html(recs[-1])
        block = w.parse_one(f'<section class="recommended"><h3>Recommended</h3>{copy}</section>')
        target = recs[0].parent
    else:
        nodes = w.field_nodes()
        holder = nodes[0].parent if nodes else None
        if holder is None or holder.tag in ("body", "html") or holder.parent is None:
            return None
        block = w.parse_one(f'<section class="recommended"><h3>Recommended</h3>{clean_copy_html(holder)}</section>')
        target = holder.parent
    if target is None or target.tag in ("html", "body"):
        return None
    target.insert_before(block)
    return "decoy 'Recommended' block before the real data"


def m_promoted_row(w: Work):
    """A "promoted" look-alike row inserted at the top of a table, marked with a badge and a class."""
    recs = w.records()
    if len(recs) < 2 or recs[0].tag != "tr":
        return None
    unmarked = re.sub(rf' (?:{MARK_FIELD}|{MARK_RECORD})="[^"]*"', "", recs[0].html or "")   # a row parses only in a table
    copy = w.parse_one(f"<table><tbody>{unmarked}</tbody></table>").css_first("tr")
    if copy is None:
        return None
    copy.attrs["class"] = ((copy.attrs.get("class") or "") + " promoted").strip()
    first = _first_el(copy)
    html = copy.html or ""
    if first is not None:
        html = html.replace(first.html or "", (first.html or "").replace(">", '><span class="badge">Sponsored</span>', 1), 1)
    recs[0].insert_before(w.parse_one(f"<table><tbody>{html}</tbody></table>").css_first("tr"))
    return "promoted look-alike row on top"


MODERN: dict[str, Callable] = {
    "utility-classes": m_utility_classes,
    "styled-components": m_styled_components,
    "table-to-cards": m_table_to_cards,
    "split-spans": m_split_spans,
    "merge-label": m_merge_label,
    "decoy-before": m_decoy_before,
    "promoted-row": m_promoted_row,
}

PLACEHOLDERS = ["Log in to see the price", "Sign in to view", "N/A", "—", "Members only"]


def _attr_only_field(w: Work) -> str | None:
    """A text field alone on its nodes, none holding another field's node: one whose values can move."""
    names = [n for n, s in w.bp.fields.items() if s.attr is None]
    w.rng.shuffle(names)
    for name in names:
        nodes = w.field_nodes(name)
        others = [n for n in w.bp.fields if n != name]
        if not nodes or any(set((nd.attrs.get(MARK_FIELD) or "").split()) & set(others) for nd in nodes):
            continue
        if any(k.mem_id != nd.mem_id for nd in nodes for k in nd.css(f"[{MARK_FIELD}]")):
            continue
        if all(" ".join((nd.text(deep=True) or "").split()) for nd in nodes):
            return name
    return None


def m_attr_only(w: Work):
    """Values kept only in an attribute (data-*, title, aria-label) of the field's node or a new child,
    the visible text gone or a placeholder (a value drawn by a script, a login wall over the markup)."""
    name = _attr_only_field(w)
    if name is None:
        return None
    own = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    attr = w.rng.choice(["data-value", f"data-{own}" if own else "data-value", "title", "aria-label"])
    shown = w.rng.choice(["", "", *PLACEHOLDERS])
    in_child = w.rng.random() < 0.4
    for nd in w.field_nodes(name):
        value = " ".join((nd.text(deep=True) or "").split())
        if in_child:
            del nd.attrs[MARK_FIELD]
            nd.inner_html = f'<span class="v" {MARK_FIELD}="{_esc(name)}" {attr}="{_esc(value)}">{_esc(shown)}</span>'
        else:
            nd.inner_html = _esc(shown)
            nd.attrs[attr] = value
    w.attr_fields[name] = attr
    where = "a child's" if in_child else "its node's"
    return f"field {name} only in {where} {attr!r}, the text {shown!r}"


def m_attr_gone(w: Work, old_values: dict) -> str | None:
    """Negative for attr-only: the attribute that kept a field's values carries an opaque token now."""
    for name, attr in w.attr_fields.items():
        for nd in w.tree.css(f"[{attr}]"):
            if nd.attrs.get(MARK_FIELD) and name in (nd.attrs.get(MARK_FIELD) or "").split():
                nd.attrs[attr] = f"v{w.rng.randrange(16 ** 6):06x}"
                del nd.attrs[MARK_FIELD]
        html = w.tree.html or ""
        if any(v and v in html for v in old_values.get(name, [])):
            return None
        return name
    return None


ATTRS: dict[str, Callable] = {"attr-only": m_attr_only}


def m_placeholder_field(w: Work, old_values: dict):
    """Negative: one field's values replaced by a placeholder everywhere (the data is gone)."""
    names = [n for n, s in w.bp.fields.items() if s.required and s.attr is None]
    w.rng.shuffle(names)
    text = w.rng.choice(PLACEHOLDERS)
    for name in names:
        nodes = w.field_nodes(name)
        others = [n for n in w.bp.fields if n != name]
        if not nodes or any(set((nd.attrs.get(MARK_FIELD) or "").split()) & set(others) for nd in nodes):
            continue
        for nd in nodes:
            nd.inner_html = f'<span class="placeholder">{_esc(text)}</span>'
            del nd.attrs[MARK_FIELD]   # what is left is no value of the field
        page = " ".join((w.tree.body.text(deep=True, separator=" ") if w.tree.body else "").split())
        if any(v and v in page for v in old_values.get(name, [])):
            return None
        return name
    return None


def m_remove_field(w: Work, old_values: list[str]):
    """Negative: one required field's nodes removed everywhere; only when its old values then appear nowhere."""
    names = [n for n, s in w.bp.fields.items() if s.required]
    w.rng.shuffle(names)
    for name in names:
        nodes = w.field_nodes(name)
        if not nodes:
            continue
        others = [n for n in w.bp.fields if n != name]
        if any(set((nd.attrs.get(MARK_FIELD) or "").split()) & set(others) for nd in nodes):
            continue  # the node also carries another field
        vals = [v for v in old_values.get(name, []) if v]
        sigs = {(nd.tag, nd.attrs.get("class")) for nd in nodes}
        for nd in nodes:
            nd.decompose()
        # a same-kind sibling sliding into the old place (the second ingredient becoming the first)
        # is a change of values, not data gone: not a negative
        spec = w.bp.fields[name]
        scopes = w.records() if w.bp.items else [w.tree.root]
        if any((n.tag, n.attrs.get("class")) in sigs for n in (s.css_first(spec.css) for s in scopes) if n is not None):
            return None
        html = w.tree.html or ""
        text = " ".join((w.tree.body.text(deep=True, separator=" ") if w.tree.body else "").split())
        if not vals or any(v in text or v in html for v in vals):
            return None
        return name
    return None


# ---------------------------------------------------------------------------
# generating and judging
# ---------------------------------------------------------------------------

def base_cases(root: str, needle: str | None) -> list[tuple[dict, str, Blueprint, dict]]:
    """Corpus cases whose old blueprint works on before.html, with their old values."""
    out = []
    for path, case in bench.load_cases(root, needle):
        with open(os.path.join(path, "before.html"), encoding="utf-8", errors="replace") as fh:
            before = fh.read()
        bp = bench.blueprint_of(case)
        got = extract(before, bp).raw
        if not got or (isinstance(got, list) and not all(any(v for v in r.values()) for r in got)):
            continue
        out.append((case, before, bp, got))
    return out


def generate(base, seed: int, modern: bool = False, attrs: bool = False) -> dict | None:
    case, before, bp, old_raw = base
    rng = random.Random(seed)
    w = Work(before, bp, rng)
    if not mark(w.tree, bp):
        return None
    pool = {**POSITIVE, **MODERN} if modern else POSITIVE
    pool = {**pool, **ATTRS} if attrs else pool
    kinds = [k for k in pool]
    picked = rng.sample(kinds, rng.choice([1, 2, 2, 3]))
    negative = rng.random() < 0.2
    applied = []
    for k in sorted(picked, key=kinds.index):
        fn = pool[k]
        if fn is None:
            continue
        note = fn(w)
        if note:
            applied.append(k)
            w.notes.append(note)
    removed = None
    if negative:
        recs = old_raw if isinstance(old_raw, list) else [old_raw]
        values = {n: [r.get(n) for r in recs] for n in bp.fields}
        if w.attr_fields:
            removed = m_attr_gone(w, values)
            if removed is None:
                return None
            applied.append("attr-gone")
            w.notes.append(f"the attribute keeping field {removed} holds an opaque token")
        elif modern and rng.random() < 0.5:
            removed = m_placeholder_field(w, values)
            if removed is None:
                return None
            applied.append("placeholder")
            w.notes.append(f"placeholder instead of field {removed}")
        else:
            removed = m_remove_field(w, values)
            if removed is None:
                return None
            applied.append("remove-field")
            w.notes.append(f"removed field {removed}")
    marked = w.tree.html
    truth = extract(marked, truth_blueprint(bp, w.attr_fields)).raw
    after = strip_marks(marked)
    if "whitespace-entities" in picked:
        after = _whitespace_entities(after, rng)
        applied.append("whitespace-entities")
    if not applied:
        return None
    # the truth must be what the page says: every kept field non-empty where it was before
    recs_t = truth if isinstance(truth, list) else [truth]
    recs_o = old_raw if isinstance(old_raw, list) else [old_raw]
    if len(recs_t) != len(recs_o):
        return None
    for t, o in zip(recs_t, recs_o):
        for n in bp.fields:
            if n == removed:
                t[n] = None
            elif (o.get(n) is None) != (t.get(n) is None):
                return None
    expected = truth
    g = {"id": f"fz-{seed}-{case['id']}", "kind": "generated", "items": case.get("items"), "fields": case["fields"],
         "expected_after": expected, "heal_possible": removed is None, "mutations": applied, "notes": w.notes}
    if removed is None and bench.matches_expected(extract(after, bp).raw, expected, g):
        g["no_break"] = True
    return {"case": g, "before": before, "after": after}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus")
    ap.add_argument("--cases", type=int, default=600)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kind", help="only generated cases that compose this mutation")
    ap.add_argument("--case", help="only base cases whose id contains this")
    ap.add_argument("--show", type=int, default=0, help="print the first N wrong/missed cases with their reason")
    ap.add_argument("--dump", help="write the failing generated cases into this folder (corpus format)")
    ap.add_argument("--modern", action="store_true",
                    help="also compose the modern-frontend redesigns (utility classes, styled-components, tables as "
                         "cards, split values, merged labels, decoys and promoted rows before the data; placeholders "
                         "as negatives)")
    ap.add_argument("--attrs", action="store_true",
                    help="also compose values kept only in an attribute (attr-only: data-*, title, aria-label of the "
                         "field's node or a new child, the text gone or a placeholder); as its negative (attr-gone) "
                         "that attribute then holds an opaque token")
    ap.add_argument("--proposals", action="store_true",
                    help="also judge each refusal's best guess (what the daemon stages for approval): right, wrong "
                         "or none staged")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.corpus):
        print(f"error: {args.corpus} is not a folder", file=sys.stderr)
        return 2
    bases = base_cases(args.corpus, args.case)
    if not bases:
        print(f"error: no usable case.json below {args.corpus}", file=sys.stderr)
        return 2
    rows, shown, k = [], 0, 0
    attempts = 0
    while len(rows) < args.cases and attempts < args.cases * 20:
        seed = args.seed * 1_000_003 + attempts
        attempts += 1
        base = bases[seed % len(bases)]
        try:
            g = generate(base, seed, modern=args.modern, attrs=args.attrs)
        except Exception as exc:  # a generator bug must be seen, not skipped
            print(f"generator error on seed {seed} ({base[0]['id']}): {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        if g is None:
            continue
        if args.kind and args.kind not in g["case"]["mutations"]:
            continue
        case = g["case"]
        out = bench.heal_case(case, g["before"], g["after"])
        rows.append({"id": case["id"], "mutations": case["mutations"], "verdict": out["verdict"], "ms": out["ms"],
                     "heal_possible": case["heal_possible"], "no_break": bool(case.get("no_break"))})
        if args.proposals and out["verdict"] in ("refused", "refused-correct"):
            rows[-1]["proposal"] = bench.proposal_verdict(case, g["before"], g["after"])
        bad = out["verdict"] in ("WRONG", "CONTROL-CHANGED", "CRASH", "refused")
        if bad and shown < args.show:
            shown += 1
            print(f"{out['verdict']:<16} {case['id']}  [{'; '.join(case['notes'])}]")
            print(f"    reason: {out['reason'][:300]}")
        if bad and args.dump:
            k += 1
            d = os.path.join(args.dump, case["id"])
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "before.html"), "w", encoding="utf-8") as fh:
                fh.write(g["before"])
            with open(os.path.join(d, "after.html"), "w", encoding="utf-8") as fh:
                fh.write(g["after"])
            with open(os.path.join(d, "case.json"), "w", encoding="utf-8") as fh:
                json.dump({**case, "verdict": out["verdict"], "reason": out["reason"]}, fh, indent=1)
    print(table(rows))
    total = len(rows)
    healable = [r for r in rows if r["heal_possible"] and not r["no_break"]]
    neg = [r for r in rows if not r["heal_possible"]]
    result = {
        "cases": total,
        "heal_rate": round(sum(r["verdict"] == "healed" for r in healable) / max(len(healable), 1), 4),
        "wrong_rate": round(sum(r["verdict"] in ("WRONG", "CONTROL-CHANGED") for r in rows) / max(total, 1), 4),
        "refusal_rate": round(sum(r["verdict"] == "refused" for r in healable) / max(len(healable), 1), 4),
        "negatives_refused": round(sum(r["verdict"] == "refused-correct" for r in neg) / max(len(neg), 1), 4),
        "controls_kept": round(sum(r["verdict"] == "control-kept" for r in rows if r["no_break"])
                               / max(sum(r["no_break"] for r in rows), 1), 4),
        "crashes": sum(r["verdict"] == "CRASH" for r in rows),
        "median_ms": round(statistics.median(r["ms"] for r in rows), 2) if rows else 0.0,
    }
    if args.proposals:
        result.update(bench.proposal_figures(rows))
    print(json.dumps(result))
    return 0


def table(rows: list[dict]) -> str:
    kinds: dict[str, list[dict]] = {}
    for r in rows:
        for m in r["mutations"]:
            kinds.setdefault(m, []).append(r)
    lines = [f"{'mutation kind':<22} {'cases':>5} {'heal':>7} {'wrong':>7} {'refused':>8} {'neg refused':>11} {'ctrl kept':>9} {'crash':>5}"]
    for m in sorted(kinds):
        rs = kinds[m]
        healable = [r for r in rs if r["heal_possible"] and not r["no_break"]]
        neg = [r for r in rs if not r["heal_possible"]]
        ctrl = [r for r in rs if r["no_break"]]
        def pct(a, b):
            return f"{100 * a / len(b):.1f}%" if b else "-"
        lines.append(f"{m:<22} {len(rs):>5} "
                     f"{pct(sum(r['verdict'] == 'healed' for r in healable), healable):>7} "
                     f"{pct(sum(r['verdict'] in ('WRONG', 'CONTROL-CHANGED') for r in rs), rs):>7} "
                     f"{pct(sum(r['verdict'] == 'refused' for r in healable), healable):>8} "
                     f"{pct(sum(r['verdict'] == 'refused-correct' for r in neg), neg):>11} "
                     f"{pct(sum(r['verdict'] == 'control-kept' for r in ctrl), ctrl):>9} "
                     f"{sum(r['verdict'] == 'CRASH' for r in rs):>5}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
