"""What a code parser may use: modules, built-ins, attributes; and the one error it is refused with.

Both layers read these lists: the static check (`static_check.py`) refuses code that names
anything else, and the confined child (`child.py`) hands the parser only these built-ins and
stripped-down copies of these modules, so code that slipped past the check finds nothing more.
"""

from __future__ import annotations

from healerd.core.errors import HealerdError

ALLOWED_IMPORTS = (
    "re", "json", "datetime", "html", "math", "string", "itertools", "collections", "functools",
    "decimal", "unicodedata", "urllib.parse", "selectolax", "selectolax.lexbor",
)
# The built-ins the child gives a parser (the child adds guarded getattr, hasattr, setattr and
# delattr, which take a literal attribute name only).
SAFE_BUILTINS = (
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "classmethod", "dict",
    "dir", "divmod", "enumerate", "filter", "float", "format", "frozenset", "hash", "hex", "id", "int",
    "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next", "object", "oct", "ord", "pow",
    "print", "property", "range", "repr", "reversed", "round", "set", "slice", "sorted", "staticmethod", "str",
    "sum", "super", "tuple", "type", "zip", "None", "True", "False", "NotImplemented", "Ellipsis",
    "ArithmeticError", "AssertionError", "AttributeError", "Exception", "IndexError", "KeyError", "LookupError",
    "NameError", "NotImplementedError", "OverflowError", "RuntimeError", "StopIteration", "TypeError",
    "UnicodeDecodeError", "UnicodeEncodeError", "UnicodeError", "ValueError", "ZeroDivisionError",
)
# Attribute names a parser may only pass, as a string literal, to these built-ins.
ATTRIBUTE_BUILTINS = ("getattr", "hasattr", "setattr", "delattr")
# Attributes that lead from ordinary objects to frames, code and other globals.
FORBIDDEN_ATTRS = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code", "ag_await",
    "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "tb_frame", "tb_next", "func_globals",
})
# The prefixes of every attribute of frames, tracebacks, code objects, generators and coroutines.
FORBIDDEN_ATTR_PREFIXES = ("gi_", "cr_", "ag_", "f_", "tb_", "co_", "func_")
# str.format / format_map resolve "{0.attr}" and "{0[key]}" without any attribute node in the code.
FORMAT_METHODS = frozenset({"format", "format_map"})
# Public attributes of allowed modules that still lead somewhere they should not.
BLOCKED_MODULE_ATTRS = (("string", "Formatter"),)
MAX_SOURCE_CHARS = 200_000


class ParserRejected(HealerdError):
    """A parser that may not run, or that failed when run; `reason` is one clear line."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


def forbidden_attribute(name: str) -> bool:
    """True for an attribute a parser may never name: private or dunder, or of frames, code and generators."""
    return name.startswith("_") or name in FORBIDDEN_ATTRS or name.startswith(FORBIDDEN_ATTR_PREFIXES)
