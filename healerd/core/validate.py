"""Is this extraction the data we expect? (the Doctor's validator)

Checks, in order of the error class they give (BLOCKED > PARSE_ERROR > SCHEMA_MISMATCH):

- BLOCKED: the page is a bot challenge or a login wall (`classify.detect_block`).
  A login-form guess alone does not block a page whose extraction is otherwise clean.
- PARSE_ERROR: an items page with no items; a required field that matched nothing
  (single record) or is null in every item; a record set with no data at all.
- SCHEMA_MISMATCH: a required field null in more than `NULL_TOLERANCE` of the items;
  an int/float field whose text matched but holds no number; an item count outside
  the band learned from recent good scrapes (`item_band`); a field whose values were
  numbers, URLs or dates in the last good records and are now all plain words.

Optional (required = false) fields never fail. Works on selector extractions and on
code-parser output (where `raw` is the data stringified, or the data itself).
"""

from __future__ import annotations

import math
import re
import statistics
import urllib.parse
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

from healerd.core import errors
from healerd.core.blueprint import Blueprint
from healerd.core.classify import block_strength
from healerd.core.extract import Extraction, first_number

NULL_TOLERANCE = 0.10      # a required field may be null in at most this share of items
BAND_LOW = 0.10            # a tenth of the usual item count, or fewer, fails
BAND_HIGH = 10.0           # more than ten times the usual fails
SHAPE_MAJORITY = 0.8       # share of last-good values that must share a shape to judge drift
EXPECTED_MIN_ITEMS = 5     # a clean list of at least this many records is the page, not a bot wall
_PRECEDENCE = (errors.BLOCKED, errors.PARSE_ERROR, errors.SCHEMA_MISMATCH)

_URL_SHAPE = r"(?:https?://|//|/|\./|\.\./)\S*|[\w.-]+\.(?:html?|php|aspx?|jsp)(?:\?\S*)?"
_URL = re.compile(rf"^(?:{_URL_SHAPE})$", re.I)
# _URL on each line of values joined by newlines, with the whitespace around a value (which
# value_shape drops) allowed; whitespace inside is no URL either way.
_URL_LINE = re.compile(rf"^[^\S\n]*(?:{_URL_SHAPE})[^\S\n]*$", re.I | re.M)
_NUMBERISH = re.compile(r"^[^\w]{0,3}[-+]?\d[\d,.\s]*(%|[a-z]{1,6}\.?)?$", re.I)
# The lookahead changes no match (each alternative starts with a digit or a month's initial)
# but lets the engine leave most positions at once: searches cost ~40 % less.
_DATE = re.compile(
    r"\b(?=[\dadfjmnos])(\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}|\d{1,2}:\d{2}"
    r"|(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2}"
    r"|\d{1,2}\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*)", re.I)
_DIGIT = re.compile(r"\d")     # every _DATE alternative holds one: a cheaper search first


@dataclass
class ValidationResult:
    passed: bool
    error_type: str | None      # None when passed; PARSE_ERROR, SCHEMA_MISMATCH or BLOCKED
    errors: list[str]           # each names the field: "Empty field: price", ...
    score: float                # 1 - errors / max(fields, 1), in [0, 1]
    critical: bool              # nothing usable: blocked, no items, a required field empty everywhere
    item_count: int | None
    failed_fields: list[str]
    warnings: list[str] = field(default_factory=list)   # tolerated problems (a few null items)
    band: tuple[int, int] | None = None                 # the item-count band applied, if any

    def to_dict(self) -> dict:
        d = asdict(self)
        d["band"] = list(self.band) if self.band else None
        return d

    def report(self) -> str:
        """A human-readable validation report."""
        lines = [f"validation: {'PASSED' if self.passed else 'FAILED'}"
                 + (f" ({self.error_type})" if self.error_type else "")
                 + f", score {self.score:.2f}" + (", critical" if self.critical else "")]
        if self.item_count is not None:
            band = f" (expected {self.band[0]}-{self.band[1]})" if self.band else ""
            lines.append(f"items: {self.item_count}{band}")
        if self.failed_fields:
            lines.append("failed fields: " + ", ".join(self.failed_fields))
        for e in self.errors:
            lines.append(f"  error: {e}")
        for w in self.warnings:
            lines.append(f"  warning: {w}")
        return "\n".join(lines)


