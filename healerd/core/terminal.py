"""Text from outside made safe for a terminal or a log line.

A page, a site's error, a healer's summary or an exception message may carry control
characters: `ESC ] 0 ; title BEL` retitles the window, OSC 52 writes the clipboard,
`ESC [ 2 J` clears the screen of whoever tails the journal, a CSI introducer can also come
as the single C1 byte U+009B, and a bare CR rewrites the line it is on. `visible` makes every
C0 and C1 control character (and DEL), and every Unicode format character or line/paragraph
separator (U+202E, zero-width ones: categories Cf, Zl, Zp), visible as a Python-style escape
(`\\x1b`, `\\x07`, `\\x9b`, `\\u202e`), so an escape sequence is shown as text and never interpreted; `one_line=True`
(where a line is expected) first folds line breaks and tabs, and runs of whitespace, into
one space. `json_text` is a JSON encoding for a terminal: C0 characters are JSON-escaped by
`json.dumps` already; DEL, C1 and format characters, which it leaves raw when `ensure_ascii`
is off, are escaped as `\\u007f`, `\\u202e`... (the same JSON value).
"""

from __future__ import annotations

import functools
import json
import re

# typing only for the type checker: importing it costs healerctl's light path ~10 ms of CPU
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Unicode's format characters (category Cf: U+202E RIGHT-TO-LEFT OVERRIDE and the other bidi
# controls, zero-width spaces and joiners, the BOM, invisible tag characters) and its line and
# paragraph separators (Zl, Zp): printed, they reorder or hide what a person reads (`abc` shown
# where `cba` is), so they are shown as escapes like controls. tests/core/test_terminal.py checks
# this list against the running Python's unicodedata.
FORMAT_CHARS = ("\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e"
                "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
                "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f")
# C0 controls, DEL, C1 controls and the format characters: everything a terminal may act on
# (or a reader be misled by) instead of printing.
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{FORMAT_CHARS}]")
# What `one_line` folds into a space: line breaks (including the C1 NEL and Unicode's line and
# paragraph separators), tabs and form feeds, and the ordinary whitespace around them.
_BREAKS = re.compile(r"[\s\x1c-\x1f\x85\u2028\u2029]+")
_JSON_RAW = re.compile(f"[\x7f-\x9f{FORMAT_CHARS}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    named = _NAMED.get(char)
    if named:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _json_escape(match: re.Match[str]) -> str:
    """A character as a JSON escape (a surrogate pair beyond the BMP): the same JSON value."""
    code = ord(match.group(0))
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xd800 + (code >> 10):04x}\\u{0xdc00 + (code & 0x3ff):04x}"


def visible(text: Any, *, one_line: bool = True) -> str:
    """`text` (anything; str() of it) with no control character left raw.

    one_line=True: line breaks, tabs and whitespace runs become one space and the ends are
    trimmed. one_line=False: newlines and tabs stay (a multi-line text such as a diff); CR and
    every other control character is escaped."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable() and (not one_line or ("  " not in s and s[:1] != " " and s[-1:] != " ")):
        return s   # the common case, decided in C: no control, no line break, nothing to fold
    if one_line:
        s = _BREAKS.sub(" ", s).strip()
        return _CONTROL.sub(_escape, s) if _CONTROL.search(s) else s
    if not _CONTROL.search(s):
        return s
    return _CONTROL.sub(lambda m: m.group(0) if m.group(0) in "\n\t" else _escape(m), s)


def escaped(text: str) -> str:
    """Every control character of `text` escaped, line breaks and tabs included (one value, such as
    a header name, shown exactly)."""
    return _CONTROL.sub(_escape, text)


def json_text(obj: Any, *, indent: int | None = None, separators: tuple[str, str] | None = None,
              default: Any = None) -> str:
    """`json.dumps(obj, ensure_ascii=False, ...)` with DEL and C1 characters escaped too: the same
    JSON value, and no byte a terminal would act on (outside JSON's structure every character is
    ASCII, so each raw one is inside a string, where `\\u00XX` means the same character)."""
    text = None
    if indent is not None and separators is None and default is None:
        try:
            text = _indented(obj, " " * indent, 0)
        except (_NotPlain, RecursionError):
            text = None
    if text is None:
        text = json.dumps(obj, ensure_ascii=False, indent=indent, separators=separators, default=default)
    return _JSON_RAW.sub(_json_escape, text) if _JSON_RAW.search(text) else text


# `json.dumps(..., indent=N)` runs the json module's pure-Python encoder (its C encoder is used
# only without indent): `healerctl status --json` spent most of its CPU there, on 100,000 flat
# objects. `_indented` gives the very same text, each object or array whose members hold no
# container encoded by the C encoder in one call, with the newline and indent as its separator.

class _NotPlain(Exception):
    """A value `_indented` leaves to json.dumps (a key that is not a string, under containers)."""


_CONTAINERS = (dict, list, tuple)


@functools.lru_cache(maxsize=64)
def _flat_encoder(between: str) -> json.JSONEncoder:
    return json.JSONEncoder(ensure_ascii=False, separators=("," + between, ": "))


def _indented(obj: Any, step: str, depth: int) -> str:
    """json.dumps(obj, ensure_ascii=False, indent=len(step)) at nesting `depth`."""
    if isinstance(obj, dict):
        values: Any = obj.values()
    elif isinstance(obj, (list, tuple)):
        values = obj
    else:
        return _flat_encoder("").encode(obj)
    if not obj:
        return "{}" if isinstance(obj, dict) else "[]"
    between = "\n" + step * (depth + 1)
    end = "\n" + step * depth
    for v in values:
        if isinstance(v, _CONTAINERS):
            break
    else:   # no member is a container
        text = _flat_encoder(between).encode(obj)
        return f"{text[0]}{between}{text[1:-1]}{end}{text[-1]}"
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            raise _NotPlain
        parts = [_flat_encoder("").encode(k) + ": " + _indented(v, step, depth + 1) for k, v in obj.items()]
        return "{" + between + ("," + between).join(parts) + end + "}"
    return "[" + between + ("," + between).join(_indented(v, step, depth + 1) for v in obj) + end + "]"
