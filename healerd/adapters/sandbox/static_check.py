"""The static check of a code parser: an allow-list of Python, refused in one line naming the construct.

A parser is untrusted code (a person's, or an external healer's answer). This check is the
first, friendlier layer before the confined child (`child.py`): it refuses, naming the line,

- every syntax node not in `ALLOWED_NODES` (async code, `except*`, class patterns in `match`
  (`case X(...)`, whose `__match_args__` and `__instancecheck__` a class controls), and any
  node a later Python adds until it is reviewed);
- imports outside `ALLOWED_IMPORTS` (and `from M import X` where M.X is another module);
- any built-in name rebound, whatever the binding (`str = ...`, `def len`, `for str in`, a
  walrus, `import re as str`, an argument, `except E as str`, `global str`, a match capture);
- any built-in used that a parser is not given, `type` other than `type(x)`, and
  `getattr`/`hasattr`/`setattr`/`delattr` other than called with a string literal naming a
  public attribute;
- dunder names anywhere: names, attributes (and every `_private` one), keyword arguments,
  definitions, and inside strings -- literals, bytes, f-strings, format templates and the
  expressions of literals that build a string (`"__glob" + "als__"`, `"_" * 2`, `"".join`,
  `"%s" %`, `chr(95)`, slices, literal `.format()`), with unknown parts read as a name;
- class statements with keywords (`metaclass=`) or with bases that are not plain names;
  decorators other than `staticmethod`, `classmethod`, `property` (and its `.setter` ...)
  and functools' `cache`, `lru_cache`, `cached_property`, `wraps`;
- frame, traceback, code, generator and coroutine attributes (`gi_frame`, `tb_frame`, ...),
  and `.format()`/`.format_map()` other than on a literal template that reaches into no
  attribute or item.

Nothing here runs the parser; the check is pure but for `from M import X`, which imports an
allowed module M in this process to see whether X is a module.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
import string
import types
from collections.abc import Iterator

from healerd.adapters.sandbox.policy import (
    ALLOWED_IMPORTS,
    ATTRIBUTE_BUILTINS,
    BLOCKED_MODULE_ATTRS,
    FORMAT_METHODS,
    MAX_SOURCE_CHARS,
    SAFE_BUILTINS,
    ParserRejected,
    forbidden_attribute,
)

# Every syntax node a parser may contain. Anything else is refused, so a node a new Python
# adds is refused until it is reviewed and listed here.
ALLOWED_NODES: frozenset[type[ast.AST]] = frozenset({
    # statements
    ast.Module, ast.FunctionDef, ast.ClassDef, ast.Return, ast.Delete, ast.Assign, ast.AugAssign, ast.AnnAssign,
    ast.For, ast.While, ast.If, ast.With, ast.Raise, ast.Try, ast.Assert, ast.Import, ast.ImportFrom,
    ast.Global, ast.Nonlocal, ast.Expr, ast.Pass, ast.Break, ast.Continue, ast.Match,
    # expressions
    ast.BoolOp, ast.NamedExpr, ast.BinOp, ast.UnaryOp, ast.Lambda, ast.IfExp, ast.Dict, ast.Set, ast.ListComp,
    ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Yield, ast.YieldFrom, ast.Compare, ast.Call,
    ast.FormattedValue, ast.JoinedStr, ast.Constant, ast.Attribute, ast.Subscript, ast.Starred, ast.Name,
    ast.List, ast.Tuple, ast.Slice,
    # contexts and operators
    ast.Load, ast.Store, ast.Del, ast.And, ast.Or, ast.Add, ast.Sub, ast.Mult, ast.MatMult, ast.Div, ast.Mod,
    ast.Pow, ast.LShift, ast.RShift, ast.BitOr, ast.BitXor, ast.BitAnd, ast.FloorDiv, ast.Invert, ast.Not,
    ast.UAdd, ast.USub, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In,
    ast.NotIn,
    # parts
    ast.comprehension, ast.ExceptHandler, ast.arguments, ast.arg, ast.keyword, ast.alias, ast.withitem,
    # match, without class patterns
    ast.match_case, ast.MatchValue, ast.MatchSingleton, ast.MatchSequence, ast.MatchMapping, ast.MatchStar,
    ast.MatchAs, ast.MatchOr,
})
# How a refused node is named in the one line.
NODE_WORDS: dict[type[ast.AST], str] = {
    ast.MatchClass: "a class pattern in match (case X(...))",
    ast.AsyncFunctionDef: "an async function (async def)",
    ast.Await: "await",
    ast.AsyncFor: "async for",
    ast.AsyncWith: "async with",
    ast.TryStar: "except*",
}
# Every built-in name, whichever of them this interpreter's `site` added: none may be rebound.
BUILTIN_NAMES = frozenset(n for n in dir(builtins) if not n.startswith("_")) | {
    "exit", "quit", "help", "copyright", "credits", "license"}
# The built-ins a parser may name (the child gives it no other).
USABLE_BUILTINS = frozenset(SAFE_BUILTINS) | frozenset(ATTRIBUTE_BUILTINS)
DECORATORS = ("staticmethod", "classmethod", "property")
FUNCTOOLS_DECORATORS = ("cache", "lru_cache", "cached_property", "wraps")
PROPERTY_PARTS = ("setter", "getter", "deleter")
# A dunder name inside a string: two underscores, a name, two underscores, not inside a longer
# word (so a CSS class such as "card__title" or "menu__item__link" passes).
DUNDER_IN_TEXT = re.compile(r"(?<![A-Za-z0-9])__\w+?__")
FOLD_LIMIT = 100_000                       # a folded string longer than this is not folded
FOLD_BUDGET = 2_000_000                    # characters folded in all; a parser building more is refused
UNKNOWN = "\u02b0"                         # an unknown part of a string: a letter (\w), shown as "…"
PURE_STR_METHODS = frozenset({
    "join", "replace", "lower", "upper", "strip", "lstrip", "rstrip", "title", "capitalize", "casefold",
    "swapcase", "removeprefix", "removesuffix", "center", "ljust", "rjust", "zfill", "format",
})


class _TooMuchText(Exception):
    """The literals fold into more text than FOLD_BUDGET."""


def check_static(code: str) -> None:
    """Raise ParserRejected, naming the first refused construct and its line, unless `code` passes."""
    if not isinstance(code, str):
        raise ParserRejected("parser source must be text")
    if len(code) > MAX_SOURCE_CHARS:
        raise ParserRejected(f"parser source is too large ({len(code)} characters, limit {MAX_SOURCE_CHARS})")
    try:
        tree = ast.parse(code, filename="parser.py")
    except SyntaxError as exc:
        raise ParserRejected(f"parser does not parse: line {exc.lineno}: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        raise ParserRejected(f"parser does not parse: {type(exc).__name__}: {exc}") from None

    parse_defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "parse"]
    if not parse_defs:
        raise ParserRejected("parser does not define a top-level function parse(html)")
    args = parse_defs[-1].args
    if not (args.posonlyargs or args.args or args.vararg):
        raise ParserRejected("parse() must take the page's HTML as its first argument")
    try:
        problems = sorted(_Checker(tree).problems(), key=lambda p: p[0])
    except RecursionError:
        raise ParserRejected("parser is nested too deeply to be checked") from None
    except _TooMuchText:
        raise ParserRejected(f"parser builds more than {FOLD_BUDGET} characters of text from literals; "
                             f"refused unchecked") from None
    if problems:
        (line, *_), text = problems[0]
        raise ParserRejected(f"parser {text} (line {line})")


Problem = tuple[tuple[int, int, int, int], str]


def _pos(node: ast.AST) -> tuple[int, int, int, int]:
    """Where a node starts, then where it ends: of `a.b.c`, the innermost `a.b` comes first."""
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0), getattr(node, "end_lineno", 0) or 0,
            getattr(node, "end_col_offset", 0) or 0)


class _Checker:
    """One walk over the tree; `problems` yields (position, what is refused) for each refusal."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.callees: set[int] = set()     # ids of type/getattr... Name nodes judged as a call
        self.literal_formats: set[int] = set()
        self.folded: dict[int, str | None] = {}
        self.budget = FOLD_BUDGET

    def problems(self) -> Iterator[Problem]:
        nodes = list(ast.walk(self.tree))
        for node in nodes:   # first the calls that make a restricted name's use acceptable
            if isinstance(node, ast.Call):
                yield from self._call(node)
            elif isinstance(node, ast.Attribute) and node.attr in FORMAT_METHODS:
                yield from self._format_template(node)
        for node in nodes:
            if type(node) not in ALLOWED_NODES:
                words = NODE_WORDS.get(type(node), f"the construct {type(node).__name__}")
                yield _pos(node), f"uses {words}, which parsers may not use"
                continue
            yield from self._node(node)

    # -- one node

    def _node(self, node: ast.AST) -> Iterator[Problem]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in ALLOWED_IMPORTS:
                    yield _pos(node), f"imports {alias.name!r}; allowed: {', '.join(ALLOWED_IMPORTS)}"
                yield from self._binds(alias.asname or alias.name.split(".")[0], node, "by an import")
        elif isinstance(node, ast.ImportFrom):
            yield from self._import_from(node)
        elif isinstance(node, ast.Name):
            yield from self._name(node)
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                yield _pos(node), f"accesses the private attribute {node.attr!r}"
            elif forbidden_attribute(node.attr):
                yield _pos(node), f"accesses the attribute {node.attr!r}"
            elif isinstance(node.value, ast.Name) and (node.value.id, node.attr) in BLOCKED_MODULE_ATTRS:
                yield _pos(node), f"uses {node.value.id}.{node.attr}, which is not allowed"
            elif node.attr in FORMAT_METHODS and id(node) not in self.literal_formats:
                yield _pos(node), f"uses .{node.attr}() other than on a string literal; use an f-string"
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            yield from self._definition(node)
        elif isinstance(node, ast.Lambda):
            yield from self._arguments(node.args, node)
        elif isinstance(node, ast.keyword):
            if node.arg is not None and node.arg.startswith("__"):
                yield _pos(node), f"uses the dunder name {node.arg!r} as a keyword argument"
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                yield from self._binds(name, node, "in a global/nonlocal declaration")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            yield from self._binds(node.name, node, "as an exception's name")
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            yield from self._binds(node.name, node, "as a match capture")
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield from self._binds(node.rest, node, "as a match capture")
        if isinstance(node, (ast.Constant, ast.JoinedStr, ast.BinOp, ast.Call, ast.Subscript)):
            text = self._fold(node)
            found = DUNDER_IN_TEXT.search(text) if text else None
            if found:
                shown = found.group(0).replace(UNKNOWN, "…")
                yield _pos(node), f"uses the dunder name {shown!r} in a string"

    def _name(self, node: ast.Name) -> Iterator[Problem]:
        name = node.id
        if name.startswith("__"):
            yield _pos(node), f"uses the dunder name {name!r}"
        elif not isinstance(node.ctx, ast.Load):
            yield from self._binds(name, node, "by assignment" if isinstance(node.ctx, ast.Store) else "by deleting it")
        elif name in ("type", *ATTRIBUTE_BUILTINS) and id(node) not in self.callees:
            how = "type(x)" if name == "type" else f"a call {name}(obj, 'name') with the name as a string literal"
            yield _pos(node), f"uses {name!r} other than as {how}"
        elif name in BUILTIN_NAMES and name not in USABLE_BUILTINS:
            yield _pos(node), f"uses the forbidden name {name!r}; it is not among the built-ins a parser may use"

    def _binds(self, name: str, node: ast.AST, how: str) -> Iterator[Problem]:
        if name.startswith("__"):
            yield _pos(node), f"binds the dunder name {name!r} {how}"
        elif name in BUILTIN_NAMES:
            yield _pos(node), f"rebinds the built-in name {name!r} {how}"

    def _import_from(self, node: ast.ImportFrom) -> Iterator[Problem]:
        if node.level:
            yield _pos(node), "uses a relative import"
            return
        mod = node.module or ""
        for alias in node.names:
            if alias.name == "*":
                yield _pos(node), f"uses 'from {mod} import *'"
                continue
            refusal = _from_import_refusal(mod, alias.name)
            if refusal:
                yield _pos(node), refusal
            yield from self._binds(alias.asname or alias.name, node, "by an import")

    def _definition(self, node: ast.FunctionDef | ast.ClassDef) -> Iterator[Problem]:
        kind = "function" if isinstance(node, ast.FunctionDef) else "class"
        if node.name.startswith("__"):
            yield _pos(node), f"defines the dunder name {node.name!r}"
        elif node.name in BUILTIN_NAMES:
            yield _pos(node), f"rebinds the built-in name {node.name!r} by a {kind} definition"
        for deco in node.decorator_list:
            if not _allowed_decorator(deco):
                yield _pos(deco), (f"uses a decorator other than {', '.join(DECORATORS)}, a property's "
                                   f".setter/.getter/.deleter or functools' {', '.join(FUNCTOOLS_DECORATORS)}")
        if isinstance(node, ast.FunctionDef):
            yield from self._arguments(node.args, node)
            return
        if node.keywords:
            names = ", ".join(f"{k.arg}=" if k.arg else "**" for k in node.keywords)
            yield _pos(node), f"gives a class statement keywords ({names}...): metaclasses are not allowed"
        for base in node.bases:
            if not _dotted_name(base):
                yield _pos(base), "derives a class from a computed base; name the base class"

    def _arguments(self, args: ast.arguments, node: ast.AST) -> Iterator[Problem]:
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, *(a for a in (args.vararg, args.kwarg) if a)]
        for arg in every:
            yield from self._binds(arg.arg, arg, "as an argument")

    def _call(self, node: ast.Call) -> Iterator[Problem]:
        func = node.func
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "type":
            yield _pos(node), "calls what type() returned: new classes and metaclasses are not allowed"
        if not isinstance(func, ast.Name):
            return
        plain = not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args)
        if func.id in ("type", *ATTRIBUTE_BUILTINS):
            self.callees.add(id(func))   # the call is accepted, or refused below: never the name again
        if func.id == "type":
            if not (plain and len(node.args) == 1):
                yield _pos(node), (f"calls type() with {len(node.args) + len(node.keywords)} arguments or unpacked "
                                   f"ones: only type(x) is allowed (no new classes or metaclasses)")
        elif func.id in ATTRIBUTE_BUILTINS:
            count = {"getattr": (2, 3), "setattr": (3,)}.get(func.id, (2,))
            name = node.args[1] if plain and len(node.args) in count else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                yield _pos(node), (f"calls {func.id}() with a computed or missing attribute name; write the name "
                                   f"as a string literal")
            elif forbidden_attribute(name.value) or name.value in FORMAT_METHODS:
                yield _pos(node), f"calls {func.id}() on the attribute {name.value!r}"

    def _format_template(self, node: ast.Attribute) -> Iterator[Problem]:
        """A `"...".format` on a literal template is accepted when no field walks an attribute or item."""
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            return
        try:
            fields = _format_fields(node.value.value)
        except ValueError as exc:
            yield _pos(node), f"formats with an invalid template: {exc}"
            return
        bad = [f for f in fields if "." in f or "[" in f]
        if bad:
            yield _pos(node), f"formats the field {{{bad[0]}}}, which reaches into an attribute or item"
        else:
            self.literal_formats.add(id(node))

    # -- strings built from literals

    def _fold(self, node: ast.AST) -> str | None:
        """The string `node` evaluates to as far as literals tell (UNKNOWN for the rest), or None."""
        key = id(node)
        if key not in self.folded:
            self.folded[key] = None   # a cycle cannot happen in a tree; this only bounds re-entry
            value = self._fold_node(node)
            if value is not None:
                self.budget -= len(value)
                if self.budget < 0:
                    raise _TooMuchText
            self.folded[key] = value if value is None or len(value) <= FOLD_LIMIT else None
        return self.folded[key]

    def _part(self, node: ast.AST) -> str:
        value = self._fold(node)
        return UNKNOWN if value is None else value

    def _fold_node(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return node.value
            if isinstance(node.value, bytes):
                return node.value.decode("latin-1")
            return None
        if isinstance(node, ast.JoinedStr):
            return _joined([self._part(v.value if isinstance(v, ast.FormattedValue) and v.conversion == -1
                                       and v.format_spec is None else v) for v in node.values])
        if isinstance(node, ast.FormattedValue):
            return None
        if isinstance(node, ast.BinOp):
            return self._fold_binop(node)
        if isinstance(node, ast.Subscript):
            return self._fold_subscript(node)
        if isinstance(node, ast.Call):
            return self._fold_call(node)
        return None

    def _fold_binop(self, node: ast.BinOp) -> str | None:
        left, right = self._fold(node.left), self._fold(node.right)
        if isinstance(node.op, ast.Add) and (left is not None or right is not None):
            return _joined([self._part(node.left), self._part(node.right)])
        if isinstance(node.op, ast.Mult):
            text, times = (left, node.right) if left is not None else (right, node.left)
            if text is None:
                return None
            count = times.value if isinstance(times, ast.Constant) and isinstance(times.value, int) else 2
            return text * max(0, count) if len(text) * max(0, count) <= FOLD_LIMIT else None
        if isinstance(node.op, ast.Mod) and left is not None:
            if _wide(left):
                return re.sub(r"%(\([^)]*\))?[-#0 +]*\d*(\.\d+)?[a-zA-Z%]", UNKNOWN, left)
            values: list[object] = []
            for part in (node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]):
                values.append(part.value if isinstance(part, ast.Constant) else UNKNOWN)
            try:
                return left % (tuple(values) if isinstance(node.right, ast.Tuple) else values[0])
            except (TypeError, ValueError, KeyError, OverflowError, MemoryError):
                return re.sub(r"%(\([^)]*\))?[-#0 +]*\d*(\.\d+)?[a-zA-Z%]", UNKNOWN, left)
        return None

    def _fold_subscript(self, node: ast.Subscript) -> str | None:
        text = self._fold(node.value)
        s = node.slice
        if text is None or not isinstance(s, ast.Slice):
            return None
        bounds: list[int | None] = []
        for bound in (s.lower, s.upper, s.step):
            if bound is None:
                bounds.append(None)
            elif isinstance(bound, ast.Constant) and isinstance(bound.value, int):
                bounds.append(bound.value)
            else:
                return None
        if bounds[2] == 0:
            return None
        return text[bounds[0]:bounds[1]:bounds[2]]

    def _fold_call(self, node: ast.Call) -> str | None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("chr", "str") and len(node.args) == 1 and not node.keywords:
            arg = node.args[0]
            if func.id == "str":
                return self._fold(arg)
            if isinstance(arg, ast.Constant) and isinstance(arg.value, int) and 0 <= arg.value < 0x110000:
                return chr(arg.value)
            return None
        if not (isinstance(func, ast.Attribute) and func.attr in PURE_STR_METHODS):
            return None
        text = self._fold(func.value)
        if text is None:
            return None
        if func.attr == "join":
            items = node.args[0] if len(node.args) == 1 else None
            if isinstance(items, (ast.List, ast.Tuple, ast.Set)):
                return _joined([self._part(e) for e in items.elts], text)
            return None
        args: list[object] = []
        for a in node.args:
            if isinstance(a, ast.Constant) and isinstance(a.value, int):
                if abs(a.value) > FOLD_LIMIT:
                    return None
                args.append(a.value)
            else:
                args.append(self._part(a))
        if func.attr == "format":
            if _wide(text):
                return None
            kwargs = {k.arg: self._part(k.value) for k in node.keywords if k.arg}
            try:
                return string.Formatter().vformat(text, args, _Missing(kwargs))
            except (ValueError, IndexError, KeyError, TypeError, AttributeError):
                return None
        if func.attr == "replace" and len(args) >= 2 and len(text) * (len(str(args[1])) + 1) > FOLD_LIMIT:
            return None
        try:
            value = getattr(text, func.attr)(*args)
        except (TypeError, ValueError, OverflowError, MemoryError):
            return None
        return value if isinstance(value, str) else None