def item_band(recent_counts: list[int] | None) -> tuple[int, int] | None:
    """(low, high) acceptable item counts from recent good scrapes' counts; None without history.

    Centred on the median of the positive counts: a tenth of it or fewer, or more than ten
    times it, fails (low is the smallest count above a tenth).
    """
    median = _usual(recent_counts)
    if median is None:
        return None
    return max(1, math.floor(median * BAND_LOW) + 1), max(1, math.floor(median * BAND_HIGH))


def _usual(recent_counts: list[int] | None) -> float | None:
    """The median of the positive recent item counts, or None."""
    counts = [c for c in (recent_counts or []) if isinstance(c, (int, float)) and not isinstance(c, bool) and c > 0]
    return statistics.median(counts) if counts else None


def value_shape(v: Any) -> str:
    """A coarse class of a value: empty, number, url, date or text."""
    if v is None or isinstance(v, bool):
        return "empty" if v is None else "text"
    if isinstance(v, (int, float)):
        return "number"
    if type(v) is str and len(v) <= _SHAPE_CACHED_LEN:
        return _cached_text_shape(v)
    return _text_shape(str(v))


def _text_shape(text: str) -> str:
    s = " ".join(text.split())
    if not s:
        return "empty"
    if _URL.match(s):
        return "url"
    if _NUMBERISH.match(s):
        return "number"
    if len(s) <= 40 and _DIGIT.search(s) and _DATE.search(s):
        return "date"
    return "text"


# Values recur (a seller, a category, a date, the same titles scrape after scrape) and the
# three regexes cost ~1 us a value: short strings' shapes are remembered.
_SHAPE_CACHED_LEN = 200
_cached_text_shape = lru_cache(maxsize=8192)(_text_shape)


def _plain_words(v: Any) -> bool:
    """Text with no digits that is not a URL: what a number/URL/date field turns into when it drifts."""
    return value_shape(v) == "text" and not any(ch.isdigit() for ch in str(v))


# Attributes whose value is a URL reference (HTML's href, src and action).
URL_ATTRS = frozenset({"href", "src", "action"})
_FILE_NAME = re.compile(r"\.[a-z][a-z0-9]{0,4}$", re.I)   # a last path segment like x.html, logo.png


def is_url_reference(v: Any) -> bool:
    """Whether `v`, read from a URL attribute, shows the structure of a link (RFC 3986 / WHATWG
    URL parsing, urllib.parse): a scheme, a host, a path with a "/" in it (absolute, root-relative
    or relative: "/a", "posts/x.html", "drought/", "../up") or a file name ("x.html"). A bare
    word ("Profile", "about") or a fragment of the page itself ("#top") shows none: it cannot be
    told from text read into the attribute, so it is judged as text."""
    if type(v) is not str:
        return False
    s = v.strip()
    if not s or any(ch.isspace() for ch in s):
        return False
    try:
        parts = urllib.parse.urlsplit(s)
    except ValueError:   # e.g. an unbalanced "[" in a host
        return False
    return bool((parts.scheme and (parts.netloc or parts.path)) or parts.netloc or "/" in parts.path
                or _FILE_NAME.search(parts.path))


def _is_blank(v: Any) -> bool:
    return v is None or (isinstance(v, str) and not v.strip())


def _is_number(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, (int, float)):
        return not (isinstance(v, float) and math.isnan(v))
    return isinstance(v, str) and first_number(v) is not None


def _records(data: Any) -> tuple[list, bool]:
    """(records, is_list) of an extraction's data."""
    if isinstance(data, list):
        return data, True
    if isinstance(data, dict):
        return [data], False
    return [], False


def _raw_for(raw: Any, index: int, is_list: bool, name: str, value: Any) -> Any:
    """The raw text behind a value; the value itself when raw is missing or shaped differently."""
    rec = None
    if is_list and isinstance(raw, list) and index < len(raw):
        rec = raw[index]
    elif not is_list and isinstance(raw, dict):
        rec = raw
    if isinstance(rec, dict) and name in rec:
        return rec[name]
    return value


def _field_values(records: Any, name: str) -> list:
    recs, _ = _records(records)
    return [r.get(name) for r in recs if isinstance(r, dict)]


def _dominant_shape(values: list) -> str | None:
    return _dominant(_column_shapes(values)[1])


def _dominant(shapes: list[str]) -> str | None:
    """The shape held by at least SHAPE_MAJORITY of `shapes` (the first in name order on a tie
    for the most), or None."""
    if not shapes:
        return None
    if shapes.count(shapes[0]) == len(shapes):   # the usual case, counted at C speed
        return shapes[0]
    counts: dict[str, int] = {}
    for shape in shapes:
        counts[shape] = counts.get(shape, 0) + 1
    best = max(sorted(counts), key=counts.__getitem__)
    return best if counts[best] / len(shapes) >= SHAPE_MAJORITY else None


