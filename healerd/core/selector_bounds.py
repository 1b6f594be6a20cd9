"""The static check every selector a person did not write passes before it is used.

A healer's answer, a fix memory bundle, a merge of two versions and the built-in healer's
output are all selectors healerd did not get from a person. selectolax (lexbor) has no time
limit, and some selectors cost it minutes on a page shaped for them: on 240 nested `<div>`s,
`div:has(div:has(div:has(td)))` takes ~0.6 s when no `td` is there, four levels 85 s;
`span div div div div p` (five descendant steps) ~18 s. So before such a selector is tried
anywhere it must be small and shallow:

- at most MAX_LENGTH characters;
- at most MAX_ALTERNATIVES comma-separated selectors, each of at most MAX_COMPOUNDS compound
  selectors (joined by combinators);
- at most MAX_LOOSE_COMBINATORS descendant (" ") or general-sibling ("~") combinators in the
  whole selector, nested ones included: each is a search over all ancestors or siblings, and
  they multiply;
- no `:has()`, `:not()`, `:is()`, `:where()` (or `:matches()`) inside another one;
- every other pseudo-class on an allow-list (PSEUDO_CLASSES, FUNCTIONS). cssselect reads the
  argument of a functional pseudo-class as bare tokens, while lexbor evaluates a selector there
  (`:nth-child(2n of div p)`, `:current(div p)`): such an argument would escape every bound
  above. So a functional pseudo-class is allowed only with arguments that are no selector
  (`:nth-child(2n+1)`, `:lang(en)`), and `of S` or `:current()` are refused.

The selector is parsed with `cssselect` (a maintained CSS Selectors Level 4 parser, the one
parsel and Scrapy use), not tokenised by hand: its tree says exactly what nests in what. A
selector it cannot parse is refused too: an untrusted selector must be one we can measure.
The check is static; the evaluation of such selectors is bounded as well, by a worker
process's wall-clock deadline (healerd/adapters/trials.py), since a page can make even a
small selector slow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

import cssselect
from cssselect.parser import (
    Attrib,
    Class,
    CombinedSelector,
    Element,
    Function,
    Hash,
    Matching,
    Negation,
    Pseudo,
    Relation,
    Selector,
    SpecificityAdjustment,
)

from healerd.core.errors import Refusal

MAX_LENGTH = 300
MAX_ALTERNATIVES = 8
MAX_COMPOUNDS = 8
MAX_LOOSE_COMBINATORS = 4
MAX_NESTING = 1
NESTING_PSEUDOS = ":has(), :not(), :is(), :where()"
_LOOSE = (" ", "~")

# Pseudo-classes without arguments: none takes a selector, each tests the element itself.
PSEUDO_CLASSES = frozenset((
    "active", "any-link", "blank", "checked", "default", "disabled", "empty", "enabled", "first-child",
    "first-of-type", "focus", "focus-visible", "focus-within", "hover", "in-range", "indeterminate", "invalid",
    "last-child", "last-of-type", "link", "only-child", "only-of-type", "optional", "out-of-range",
    "placeholder-shown", "read-only", "read-write", "required", "root", "scope", "target", "valid", "visited",
))
_NTH = ("nth-child", "nth-last-child", "nth-of-type", "nth-last-of-type")
# Functional pseudo-classes, with the token types their arguments may have (never a selector).
FUNCTIONS = {**{name: ("NUMBER", "IDENT", "DELIM") for name in _NTH},
             "lang": ("IDENT", "STRING"), "dir": ("IDENT",),
             "contains": ("STRING", "IDENT"), "lexbor-contains": ("STRING", "IDENT")}
_AN_B = re.compile(r"(?:[+-]?\d*n(?:[+-]\d+)?|[+-]?\d+|odd|even)")


class SelectorRefused(Refusal):
    """A selector over the static bounds; `str()` is the one line that names it."""

    def __init__(self, css: str, why: str, key: str | None = None):
        self.css = css
        self.why = why
        self.key = key
        shown = css if len(css) <= 120 else css[:117] + "..."
        where = f"{key}: " if key else ""
        super().__init__(f"{where}the selector {shown!r} is refused: {why}")


def _measure(node: Any, depth: int, stats: dict[str, int]) -> None:
    """Walk one parsed node: the deepest nesting of functional pseudo-classes, the widest
    complex selector, and the loose combinators (in `stats`)."""
    if isinstance(node, CombinedSelector):
        # a chain: left side is itself a chain, right side one compound
        compounds = 1
        cur: Any = node
        while isinstance(cur, CombinedSelector):
            if cur.combinator in _LOOSE:
                stats["loose"] += 1
            _measure(cur.subselector, depth, stats)
            compounds += 1
            cur = cur.selector
        _measure(cur, depth, stats)
        stats["compounds"] = max(stats["compounds"], compounds)
        return
    if isinstance(node, Relation):   # :has(<relative selector list>)
        _nest(depth + 1, stats)
        _measure(node.selector, depth, stats)
        for combinator, sub in _relative(node):
            if combinator in _LOOSE:   # :has(td) is :has(<descendant> td)
                stats["loose"] += 1
            _measure_selector(sub, depth + 1, stats)
        return
    if isinstance(node, Negation):
        _nest(depth + 1, stats)
        _measure(node.selector, depth, stats)
        _measure(node.subselector, depth + 1, stats)
        return
    if isinstance(node, (Matching, SpecificityAdjustment)):
        _nest(depth + 1, stats)
        _measure(node.selector, depth, stats)
        for sub in node.selector_list:
            _measure(sub, depth + 1, stats)
        return
    if isinstance(node, Selector):
        _measure_selector(node, depth, stats)
        return
    if isinstance(node, Pseudo):
        if node.ident.lower() not in PSEUDO_CLASSES:
            raise ValueError(f"the pseudo-class :{node.ident} is not on the allow-list")
        _measure(node.selector, depth, stats)
        return
    if isinstance(node, Function):
        _check_function(node)
        _measure(node.selector, depth, stats)
        return
    if isinstance(node, (Class, Hash, Attrib)):
        _measure(node.selector, depth, stats)
        return
    if isinstance(node, Element):
        return
    raise ValueError(f"an unknown selector part ({type(node).__name__})")


def _check_function(node: Function) -> None:
    """A functional pseudo-class on the allow-list, whose arguments are no selector."""
    name = node.name.lower()
    allowed = FUNCTIONS.get(name)
    if allowed is None:
        raise ValueError(f"the pseudo-class :{node.name}() is not on the allow-list")
    if any(arg.type not in allowed for arg in node.arguments):
        raise ValueError(f":{node.name}() takes no such argument")
    if name in _NTH:
        text = "".join(str(arg.value) for arg in node.arguments).lower()
        if not _AN_B.fullmatch(text):
            raise ValueError(f":{node.name}() takes An+B only (`of S` would be a selector no bound measures)")


def _relative(node: Relation) -> list[tuple[str, Any]]:
    """The (combinator, selector) pairs of a `:has()`: cssselect 1.3+ keeps a list of them
    (`arguments`), 1.2 one pair (`combinator`, `subselector`)."""
    pairs = getattr(node, "arguments", None)
    if pairs is None:
        pairs = [(getattr(node, "combinator", " "), getattr(node, "subselector", None))]
    return [(str(getattr(c, "value", c)), sub) for c, sub in pairs]


def _measure_selector(node: Any, depth: int, stats: dict[str, int]) -> None:
    if isinstance(node, Selector):
        _measure(node.parsed_tree, depth, stats)
    else:
        _measure(node, depth, stats)


def _nest(depth: int, stats: dict[str, int]) -> None:
    stats["nesting"] = max(stats["nesting"], depth)


def problem(css: str) -> str | None:
    """Why `css` is over the bounds, or None when it is within them."""
    if not isinstance(css, str) or not css.strip():
        return "not a selector"
    if len(css) > MAX_LENGTH:
        return f"{len(css)} characters, more than {MAX_LENGTH}"
    try:
        parsed = cssselect.parse(css)
    except Exception as exc:   # cssselect's SelectorSyntaxError, or anything its parser trips on
        return f"it cannot be parsed ({' '.join(str(exc).split())[:120]})"
    if len(parsed) > MAX_ALTERNATIVES:
        return f"{len(parsed)} comma-separated selectors, more than {MAX_ALTERNATIVES}"
    stats = {"nesting": 0, "compounds": 0, "loose": 0}
    try:
        for sel in parsed:
            if sel.pseudo_element is not None:
                return f"a pseudo-element (::{sel.pseudo_element}) selects no element"
            _measure(sel.parsed_tree, 0, stats)
    except (ValueError, RecursionError) as exc:
        return str(exc) if isinstance(exc, ValueError) else "nested too deeply"
    if stats["nesting"] > MAX_NESTING:
        return f"{NESTING_PSEUDOS} nest {stats['nesting']} levels deep (at most {MAX_NESTING})"
    if stats["compounds"] > MAX_COMPOUNDS:
        return f"{stats['compounds']} compound selectors in a row, more than {MAX_COMPOUNDS}"
    if stats["loose"] > MAX_LOOSE_COMBINATORS:
        return (f"{stats['loose']} descendant or sibling (~) steps, more than {MAX_LOOSE_COMBINATORS} "
                f"(each one searches every ancestor or sibling)")
    return None


def check_selector(css: str, key: str | None = None) -> None:
    """Raise SelectorRefused (one line naming the selector) when `css` is over the bounds."""
    why = problem(css)
    if why is not None:
        raise SelectorRefused(css if isinstance(css, str) else repr(css), why, key)


def blueprint_selectors(bp: Any) -> Iterator[tuple[str, str]]:
    """(key, selector) for every selector a blueprint evaluates: `items` and its fallbacks, each
    field's selectors, and `wait_for` (the browser evaluates it on the page too)."""
    for i, css in enumerate(getattr(bp, "items_selectors", ()) or ()):
        yield ("items" if i == 0 else f"items[{i}]"), css
    for name, spec in (getattr(bp, "fields", None) or {}).items():
        for i, css in enumerate(spec.selectors):
            yield (f"fields.{name}.css" if i == 0 else f"fields.{name}.css[{i}]"), css
    wait_for = getattr(bp, "wait_for", None)
    if wait_for:
        yield "wait_for", wait_for


