"""Text from outside made safe for a terminal or a log line.

A page, a site's error, a healer's summary or an exception message may carry control
characters: `ESC ] 0 ; title BEL` retitles the window, OSC 52 writes the clipboard,
`ESC [ 2 J` clears the screen of whoever tails the journal, a CSI introducer can also come
as the single C1 byte U+009B, and a bare CR rewrites the line it is on. `visible` makes every
C0 and C1 control character (and DEL) visible as a Python-style escape (`\\x1b`, `\\x07`,
`\\x9b`), so an escape sequence is shown as text and never interpreted; `one_line=True`
(where a line is expected) first folds line breaks and tabs, and runs of whitespace, into
one space. `json_text` is a JSON encoding for a terminal: C0 characters are JSON-escaped by
`json.dumps` already; DEL and C1 characters, which it leaves raw when `ensure_ascii` is off,
are escaped as `\\u007f`..`\\u009f` (the same JSON value).
"""

from __future__ import annotations

import functools
import json
import re

# typing only for the type checker: importing it costs healerctl's light path ~10 ms of CPU
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# C0 controls, DEL and C1 controls: everything a terminal may act on instead of printing.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# What `one_line` folds into a space: line breaks (including the C1 NEL and Unicode's line and
# paragraph separators), tabs and form feeds, and the ordinary whitespace around them.
_BREAKS = re.compile(r"[\s\x1c-\x1f\x85\u2028\u2029]+")
_JSON_RAW = re.compile(r"[\x7f-\x9f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    return _NAMED.get(char) or f"\\x{ord(char):02x}"


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
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text) if _JSON_RAW.search(text) else text


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