class _Missing(dict):
    """Keyword arguments of a folded `.format()`; a field not given reads as an unknown name."""

    def __missing__(self, key: str) -> str:
        return UNKNOWN


def _joined(parts: list[str], sep: str = "") -> str | None:
    """The parts joined, or None when that would be longer than FOLD_LIMIT."""
    if sum(map(len, parts)) + len(sep) * len(parts) > FOLD_LIMIT:
        return None
    return sep.join(parts)


def _wide(template: str) -> bool:
    """A format template with a number larger than FOLD_LIMIT (a width that would build a huge string)."""
    return any(len(d) > 6 or int(d) > FOLD_LIMIT for d in re.findall(r"\d+", template))


def _dotted_name(node: ast.AST) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _allowed_decorator(node: ast.expr) -> bool:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id in DECORATORS or node.id in FUNCTOOLS_DECORATORS
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr in PROPERTY_PARTS or (node.value.id == "functools" and node.attr in FUNCTOOLS_DECORATORS)
    return False


def _format_fields(template: str, depth: int = 0) -> list[str]:
    fields: list[str] = []
    for _text, field, spec, _conv in string.Formatter().parse(template):
        if field is not None:
            fields.append(field)
        if spec and depth < 2:
            fields.extend(_format_fields(spec, depth + 1))
    return fields


def _from_import_refusal(mod: str, name: str) -> str | None:
    """Why `from M import X` is refused, or None: M must be allowed and X a plain attribute or allowed submodule."""
    if f"{mod}.{name}" in ALLOWED_IMPORTS:
        return None
    if mod not in ALLOWED_IMPORTS:
        return f"imports {mod!r}; allowed: {', '.join(ALLOWED_IMPORTS)}"
    if name.startswith("_") or (mod, name) in BLOCKED_MODULE_ATTRS:
        return f"imports {name!r} from {mod!r}, which is not allowed"
    try:
        value = getattr(importlib.import_module(mod), name, None)
    except ImportError:
        value = None
    if isinstance(value, types.ModuleType):
        return f"imports the module {mod}.{name}; allowed: {', '.join(ALLOWED_IMPORTS)}"
    return None