def check_blueprint(bp: Any, trusted: Any = None) -> None:
    """Raise SelectorRefused for the first selector of `bp` over the bounds (a code parser's
    blueprint has no selectors to check: its code is checked and confined by the sandbox).

    Selectors `bp` shares with `trusted` (the blueprint it would replace: a person's, or one
    whose new selectors passed this check when it was made) are not checked again, so a
    candidate that keeps a person's own selector is not refused for it."""
    known = {css for _, css in blueprint_selectors(trusted)} if trusted is not None else set()
    check_all((key, css) for key, css in blueprint_selectors(bp) if css not in known)


def check_all(pairs: Iterable[tuple[str, str]]) -> None:
    for key, css in pairs:
        check_selector(css, key)


def normalized(css: str) -> str:
    """One spelling of a selector: cssselect's canonical form (`div>td` and `div >  td` alike),
    or the selector with its whitespace collapsed when cssselect cannot read it."""
    try:
        return ", ".join(sel.canonical() for sel in cssselect.parse(css))
    except Exception:
        return " ".join(css.split())


def candidate_digest(bp: Any) -> str:
    """The sha256 of a candidate blueprint with its selectors normalized: two answers that differ
    only in how a selector is spelled, or in the order of the keys, have one digest."""
    import hashlib
    import json

    d = bp.to_dict()

    def norm(v: Any) -> Any:
        if isinstance(v, str):
            return normalized(v)
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v

    if d.get("items") is not None:
        d["items"] = norm(d["items"])
    if d.get("wait_for"):
        d["wait_for"] = norm(d["wait_for"])
    for spec in (d.get("fields") or {}).values():
        if isinstance(spec, dict) and spec.get("css") is not None:
            spec["css"] = norm(spec["css"])
    text = json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