def last_good_sample(last_good: Any) -> list[dict] | Any:
    """A stand-in of at most two small records for `last_good` that gives `validate` the same
    verdicts (it only looks at whether a field's values were mostly numbers, URLs or dates
    there): per field, the first value of that dominant shape; else one value of another shape,
    or two of different shapes, so that no such shape dominates the stand-in either. What the
    Validator keeps per source instead of the whole last good record set."""
    if not last_good:
        return last_good
    recs = [r for r in _records(last_good)[0] if isinstance(r, dict)]
    names = list(dict.fromkeys(k for r in recs for k in r))
    out: list[dict] = [{}, {}]
    for name in names:
        for i, value in enumerate(_column_sample([r.get(name) for r in recs])):
            out[i][name] = value
    return out


_JUDGED_SHAPES = ("number", "url", "date")   # the shapes whose drift to plain words validate reports


def _column_sample(column: list) -> tuple:
    """The stand-in values of one field (see last_good_sample): () when all are blank.

    The shapes are taken value by value and the scan stops once the outcome is certain: a
    judged shape held by SHAPE_MAJORITY of the values, or none that can still reach it. A
    column of titles is decided after about a fifth of its values (each new text costs three
    regular expressions), not after all of them."""
    values, shape_of = _column_values(column)
    n = len(values)
    if not n:
        return ()
    if shape_of is _number_shape:
        return (values[0],)
    if shape_of(values[0]) == "url" and _url_count(values) / n >= SHAPE_MAJORITY:
        return (values[0],)   # a column of links: what the scan below finds, after 80 % of it
    counts = dict.fromkeys(_JUDGED_SHAPES, 0)
    first_of: dict[str, Any] = {}
    most = 0
    for seen, value in enumerate(values, 1):
        shape = shape_of(value)
        first_of.setdefault(shape, value)
        if shape in counts:
            count = counts[shape] = counts[shape] + 1
            if count / n >= SHAPE_MAJORITY:
                return (first_of[shape],)
            most = max(most, count)
        if (most + n - seen) / n < SHAPE_MAJORITY:
            break   # no judged shape can reach the majority with the values left
    first = values[0]
    first_shape = next(iter(first_of))   # the shape the scan took of the first value
    if first_shape not in counts:
        return (first,)
    # The first value has a judged shape that does not dominate: a value of another shape was seen.
    return (first, next(v for s, v in first_of.items() if s != first_shape))


def _url_count(values: list) -> int:
    """How many of `values` have the shape "url", counted by one regex search over them all (a
    column of links needs 80 % of its values looked at, one at a time, to be decided). 0
    unless every value is a str without a newline."""
    if any(type(v) is not str for v in values):
        return 0
    joined = "\n".join(values)
    if joined.count("\n") != len(values) - 1:
        return 0
    return len(_URL_LINE.findall(joined))


def _column_values(column: list) -> tuple[list, Callable[[Any], str]]:
    """(the values of `column` that are not blank, the function that gives one's shape). A
    field's values are mostly all numbers or all short strings: those take C-speed paths (one
    type check for the column; the remembered text shapes) to what `value_shape` gives."""
    kinds = set(map(type, column))
    if kinds <= _NUMBER_TYPES:
        return column, _number_shape
    if kinds <= _TEXT_TYPES:
        values = [v for v in column if v and not v.isspace()]   # what _is_blank leaves of str or None
        if values and max(map(len, values)) <= _SHAPE_CACHED_LEN:
            return values, _cached_text_shape
        return values, value_shape
    return [v for v in column if not _is_blank(v)], value_shape


def _number_shape(value: Any) -> str:
    """value_shape of an int or a float."""
    return "number"


_NUMBER_TYPES = frozenset({int, float})
_TEXT_TYPES = frozenset({str, type(None)})


def _column_shapes(column: list) -> tuple[list, list[str]]:
    """(the values of `column` that are not blank, their shapes)."""
    values, shape_of = _column_values(column)
    if shape_of is _number_shape:
        return values, ["number"] * len(values)
    return values, list(map(shape_of, values))


def _shape_word(shape: str) -> str:
    return {"number": "numeric", "url": "URLs", "date": "dates"}.get(shape, shape)


