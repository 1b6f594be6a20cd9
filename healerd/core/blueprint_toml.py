"""A blueprint written back as TOML, for the text a person copies into a file (the deferred report).

The blueprint format's shape is small (a few top-level keys, one table per field, strings,
numbers, booleans and lists of strings), so this writes it directly; a TOML string is written
as a JSON string, which is a valid TOML basic string. Headers and cookies are left out: they
may hold secrets, and the report is shown and alerted; the line that says so tells the person
to keep theirs.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from healerd.core.blueprint import Blueprint

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE_KEY.match(k) else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return json.dumps(str(v))   # ASCII: \uXXXX escapes, so no control or bidi character reaches a terminal


def toml_lines(d: dict) -> tuple[list[str], list[str]]:
    """A blueprint dict as TOML: its top-level `key = value` lines, and then its tables' lines
    (one table per field, then the other dict values: headers, cookies)."""
    top: list[str] = []
    tables: list[tuple[str, dict]] = []
    for k, v in d.items():
        if k == "fields" and isinstance(v, dict):
            tables.extend((f"fields.{_key(name)}", spec) for name, spec in v.items())
        elif isinstance(v, dict):
            tables.append((_key(k), v))
        else:
            top.append(f"{_key(k)} = {_value(v)}")
    rest: list[str] = []
    for name, table in tables:
        rest += ["", f"[{name}]", *(f"{_key(k)} = {_value(v)}" for k, v in table.items())]
    return top, rest


def to_toml(bp: Blueprint) -> str:
    """`bp` as a TOML blueprint file, without its headers and cookies (see the module's note)."""
    top, tables = toml_lines({k: v for k, v in bp.to_dict().items() if k not in ("headers", "cookies")})
    if bp.headers or bp.cookies:
        top.append("# keep the [headers] / [cookies] of your own blueprint file (not shown: they may be secret)")
    return "\n".join(top + tables) + "\n"


def with_optional(bp: Blueprint, names: list[str]) -> Blueprint:
    """`bp` with the fields `names` made optional (required = false)."""
    fields = {n: (replace(f, required=False) if n in names else f)
              for n, f in bp.fields.items()}
    return bp.with_fields(fields)
