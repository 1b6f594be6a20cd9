"""Reading the docs: a section under its heading, the rows of its tables, a default cell as a TOML value,
a documented output line as a pattern."""

from __future__ import annotations

import re
import tomllib

from healerd import __version__


def section(text: str, heading: str) -> str:
    """The body under the heading `heading` (e.g. "### healerctl add"), up to the next heading
    of the same or a higher level (lines inside fenced blocks are not headings). Fails when the
    heading is missing."""
    level = len(heading) - len(heading.lstrip("#"))
    body: list[str] | None = None
    in_fence = False
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence:
            m = re.match(r"^(#+) ", line)
            if body is None and line.rstrip() == heading:
                body = []
                continue
            if body is not None and m and len(m.group(1)) <= level:
                break
        if body is not None:
            body.append(line)
    assert body is not None, f"docs/REFERENCE.md has no heading {heading!r}"
    return "".join(body)


def table_rows(body: str) -> list[list[str]]:
    """Cells of the markdown table rows in `body` (header and separator rows included)."""
    out = []
    for line in body.splitlines():
        line = line.strip()
        if line.startswith("|") and line.endswith("|"):
            out.append([c.strip() for c in line[1:-1].split("|")])
    return out


def cell_value(cell: str) -> object:
    """A default column cell (`8`, `"INFO"`, `1s`, `["a"]`, none) as a TOML value."""
    text = cell.strip().strip("`").replace("<version>", __version__)
    if text in ("none", "—", "-"):
        return None
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text   # a bare duration (1s) or string


def pattern(doc_line: str, name: str) -> re.Pattern:
    """A documented output line as a regex: `…` and `(...)` stand for any text, numbers for any
    number, NAME for the source's name, http://127.0.0.1:8080 for any local port; the rest is literal."""
    out = []
    for piece in re.split(r"(…|\(\.\.\.\)|\d+(?:\.\d+)?|NAME|http://127\.0\.0\.1:8080)", doc_line):
        if piece in ("…", "(...)"):
            out.append(r".+?" if piece == "…" else r"\(.+\)")
        elif piece == "NAME":
            out.append(re.escape(name))
        elif piece == "http://127.0.0.1:8080":
            out.append(r"http://127\.0\.0\.1:\d+")
        elif re.fullmatch(r"\d+(?:\.\d+)?", piece or "-"):
            out.append(r"\d+(?:\.\d+)?")
        else:
            out.append(re.escape(piece))
    return re.compile("^" + "".join(out) + "$")