class _Problems:
    def __init__(self):
        self.items: list[tuple[str, str, str | None]] = []   # (error class, message, field)
        self.warnings: list[str] = []
        self.critical = False

    def add(self, kind: str, message: str, name: str | None = None, critical: bool = False) -> None:
        self.items.append((kind, message, name))
        self.critical = self.critical or critical

    def worst(self) -> str | None:
        kinds = {k for k, _, _ in self.items}
        for k in _PRECEDENCE:
            if k in kinds:
                return k
        return None


def field_counts(name: str, spec, records: list, raw: Any, is_list: bool) -> tuple[int, int, int, int, str | None]:
    """(missing, empty, not a number, bad type, a sample of the first bad value) of field `name`
    over `records`: what the field check judges it by."""
    missing = empty = notnum = badtype = 0
    sample = None
    numeric = spec.type in ("int", "float")
    for i, rec in enumerate(records):
        if not isinstance(rec, dict) or name not in rec:
            missing += 1
            continue
        value = rec[name]
        kind = type(value)
        # The common exact types first, each with the verdict the general branch gives it.
        # A value that is a number where one is wanted (or any value where none is) is counted
        # here and the loop goes on; one that should be a number and is not falls through, to
        # be told apart from an empty one by its raw text.
        if kind is str:
            if not numeric or first_number(value) is not None:
                if not value.strip():
                    empty += 1
                continue
        elif kind is int or kind is float:
            if not numeric or value == value:   # a NaN is not a number
                continue
        elif value is not None and not isinstance(value, (str, int, float, bool)):
            badtype += 1
            sample = sample or type(value).__name__
            continue
        elif not numeric or _is_number(value):
            if _is_blank(value):
                empty += 1
            continue
        raw_value = _raw_for(raw, i, is_list, name, value)
        raw_text = raw_value if isinstance(raw_value, str) else (None if raw_value is None else str(raw_value))
        if raw_text is not None and raw_text.strip():
            notnum += 1
            sample = sample if sample is not None else raw_text.strip()[:40]
        else:
            empty += 1
    return missing, empty, notnum, badtype, sample


def _check_field(p: _Problems, name: str, spec, records: list, raw: Any, is_list: bool) -> None:
    n = len(records)
    missing, empty, notnum, badtype, sample = field_counts(name, spec, records, raw, is_list)
    where = f" ({{}} of {n} items)" if is_list else ""
    if missing == n:
        p.add(errors.PARSE_ERROR, f"Missing field: {name}", name, critical=True)
        return
    if missing + empty == n:
        p.add(errors.PARSE_ERROR, f"Empty field: {name}" + (f" (null in all {n} items)" if is_list else ""),
              name, critical=True)
        return
    if badtype:
        p.add(errors.SCHEMA_MISMATCH, f"Invalid type for {name}: {sample}" + where.format(badtype), name)
        return
    if notnum and notnum + missing + empty == n:
        p.add(errors.SCHEMA_MISMATCH, f"value-shape drift: {name} was numeric, now {sample!r}"
              + where.format(notnum), name)
        return
    bad = missing + empty + notnum
    if bad:
        detail = []
        if missing + empty:
            detail.append(f"{missing + empty} of {n} items null")
        if notnum:
            detail.append(f"{notnum} of {n} items not a number, e.g. {sample!r}")
        detail_text = "; ".join(detail)
        if bad / n <= NULL_TOLERANCE:
            p.warnings.append(f"{name}: {detail_text} (tolerated)")
        else:
            kind = "Empty field" if not notnum else "Bad values in field"
            p.add(errors.SCHEMA_MISMATCH, f"{kind}: {name} ({detail_text})", name)


def _check_shape(p: _Problems, name: str, spec, records: list, last_good: Any) -> None:
    before = _dominant_shape(_field_values(last_good, name))
    if before not in _JUDGED_SHAPES:
        return
    now = [v for v in (r.get(name) for r in records if isinstance(r, dict)) if not _is_blank(v)]
    # A value read from href/src/action is still a link whatever its form ("x.html" becoming the
    # pretty "x/"); a bare word there is judged as text, like any text field's value.
    links = before == "url" and (spec.attr or "").lower() in URL_ATTRS
    if now and all(_plain_words(v) and not (links and is_url_reference(v)) for v in now):
        p.add(errors.SCHEMA_MISMATCH,
              f"value-shape drift: {name} was {_shape_word(before)}, now {str(now[0])[:40]!r}", name)


