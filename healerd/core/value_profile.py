"""What a field's values look like on this source: a profile learned from its own good scrapes.

A selector can keep finding its node while the node stops holding the data: a price becomes
"Sign in to see your price (save 15%)" (and coerces to 15.0), a priority from {urgent, low}
becomes one long sentence in every record, every name reads the same "Anmelden, um diesen Wert
zu sehen". Counts and types pass all of those. The profile is a model of the raw text (before
coercion) each field gave in the scrapes that passed:

- the kinds of its values: number, money, date, code (one token with digits or signs), word
  (a few letter-only tokens), free text;
- the band of lengths and of letters per value, which values had digits, the scripts of the
  letters (Latin, Cyrillic, Han...);
- how distinct the values are across the records of one scrape, and, while they are few, the
  vocabulary they come from over time;
- the range of the numbers in them.

`check` says why a scrape's values leave the profile, or nothing: by shape only, in any
language (no phrase is a deciding signal). Ordinary change stays inside: a new product name, a
price that moves, a new word of the vocabulary's length. A profile judges once it has learned
from `MIN_SCRAPES` good scrapes and `MIN_VALUES` values; `learn` widens it with each scrape
that passed. Pure: the Validator keeps profiles per source and the Ledger stores them.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

PROFILE_VERSION = 1
MIN_SCRAPES = 3          # good scrapes learned before a profile judges
MIN_VALUES = 3           # ... and at least this many values
OUT_SHARE = 1 / 3        # the share of a scrape's values out of profile that makes the field leave it
VOCAB_MAX = 12           # distinct values a vocabulary holds at most (more: the field is not one)
VOCAB_MIN_REPEAT = 3     # values learned per vocabulary word before the field counts as a vocabulary
DISTINCT_FLOOR = 0.5     # the share of distinct values every good scrape kept for a collapse to judge
COLLAPSE_MIN = 4         # values in a scrape before "all the same" means anything
SHAPED_SHARE = 0.99      # share of learned values of the shaped kinds (number, money, date)
RANGE_FACTOR = 1000.0    # a number this many times outside the learned range leaves it

NUMBER, MONEY, DATE, CODE, WORD, TEXT = "number", "money", "date", "code", "word", "text"
KINDS = (NUMBER, MONEY, DATE, CODE, WORD, TEXT)
_SHAPED = (NUMBER, MONEY, DATE)

_NUMBER = re.compile(r"^[-+\u2212]?[\d.,'\s\u00a0\u202f]*\d[\d.,'\s\u00a0\u202f]*%?$")
_FIRST_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_DATE = re.compile(r"\b(\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}|\d{1,2}:\d{2})\b")
# a month's name and a day (any language: a run of letters), judged only where no decimal number is
_WORD_DATE = re.compile(r"\b([^\W\d_]{3,}\.?\s+\d{1,2}(?:,?\s+\d{4})?|\d{1,2}\.?\s+[^\W\d_]{3,}\.?(?:\s+\d{4})?)\b")
_DECIMAL = re.compile(r"\d[.,]\d")
_LETTER_RUN = re.compile(r"[^\W\d_]+")


class Shape(NamedTuple):
    """The shape of one raw value (a named tuple: made for every value of every scrape, it costs a
    quarter of a frozen dataclass to build)."""

    kind: str
    length: int
    letters: int
    digit: bool
    scripts: frozenset[str]
    number: float | None


@dataclass(frozen=True)
class Departure:
    """A field whose values left their profile: why, and whether the values read like a
    placeholder (one text in every record, or the value says nothing of the old kind: no
    digit where every value had one), rather than another node's data."""

    field: str
    reason: str
    placeholder: bool


def norm(value: Any) -> str | None:
    """The raw text of a value, whitespace collapsed; None when blank."""
    if value is None or isinstance(value, bool):
        return None
    text = " ".join(str(value).split())
    return text or None


def _script(ch: str) -> str:
    try:
        return unicodedata.name(ch).split(" ")[0]
    except ValueError:
        return "UNKNOWN"


