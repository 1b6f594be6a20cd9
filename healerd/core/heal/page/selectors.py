"""CSS selector synthesis and verification for the built-in healer.

Selectors are built from small compound parts (tag, id, classes, semantic
attributes, and as a last resort :nth-child / :nth-of-type), tried cheapest
first with an in-Python matcher over the page index, and the chosen one is then
checked with selectolax itself (`check_selector` plus a real `css`/`css_first`
run), so a selector is only returned when lexbor gives exactly the intended nodes.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache

from healerd.core.blueprint import BlueprintError, check_selector
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.page.node_kinds import one_per_kind

_IDENT = re.compile(r"^-?[_a-zA-Z][_a-zA-Z0-9-]*$")
_SAFE_VALUE = re.compile(r"^[\w .:/#@+-]{1,40}$")
# attributes that name what a node is (not the data it carries)
_SEMANTIC_ATTRS = ("itemprop", "name", "rel", "role", "type", "property", "scope", "itemtype", "headers", "for", "aria-label")
_PRESENCE_ATTRS = ("itemscope", "itemprop", "data-id")
MAX_TRIES = 400


def safe_ident(name: str) -> bool:
    """True for class/id names usable unescaped in a selector (no digits-only runs that look generated)."""
    return bool(_IDENT.match(name)) and not re.search(r"\d{5,}", name)


def _quote(value: str) -> str | None:
    return f'"{value}"' if _SAFE_VALUE.match(value) and '"' not in value else None


@dataclass(frozen=True)
class Compound:
    """One compound selector: tag, optional id, classes, attributes, position."""

    tag: str = ""
    node_id: str = ""
    classes: tuple[str, ...] = ()
    attrs: tuple[tuple[str, str | None], ...] = ()
    nth_child: int = 0
    nth_of_type: int = 0
    cost: float = 1.0
    nth_from: int = 0        # :nth-child(n+K): every element child from the K-th on (rows after a header)
    has: Compound | None = None   # :has(> child): an element child matching it (records told from siblings)
    not_class: str = ""           # :not(.name): a class only look-alike siblings carry ("promoted")
    nth_last: int = 0             # :nth-last-child(K): with nth_child, "the k-th of n" (a cell of a fixed-width row)

    def css(self) -> str:
        out = self.tag
        if self.node_id:
            out += "#" + self.node_id
        for c in self.classes:
            out += "." + c
        for name, value in self.attrs:
            out += f"[{name}]" if value is None else f"[{name}={_quote(value)}]"
        if self.nth_child:
            out += f":nth-child({self.nth_child})"
        if self.nth_of_type:
            out += f":nth-of-type({self.nth_of_type})"
        if self.nth_from:
            out += f":nth-child(n+{self.nth_from})"
        if self.has is not None:
            out += f":has(> {self.has.css()})"
        if self.not_class:
            out += f":not(.{self.not_class})"
        if self.nth_last:
            out += f":nth-last-child({self.nth_last})"
        return out or "*"

    def matches(self, page: Page, i: int) -> bool:
        if self.tag and page.tags[i] != self.tag:
            return False
        a = page.attrs[i]
        if self.node_id and a.get("id") != self.node_id:
            return False
        if self.classes:
            have = set((a.get("class") or "").split())
            if not all(c in have for c in self.classes):
                return False
        for name, value in self.attrs:
            got = a.get(name, _MISSING)
            if got is _MISSING or (value is not None and got != value):
                return False
        if self.nth_child or self.nth_of_type or self.nth_from:
            k, kt = page.sibling_index(i)
            if self.nth_from and k < self.nth_from:
                return False
            if self.nth_child and k != self.nth_child:
                return False
            if self.nth_of_type and kt != self.nth_of_type:
                return False
        if self.not_class and self.not_class in (a.get("class") or "").split():
            return False
        if self.nth_last:
            p = page.parent[i]
            if p < 0 or len(page.children[p]) - page.children[p].index(i) != self.nth_last:
                return False
        if self.has is not None:
            has = self.has
            return any(has.matches(page, k) for k in page.children[i])
        return True


_MISSING = object()


@dataclass(frozen=True)
class Selector:
    """A chain of compounds joined by ' ' or '>' (ancestor first)."""

    parts: tuple[Compound, ...]
    combinators: tuple[str, ...] = ()

    @property
    def cost(self) -> float:
        return sum(p.cost for p in self.parts) + 0.5 * len(self.combinators)

    def css(self) -> str:
        out = self.parts[0].css()
        for comb, part in zip(self.combinators, self.parts[1:]):
            out += (" > " if comb == ">" else " ") + part.css()
        return out

    def matches(self, page: Page, i: int) -> bool:
        if not self.parts[-1].matches(page, i):
            return False
        return _match_up(page, page.parent[i], self.parts[:-1], self.combinators)


def _match_up(page: Page, p: int, parts: tuple[Compound, ...], combs: tuple[str, ...]) -> bool:
    if not parts:
        return True
    want, comb = parts[-1], combs[-1]
    while p >= 0:
        if want.matches(page, p) and _match_up(page, page.parent[p], parts[:-1], combs[:-1]):
            return True
        if comb == ">":
            return False
        p = page.parent[p]
    return False


def compounds(page: Page, i: int, avoid_attr: str | None = None, positional: bool = False) -> list[Compound]:
    """Compound selectors describing node i, cheapest (most robust) first."""
    tag = page.tags[i]
    a = page.attrs[i]
    out: list[Compound] = []
    node_id = a.get("id") or ""
    if node_id and safe_ident(node_id) and avoid_attr != "id":
        out.append(Compound(tag=tag, node_id=node_id, cost=1.0))
    elif node_id and avoid_attr != "id" and not re.search(r"\d{5,}", node_id) and _quote(node_id):
        # an id that is no bare identifier (`Reading.exceeds`, `section:intro`): as an attribute
        out.append(Compound(tag=tag, attrs=(("id", node_id),), cost=1.2))
    for name in _SEMANTIC_ATTRS:
        value = a.get(name)
        if name != avoid_attr and value and _quote(value):
            out.append(Compound(tag=tag, attrs=((name, value),), cost=1.6))
    for name in sorted(a):
        value = a.get(name)
        if name.startswith("data-") and name != avoid_attr and _IDENT.match(name):
            if value and _quote(value):
                out.append(Compound(tag=tag, attrs=((name, value),), cost=1.8))
            out.append(Compound(tag=tag, attrs=((name, None),), cost=2.2))
    classes = [c for c in page.classes(i) if safe_ident(c)]
    for c in classes:
        out.append(Compound(tag=tag, classes=(c,), cost=1.5))
    for k, c1 in enumerate(classes[:4]):
        for c2 in classes[k + 1:4]:
            out.append(Compound(tag=tag, classes=(c1, c2), cost=2.3))
    for name in _PRESENCE_ATTRS:
        if name in a and name != avoid_attr:
            out.append(Compound(tag=tag, attrs=((name, None),), cost=2.4))
    out.append(Compound(tag=tag, cost=2.5))
    if positional:
        k, kt = page.sibling_index(i)
        out.append(Compound(tag=tag, nth_of_type=kt, cost=4.0))
        out.append(Compound(tag=tag, nth_child=k, cost=4.2))
        for c in classes[:2]:
            out.append(Compound(tag=tag, classes=(c,), nth_child=k, cost=4.5))
    return out


def _anchor_compounds(page: Page, i: int, positional: bool) -> list[Compound]:
    """Compounds for an ancestor used as context (bare tags cost more there)."""
    out = []
    for c in compounds(page, i, positional=positional):
        if not c.node_id and not c.classes and not c.attrs and not c.nth_child and not c.nth_of_type:
            c = Compound(tag=c.tag, cost=3.0)
        out.append(c)
    return out


def candidate_selectors(page: Page, target: int, stop: int = -1, avoid_attr: str | None = None, depth: int = 5) -> list[Selector]:
    """Selectors ending at `target`, optionally qualified by ancestors (not above `stop`), cheapest first."""
    own = compounds(page, target, avoid_attr, positional=False)
    own_pos = compounds(page, target, avoid_attr, positional=True)[len(own):]
    cands: list[Selector] = [Selector((c,)) for c in own]
    ancestors = []
    p = page.parent[target]
    while p >= 0 and len(ancestors) < depth:
        ancestors.append(p)
        if p == stop:
            break  # the container itself may qualify (e.g. `tr.row > td:nth-child(2)`), nothing above it
        p = page.parent[p]
    for level, anc in enumerate(ancestors):
        for ac in _anchor_compounds(page, anc, positional=False)[:8]:
            for c in own[:6]:
                penalty = 0.3 * level
                if level == 0:
                    cands.append(Selector((_with_cost(ac, ac.cost + penalty), c), (">",)))
                cands.append(Selector((_with_cost(ac, ac.cost + penalty + 0.2), c), (" ",)))
    cands += [Selector((c,)) for c in own_pos]
    if ancestors:
        parent = ancestors[0]
        for pc in _anchor_compounds(page, parent, positional=True)[:8]:
            for c in own_pos:
                cands.append(Selector((pc, c), (">",)))
        for level, anc in enumerate(ancestors[1:], start=1):
            for ac in _anchor_compounds(page, anc, positional=False)[:4]:
                for c in own_pos:
                    cands.append(Selector((_with_cost(ac, ac.cost + 0.3 * level + 0.2), c), (" ",)))
        # a positional step at the parent, e.g. `div.row:nth-child(5) > div > div.readonly`
        for pc in compounds(page, parent, positional=True)[-2:]:
            for c in own[:4]:
                cands.append(Selector((pc, c), (">",)))
    cands.sort(key=lambda s: s.cost)
    return cands


def _with_cost(c: Compound, cost: float) -> Compound:
    return Compound(c.tag, c.node_id, c.classes, c.attrs, c.nth_child, c.nth_of_type, cost, c.nth_from, c.has,
                    c.not_class)


@lru_cache(maxsize=4096)
def _lexbor_ok(css: str) -> bool:
    """The selector is one the blueprint accepts (cached: listings ask once per container)."""
    try:
        check_selector(css, "selector")
    except BlueprintError:
        return False
    return True


def pool(page: Page, c: Compound) -> list[int]:
    """Elements that may match compound `c` (a superset, in document order), from the page indexes."""
    if c.node_id:
        return page.attr_index("id").get(c.node_id, [])
    if c.classes:
        return min((page.by_class.get(k, []) for k in c.classes), key=len)
    if c.attrs and c.attrs[0][1] is not None:
        name, value = c.attrs[0]
        return page.attr_index(name).get(value, [])
    if c.tag:
        return page.by_tag.get(c.tag, [])
    return list(range(len(page.nodes)))


def all_matches(page: Page, sel: Selector, root: int | None = None, stop_after: int | None = None) -> list[int]:
    """Elements matching `sel` inside `root` (descendants only) or the whole document, in order."""
    # lexbor's css/css_first on an element can return the element itself, so the root is included
    lo, hi = (0, len(page.nodes)) if root is None else (root, page.end[root])
    cand = pool(page, sel.parts[-1])
    start = bisect_left(cand, lo)
    out = []
    for k in range(start, len(cand)):
        i = cand[k]
        if i >= hi:
            break
        if sel.matches(page, i):
            out.append(i)
            if stop_after is not None and len(out) >= stop_after:
                break
    return out


def first_in(page: Page, sel: Selector, root: int | None) -> int | None:
    """The first element matching `sel` inside `root` (descendants only) or the whole document."""
    got = all_matches(page, sel, root, stop_after=1)
    return got[0] if got else None


def single_selector(page: Page, target: int, avoid_attr: str | None = None, prefer: str | None = None) -> str | None:
    """A selector whose first match in the document is `target`, checked with selectolax."""
    root = page.tree.root
    if prefer and _lexbor_ok(prefer) and page.index_of(root.css_first(prefer)) == target:
        return prefer
    tries = 0
    for sel in candidate_selectors(page, target, avoid_attr=avoid_attr):
        tries += 1
        if tries > MAX_TRIES:
            break
        if first_in(page, sel, None) != target:
            continue
        css = sel.css()
        if _lexbor_ok(css) and page.index_of(root.css_first(css)) == target:
            return css
    return None


def items_selector(page: Page, containers: list[int], decoys: frozenset[int] = frozenset()) -> str | None:
    """A selector whose matches in the document are exactly `containers`, in order.

    Tried first from names (classes, ids, attributes of the containers, their parent and an
    ancestor); then from what tells them from look-alike siblings (`_telling_compounds`); then
    with positions: the rows after a header row (`:nth-child(n+2)`) and an
    ancestor picked out by its place (`table:nth-of-type(1)`), for pages whose names say nothing.
    """
    want = list(containers)
    # names first, then what tells the containers from look-alike siblings, then positions
    for positional, telling in ((False, False), (False, True), (True, False)):
        for sel in _items_candidates(page, want, positional, telling, decoys)[:MAX_TRIES]:
            if all_matches(page, sel) != want:
                continue
            css = sel.css()
            if _lexbor_ok(css) and [page.index_of(n) for n in page.tree.css(css)] == want:
                return css
    return None


def _items_candidates(page: Page, want: list[int], positional: bool, telling: bool = False,
                      decoys: frozenset[int] = frozenset()) -> list[Selector]:
    own = _common_compounds(page, want)
    if telling:
        own = sorted(_telling_compounds(page, want, own, decoys), key=lambda c: c.cost)
        if not own:
            return []
    parents = [page.parent[c] for c in want]
    if positional:
        # one parent and the containers are its element children from the k-th on
        if len(set(parents)) == 1 and parents[0] >= 0:
            kids = page.children[parents[0]]
            k = kids.index(want[0])
            if k > 0:
                own = [Compound(c.tag, c.node_id, c.classes, c.attrs, 0, 0, c.cost + 1.0, k + 1) for c in own[:6]] + own
        else:
            own = own[:6]
    parent_opts = _common_compounds(page, parents) if all(p >= 0 for p in parents) else []
    parent_opts = [_with_cost(pc, pc.cost + (0.5 if not (pc.classes or pc.node_id or pc.attrs) else 0)) for pc in parent_opts][:6]
    top = _lowest_common_ancestor(page, parents) if parent_opts else _lowest_common_ancestor(page, want)
    anchors: list[Compound] = []
    anc, level = top, 0
    while anc >= 0 and level < 5:
        opts = _anchor_compounds(page, anc, positional=positional)
        if positional:
            opts = [c for c in opts if c.nth_child or c.nth_of_type][:3]
        for ac in opts[:5]:
            anchors.append(_with_cost(ac, ac.cost + 0.3 * level))
        anc = page.parent[anc]
        level += 1
    # the list's own parent, for a list with lists of the same kind nested in it (`div > ul > li`)
    grand = [page.parent[p] for p in parents] if parent_opts else []
    grand_opts = _common_compounds(page, grand)[:4] if grand and all(g >= 0 for g in grand) else []
    cands: list[Selector] = [Selector((c,)) for c in own]
    for c in own[:6]:
        for pc in parent_opts:
            cands.append(Selector((pc, c), (">",)))
            for gc in grand_opts:
                cands.append(Selector((_with_cost(gc, gc.cost + 0.5), pc, c), (">", ">")))
        for ac in anchors:
            cands.append(Selector((ac, c), (" ",)))
            for pc in parent_opts:
                cands.append(Selector((ac, pc, c), (" ", ">")))
    cands.sort(key=lambda s: s.cost)
    return cands


def _telling_compounds(page: Page, want: list[int], own: list[Compound], decoys: frozenset[int] = frozenset()) -> list[Compound]:
    """Compounds that tell the containers from look-alike siblings when their own names do not.

    Records that all carry an id (their siblings, a "promoted" copy or a heading, none):
    `dt[id]`; records that all have a child of one kind (a link to a function, where the
    sibling items link to classes): `li:has(> a.function)`; look-alike siblings carrying a
    class no record has (a "promoted" copy of a row, one of `decoys`): `tr:not(.promoted)`.
    """
    tags = {page.tags[n] for n in want}
    tag = page.tags[want[0]] if len(tags) == 1 else ""
    out = []
    if all(page.attrs[n].get("id") for n in want):
        out.append(Compound(tag=tag, attrs=(("id", None),), cost=2.6))
    kids: list[Compound] = []
    for k in page.children[want[0]][:6]:
        for c in compounds(page, k, positional=False):
            if (c.classes or c.attrs) and c not in kids and all(any(c.matches(page, j) for j in page.children[n])
                                                                 for n in want[1:]):
                kids.append(c)
    for kid in kids[:4]:
        for c in own[:2] + out[:1]:
            out.append(Compound(c.tag, c.node_id, c.classes, c.attrs, c.nth_child, c.nth_of_type, c.cost + 1.2,
                                c.nth_from, kid))
    # a class that the decoys among the containers' siblings (copies of a record: `decoys`, from the
    # caller) carry and no container does: `tr:not(.promoted)`
    theirs: set[str] = set()
    for k in decoys:
        if page.tags[k] in tags:
            theirs.update(c for c in page.classes(k) if safe_ident(c))
    theirs -= {c for n in want for c in page.classes(n)}
    for name in sorted(theirs)[:3]:
        for c in own[:2]:
            out.append(Compound(c.tag, c.node_id, c.classes, c.attrs, c.nth_child, c.nth_of_type, c.cost + 1.4,
                                c.nth_from, None, name))
    return out


def _common_compounds(page: Page, nodes: list[int]) -> list[Compound]:
    """Compounds that every node in `nodes` matches (taken from the first, checked on all)."""
    out = []
    rest = nodes[1:]
    kinds = one_per_kind(page, rest) if len(rest) > 8 else rest   # tag and attributes alike: matched alike
    for c in compounds(page, nodes[0], positional=False):
        alike = not (c.nth_child or c.nth_of_type or c.nth_from or c.has is not None)
        if all(c.matches(page, n) for n in (kinds if alike else rest)):
            out.append(c)
    return out


def _lowest_common_ancestor(page: Page, nodes: list[int]) -> int:
    anc = page.parent[nodes[0]]
    while anc >= 0 and not all(page.contains(anc, n) and n != anc for n in nodes):
        anc = page.parent[anc]
    return anc


def relative_selectors(page: Page, container: int, target: int, avoid_attr: str | None = None) -> list[Selector]:
    """Selectors for `target` meant to be used inside `container` (qualifiers stay inside it)."""
    return candidate_selectors(page, target, stop=container, avoid_attr=avoid_attr, depth=4)


def lexbor_first_in(page: Page, container: int, css: str) -> int | None:
    if not _lexbor_ok(css):
        return None
    return page.first_in(container, css)


# ---------------------------------------------------------------------------
# minimal edits of the old selector (keeps the author's intent when it still fits)
# ---------------------------------------------------------------------------

_COMPOUND_HEAD = re.compile(r"^([a-zA-Z][\w-]*|\*)?(.*)$", re.S)


def split_selector(css: str) -> tuple[list[str], list[str]] | None:
    """Split one selector (no top-level comma) into compounds and the combinators between them."""
    parts, combs, buf = [], [], ""
    depth, quote, pending = 0, "", None
    for ch in css.strip():
        if quote:
            buf += ch
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == "," and depth == 0:
            return None
        if depth == 0 and (ch.isspace() or ch in ">+~"):
            if buf:
                parts.append(buf)
                buf = ""
                pending = " "
            if ch in ">+~":
                pending = ch
            continue
        if pending is not None and not buf and parts:
            combs.append(pending)
            pending = None
        buf += ch
    if buf:
        parts.append(buf)
    if len(combs) != len(parts) - 1 or not parts:
        return None
    return parts, combs


def _join(parts: list[str], combs: list[str]) -> str:
    out = parts[0]
    for c, p in zip(combs, parts[1:]):
        out += " " + p if c == " " else f" {c} {p}"
    return out


def relaxations(css: str) -> list[str]:
    """The old selector with one compound loosened: tag dropped, classes/ids dropped, or removed."""
    split = split_selector(css)
    if split is None:
        return []
    parts, combs = split
    out: list[str] = []
    for k, part in enumerate(parts):
        m = _COMPOUND_HEAD.match(part)
        tag, rest = (m.group(1) or ""), m.group(2)
        variants = []
        if tag and rest:
            variants.append(rest)
        if rest:
            variants.append(tag or "*")
        for v in variants:
            out.append(_join(parts[:k] + [v] + parts[k + 1:], combs))
        if len(parts) > 1:
            if k == len(parts) - 1:
                continue
            if k == 0:
                out.append(_join(parts[1:], combs[1:]))
            else:
                c = " " if combs[k - 1] in (" ", ">") and combs[k] in (" ", ">") else None
                if c:
                    out.append(_join(parts[:k] + parts[k + 1:], combs[:k - 1] + [c] + combs[k + 1:]))
    seen, uniq = set(), []
    for o in out:
        if o not in seen and o != css:
            seen.add(o)
            uniq.append(o)
    return uniq


def relaxed_selector(page: Page, old_css: str, want: list[int]) -> str | None:
    """A one-step loosening of `old_css` whose matches are exactly `want`, if there is one."""
    for css in relaxations(old_css):
        if _lexbor_ok(css) and [page.index_of(n) for n in page.tree.css(css)] == want:
            return css
    return None


def relaxed_first(page: Page, old_css: str, target: int, root: int | None = None) -> str | None:
    """A one-step loosening of `old_css` whose first match (in the document or in `root`) is `target`."""
    ctx = page.tree.root if root is None else page.nodes[root]
    for css in relaxations(old_css):
        if _lexbor_ok(css) and page.index_of(ctx.css_first(css)) == target:
            return css
    return None