def gave_expected_records(p: _Problems, records: list, is_list: bool, band: tuple[int, int] | None,
                          status: int) -> bool:
    """True when an items page passed every other check with a plausible list of records:
    at least EXPECTED_MIN_ITEMS (and the learned band's low end), on a 2xx status."""
    if p.items or not is_list or not 200 <= status < 300:
        return False
    return len(records) >= max(EXPECTED_MIN_ITEMS, band[0] if band else 0)


def _js_hint(blueprint: Blueprint, html: str | Callable[[], str | None] | None) -> str:
    """"; <hint>" when an HTTP-fetched page that gave nothing looks drawn by JavaScript, else ""."""
    if blueprint.fetch != "http" or html is None:
        return ""
    from healerd.core.js_page import HINT, script_rendered

    return f"; {HINT}" if script_rendered(html() if callable(html) else html) else ""


def validate(extraction: Extraction, blueprint: Blueprint, *, recent_counts: list[int] | None = None,
             last_good: dict | list | None = None, html: str | Callable[[], str | None] | None = None,
             status: int = 200, headers: dict | None = None) -> ValidationResult:
    """Judge one extraction against its blueprint and the source's recent history. `html` is
    the page's text, or a function that gives it: called only when the page must be scanned."""
    p = _Problems()
    records, is_list = _records(extraction.data)
    item_count = len(records) if is_list else extraction.item_count
    band = item_band(recent_counts) if is_list else None
    fields = blueprint.fields

    if extraction.data is None or not isinstance(extraction.data, (list, dict)):
        p.add(errors.PARSE_ERROR, f"No data returned (the parser gave {type(extraction.data).__name__})",
              critical=True)
    elif is_list and not records:
        what = f"the items selector {blueprint.items!r} matched nothing" if blueprint.items else "an empty list"
        p.add(errors.PARSE_ERROR, f"No items: {what}{_js_hint(blueprint, html)}", critical=True)
    else:
        for name, spec in fields.items():
            if spec.required:
                _check_field(p, name, spec, records, extraction.raw, is_list)
        if not any(s.required for s in fields.values()):
            if all(_is_blank(r.get(name)) if isinstance(r, dict) else True for r in records for name in fields):
                p.add(errors.PARSE_ERROR, "No data returned: every field is empty", critical=True)
        if is_list and band is not None:
            n, (low, high) = len(records), band
            usual = _usual(recent_counts)
            if n < low:
                p.add(errors.SCHEMA_MISMATCH, f"Item count {n} is far below the usual {usual:g} "
                                              f"(expected {low}-{high})")
            elif n > high:
                p.add(errors.SCHEMA_MISMATCH, f"Item count {n} is far above the usual {usual:g} "
                                              f"(expected {low}-{high})")
        if last_good:
            failed = {name for _, _, name in p.items}
            for name, spec in fields.items():
                if spec.required and name not in failed:
                    _check_shape(p, name, spec, records, last_good)

    if html is not None or status in (401, 407):
        # The page scan costs about as much as the extraction; a page that gave the records
        # expected of it is not a challenge or a login wall, so only the status and headers
        # are looked at there (the scan stays for pages that fail, look empty, or are single records).
        page = "" if gave_expected_records(p, records, is_list, band, status) else \
            ((html() if callable(html) else html) or "")
        reason, strong = block_strength(page, status, headers)
        if reason and (strong or p.items):
            # The error type already says BLOCKED: the message is the reason alone ("BLOCKED: login wall").
            p.items.insert(0, (errors.BLOCKED, reason, None))
            p.critical = True

    kind = p.worst()
    if (kind == errors.PARSE_ERROR and p.critical and not is_list and not any(
            not _is_blank(extraction.raw.get(n) if isinstance(extraction.raw, dict) else None) for n in fields)):
        # A single record with nothing read at all: on a page drawn by JavaScript, say so once.
        hint = _js_hint(blueprint, html)
        if hint and p.items and hint not in p.items[0][1]:
            first = p.items[0]
            p.items[0] = (first[0], first[1] + hint, first[2])
    messages = [m for _, m, _ in p.items]
    failed_fields = []
    for _, _, name in p.items:
        if name and name not in failed_fields:
            failed_fields.append(name)
    score = 0.0 if kind == errors.BLOCKED else 1.0 - len(messages) / max(len(fields), 1)
    return ValidationResult(
        passed=kind is None,
        error_type=kind,
        errors=messages,
        score=min(1.0, max(0.0, score)),
        critical=p.critical,
        item_count=item_count,
        failed_fields=failed_fields,
        warnings=p.warnings,
        band=band,
    )