_LATIN: frozenset[str] = frozenset(("LATIN",))
_NONE: frozenset[str] = frozenset()
_ASCII_DIGIT = re.compile(r"[0-9]")
_ASCII_LETTERS_OUT = str.maketrans("", "", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _counted(text: str) -> tuple[int, frozenset[str], bool, bool]:
    """Letters, their scripts, whether a digit and whether a currency sign: one step per character."""
    letters = 0
    scripts: set[str] = set()
    currency = False
    digit = False
    for ch in text:
        if ch.isalpha():
            letters += 1
            if ord(ch) > 0x24F:   # past Latin Extended-B: name the script
                scripts.add(_script(ch))
            else:
                scripts.add("LATIN")
        elif ch.isdigit():
            digit = True
        elif unicodedata.category(ch) == "Sc":
            currency = True
    return letters, frozenset(scripts), digit, currency


@lru_cache(maxsize=16384)
def shape(text: str) -> Shape:
    """The shape of a raw value (whitespace already collapsed)."""
    if text.isascii():
        # The common case, counted by C loops instead of one Python step per character: the only
        # ASCII letters are Latin, the only ASCII digits 0-9, the only ASCII currency sign "$".
        letters = len(text) - len(text.translate(_ASCII_LETTERS_OUT))
        scripts = _LATIN if letters else _NONE
        digit = _ASCII_DIGIT.search(text) is not None
        currency = "$" in text
    else:
        letters, scripts, digit, currency = _counted(text)
    m = _FIRST_NUMBER.search(text) if digit else None
    number = float(m.group(0).replace(",", "")) if m else None
    tokens = text.split(" ")
    runs = _LETTER_RUN.findall(text)
    if digit and not letters and (currency or _NUMBER.match(text)):
        kind = MONEY if currency else NUMBER
    elif digit and letters <= 12 and len(text) <= 40 and (
            _DATE.search(text) or (_WORD_DATE.search(text) and not _DECIMAL.search(text))):
        kind = DATE
    elif digit and letters <= 3 and len(runs) <= 1 and 2 <= len(tokens) <= 3:
        kind = MONEY   # "12.99 EUR", "kr 40", "15 pcs"
    elif len(tokens) == 1 and (digit or currency or letters < len(text)):
        kind = CODE
    elif not digit and len(tokens) <= 3 and len(text) <= 30:
        kind = WORD
    else:
        kind = TEXT
    return Shape(kind, len(text), letters, digit, scripts, number)


def new_profile() -> dict:
    return {"v": PROFILE_VERSION, "scrapes": 0, "values": 0, "kinds": {}, "len": [None, None], "letters": 0,
            "digits": 0, "with_letters": 0, "scripts": [], "vocab": [], "multi": 0, "distinct_min": None,
            "num": [None, None]}


def learn(profile: dict | None, values: Iterable[Any]) -> dict:
    """`profile` (None: a new one) widened by one good scrape's values of the field; a new dict."""
    p = dict(profile) if profile and profile.get("v") == PROFILE_VERSION else new_profile()
    texts = [t for t in map(norm, values) if t is not None]
    p["scrapes"] += 1
    if not texts:
        return p
    kinds = dict(p["kinds"])
    lo, hi = p["len"]
    scripts = set(p["scripts"])
    nlo, nhi = p["num"]
    # Each distinct text shaped once, counted as often as it came (a listing repeats many values).
    for t, n in Counter(texts).items():
        s = shape(t)
        kinds[s.kind] = kinds.get(s.kind, 0) + n
        lo = s.length if lo is None else min(lo, s.length)
        hi = s.length if hi is None else max(hi, s.length)
        p["letters"] = max(p["letters"], s.letters)
        p["digits"] += s.digit * n
        p["with_letters"] += (s.letters > 0) * n
        scripts |= s.scripts
        if s.number is not None:
            nlo = s.number if nlo is None else min(nlo, s.number)
            nhi = s.number if nhi is None else max(nhi, s.number)
    p["kinds"], p["len"], p["scripts"], p["num"] = kinds, [lo, hi], sorted(scripts), [nlo, nhi]
    p["values"] += len(texts)
    if p["vocab"] is not None:
        vocab = set(p["vocab"]) | set(texts)
        p["vocab"] = sorted(vocab) if len(vocab) <= VOCAB_MAX else None
    if len(texts) >= 2:
        ratio = len(set(texts)) / len(texts)
        p["multi"] += 1
        p["distinct_min"] = ratio if p["distinct_min"] is None else min(p["distinct_min"], ratio)
    return p


def ready(profile: dict | None) -> bool:
    """Whether the profile has learned enough to judge (MIN_SCRAPES scrapes, MIN_VALUES values)."""
    return profile is not None and profile.get("v") == PROFILE_VERSION \
        and profile["scrapes"] >= MIN_SCRAPES and profile["values"] >= MIN_VALUES


def _shaped(p: dict) -> bool:
    return sum(p["kinds"].get(k, 0) for k in _SHAPED) >= SHAPED_SHARE * p["values"]


def _vocabulary(p: dict) -> set[str] | None:
    vocab = p["vocab"]
    # values that repeat within a scrape (a priority, a status): a name list seen again is no vocabulary
    if vocab is None or p["values"] < VOCAB_MIN_REPEAT * len(vocab) or p["multi"] < 2 \
            or p["distinct_min"] is None or p["distinct_min"] > DISTINCT_FLOOR:
        return None
    return set(vocab)


def _kinds_said(p: dict) -> str:
    kinds = sorted(p["kinds"].items(), key=lambda kv: -kv[1])
    return "/".join(k for k, _ in kinds[:3]) or "none"


def why_out(p: dict, text: str) -> str | None:
    """Why one raw value is outside the profile `p` (which is ready), or None."""
    s = shape(text)
    lo, hi = p["len"]
    n = p["values"]
    # words where the values were numbers, money or dates ("Sale! $19.99" keeps its number: the
    # letters rule below judges it)
    if _shaped(p) and s.kind in (WORD, TEXT) and not s.digit and not p["kinds"].get(s.kind):
        return f"its raw text is {s.kind} where the field's values were {_kinds_said(p)}"
    if p["digits"] >= SHAPED_SHARE * n and not s.digit:
        return "its raw text has no digit where every value had one"
    if s.letters > 2 * p["letters"] + 6:
        return f"{s.letters} letters where the field's values had at most {p['letters']}"
    if hi is not None and s.length > 2 * hi + 10:
        return f"{s.length} characters where the field's values had at most {hi}"
    new_scripts = s.scripts - set(p["scripts"])
    if new_scripts and p["with_letters"] >= 10:
        return f"letters of the {'/'.join(sorted(new_scripts)).lower()} script, never in the field's values"
    vocab = _vocabulary(p)
    if vocab is not None and text not in vocab and s.letters > 2 * p["letters"] and hi is not None \
            and s.length > 2 * hi:
        return f"not one of the field's {len(vocab)} values and twice as long as any of them"
    nlo, nhi = p["num"]
    if s.number is not None and nlo is not None and nhi is not None and _shaped(p) and (
            (nhi > 0 and s.number > nhi * RANGE_FACTOR) or (nlo > 0 and 0 < s.number < nlo / RANGE_FACTOR)):
        return f"the number {s.number:g} is far outside the field's range {nlo:g}..{nhi:g}"
    return None


def check(field: str, profile: dict | None, values: Iterable[Any]) -> Departure | None:
    """Why a scrape's values of `field` leave their profile, or None (also when the profile has
    not learned enough, or the scrape gives no value). Judged on the raw texts."""
    if not ready(profile):
        return None
    assert profile is not None
    texts = [t for t in map(norm, values) if t is not None]
    if not texts:
        return None
    out = [(t, why) for t in texts if (why := why_out(profile, t)) is not None]
    same = len(set(texts)) == 1
    if out and len(out) >= max(1, math.ceil(len(texts) * OUT_SHARE)):
        sample, why = out[0]
        where = f" ({len(out)} of {len(texts)} records)" if len(texts) > 1 else ""
        texts_out = {t for t, _ in out}
        placeholder = (len(texts_out) == 1 and len(out) >= 2) or \
            (not shape(sample).digit and profile["digits"] >= SHAPED_SHARE * profile["values"])
        return Departure(field, f"{field} left its value profile: {_quote(sample)} — {why}{where}", placeholder)
    vocab = _vocabulary(profile)
    if same and len(texts) >= COLLAPSE_MIN and vocab is not None and texts[0] not in vocab:
        return Departure(field, f"{field} left its value profile: all {len(texts)} records read "
                                f"{_quote(texts[0])}, none of the field's {len(vocab)} values", True)
    if same and len(texts) >= COLLAPSE_MIN and profile["multi"] >= 2 \
            and (profile["distinct_min"] or 0) >= DISTINCT_FLOOR:
        return Departure(field, f"{field} left its value profile: all {len(texts)} records read "
                                f"{_quote(texts[0])}, where every good scrape's values were distinct", True)
    return None


def _quote(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def field_texts(data: Any, raw: Any, name: str) -> list[Any]:
    """The raw texts of field `name` over an extraction's records: the raw string where the
    extraction kept it (selector blueprints), else the value itself (code parsers)."""
    if isinstance(data, dict):
        data, raw = [data], [raw]
    if not isinstance(data, list):
        return []
    raws = raw if isinstance(raw, list) and len(raw) == len(data) else [None] * len(data)
    out = []
    for rec, r in zip(data, raws, strict=True):
        if not isinstance(rec, dict):
            continue
        out.append(r[name] if isinstance(r, dict) and name in r else rec.get(name))
    return out
