"""Blueprints: what to scrape from a page, parsed and checked.

A blueprint is TOML or the same structure in JSON (docs/REFERENCE.md, "Blueprints"):

    url = "http://127.0.0.1:8080/stats"   # optional when given on the command line
    every = "15m"
    items = "table.stats tr.player"       # optional: one record per matching element
    [fields.name]
    css = "td.name"
    type = "str"                          # str | int | float
    attr = "href"                         # optional
    required = true                       # default
    profile = true                        # default; false: a free-form field, not judged by its value profile

A field's `css` (and `items`) may also be a list of selectors, tried in order: the
first that matches wins. One parser then reads two layouts a site serves at once.

Optional extras: `[headers]` and `[cookies]` (sent with every request; treated as
secrets), `fetch = "browser"` (render the page in a real browser; default "http") with
`wait_for = "<css>"` (browser only: wait until the selector matches), and `parser` (Python source defining `parse(html) -> dict | list[dict]`,
run in a sandbox; then a field's `css` is optional and `fields` is the schema), and
`key = "name"` (a field, or a list of fields: what identifies a record across scrapes, for
change sets and feeds).

Every problem raises BlueprintError naming the key it is about.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from functools import cached_property, lru_cache
from typing import Any
from urllib.parse import urlsplit

# tomli is the parser Python's tomllib is a copy of, the same rules and messages; its wheels are
# compiled (mypyc): ~3x faster, which counts with a sources_dir of many thousand TOML files.
import tomli

from healerd.core.errors import HealerdError
from healerd.core.terminal import escaped
from healerd.core.timeutil import parse_duration

FIELD_TYPES = ("str", "int", "float")
DEFAULT_EVERY = 900.0
FETCH_MODES = ("http", "browser")
_TOP_KEYS = {"url", "every", "items", "fields", "headers", "cookies", "parser", "name", "fetch", "wait_for", "key"}
_FIELD_KEYS = {"css", "attr", "type", "required", "profile"}


class BlueprintError(ValueError, HealerdError):
    """A blueprint that cannot be used; `key` names the offending key."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(f"{key}: {message}" if key else message)


@dataclass(frozen=True)
class FieldSpec:
    name: str
    css: str | None                   # the first (primary) selector
    type: str = "str"
    attr: str | None = None
    required: bool = True
    fallbacks: tuple[str, ...] = ()   # further selectors, tried in order when `css` matches nothing
    profile: bool = True              # judged against its value profile (false: a free-form field)

    @property
    def selectors(self) -> tuple[str, ...]:
        """Every selector of the field, in the order they are tried."""
        return ((self.css,) if self.css is not None else ()) + self.fallbacks

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {}
        if self.css is not None:
            d["css"] = [self.css, *self.fallbacks] if self.fallbacks else self.css
        d["type"] = self.type
        if self.attr is not None:
            d["attr"] = self.attr
        if not self.required:
            d["required"] = False
        if not self.profile:
            d["profile"] = False
        return d


@dataclass(frozen=True)
class Blueprint:
    fields: dict[str, FieldSpec]
    url: str | None = None
    every: float = DEFAULT_EVERY
    items: str | None = None
    headers: dict[str, str] = dc_field(default_factory=dict)
    cookies: dict[str, str] = dc_field(default_factory=dict)
    parser: str | None = None
    fetch: str = "http"                 # "http" or "browser" (rendered by a real browser)
    wait_for: str | None = None         # browser only: a CSS selector to wait for after load
    items_fallbacks: tuple[str, ...] = ()   # further `items` selectors, tried in order
    key: tuple[str, ...] = ()           # the fields that identify a record across scrapes

    @property
    def items_selectors(self) -> tuple[str, ...]:
        """Every `items` selector, in the order they are tried (empty without `items`)."""
        return ((self.items,) if self.items is not None else ()) + self.items_fallbacks

    @property
    def kind(self) -> str:
        return "code" if self.parser else "selectors"

    def to_dict(self) -> dict[str, Any]:
        """The blueprint-format dict (what `blueprint.json` and the database hold)."""
        d: dict[str, Any] = {}
        if self.url is not None:
            d["url"] = self.url
        d["every"] = self.every
        if self.items is not None:
            d["items"] = [self.items, *self.items_fallbacks] if self.items_fallbacks else self.items
        d["fields"] = {name: f.to_dict() for name, f in self.fields.items()}
        if self.headers:
            d["headers"] = dict(self.headers)
        if self.cookies:
            d["cookies"] = dict(self.cookies)
        if self.parser:
            d["parser"] = self.parser
        if self.fetch != "http":
            d["fetch"] = self.fetch
        if self.wait_for is not None:
            d["wait_for"] = self.wait_for
        if self.key:
            d["key"] = self.key[0] if len(self.key) == 1 else list(self.key)
        return d

    def to_json(self) -> str:
        return self._json

    @cached_property
    def _json(self) -> str:
        """The blueprint's JSON, made once: a blueprint is frozen, and registering a source writes
        it twice (the source and its first version) after the sources_dir sync compared it. The
        fields keep their order (the blueprint's): records and CSV columns come out in it."""
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @cached_property
    def extraction_json(self) -> str:
        """The blueprint with only what extraction reads (`items`, `fields`, `parser`), as JSON:
        what an extraction worker is sent. Sources that share their selectors share it, whatever
        their URL, schedule, headers or cookies, so a worker parses it once for all of them."""
        return replace(self, url=None, every=DEFAULT_EVERY, headers={}, cookies={}, fetch="http",
                       wait_for=None, key=()).to_json()

    def with_fields(self, fields: dict[str, FieldSpec], items: Any = ...,
                    items_fallbacks: Any = ...) -> Blueprint:
        """A copy with other fields (and, when given, another `items` selector: a str or None)."""
        # A new primary `items` drops the old fallbacks unless they are given too.
        if items_fallbacks is ...:
            items_fallbacks = self.items_fallbacks if items is ... else ()
        return Blueprint(
            fields=fields,
            url=self.url,
            every=self.every,
            items=self.items if items is ... else items,
            headers=self.headers,
            cookies=self.cookies,
            parser=self.parser,
            fetch=self.fetch,
            wait_for=self.wait_for,
            items_fallbacks=items_fallbacks,
            key=tuple(k for k in self.key if k in fields),
        )

    def with_url(self, url: str) -> Blueprint:
        return replace(self, url=url)

    def with_parser(self, code: str | None) -> Blueprint:
        return replace(self, parser=code)

    def selectors(self) -> dict[str, str | None]:
        return {name: f.css for name, f in self.fields.items()}


def check_selector(css: str, key: str) -> None:
    """Raise BlueprintError when selectolax rejects `css`."""
    if not isinstance(css, str) or not css.strip():
        raise BlueprintError(key, "expected a non-empty CSS selector string")
    problem = _selector_problem(css) if len(css) <= _REMEMBERED_SELECTOR_LEN else _selector_problem.__wrapped__(css)
    if problem is not None:
        raise BlueprintError(key, f"selectolax cannot parse the selector {css!r} ({problem})")


@lru_cache(maxsize=1)
def _probe() -> Any:
    """A tiny parsed page to try selectors on. selectolax is imported here, on the first selector
    checked, not with this module: a command line that only reads blueprints' names (`healerctl
    status`) does not pay for loading the HTML parser."""
    from selectolax.lexbor import LexborHTMLParser

    return LexborHTMLParser("<html><body><p>probe</p></body></html>")


# A blueprint read back from the store is checked again each time it is parsed, and sources
# share selectors: selectolax's verdict on a selector of ordinary length is remembered.
_REMEMBERED_SELECTOR_LEN = 512


@lru_cache(maxsize=4096)
def _selector_problem(css: str) -> str | None:
    """Why selectolax rejects `css`, or None."""
    try:
        _probe().css(css)
    except Exception as exc:  # selectolax raises its own error type
        return str(exc)
    return None


def check_selectors(value: Any, key: str) -> tuple[str, tuple[str, ...]]:
    """A selector or a non-empty list of selectors (tried in order), each checked:
    (the first, the rest)."""
    if isinstance(value, list):
        if not value:
            raise BlueprintError(key, "expected a CSS selector or a non-empty list of them")
        for i, css in enumerate(value):
            check_selector(css, f"{key}[{i}]")
        if len(set(value)) != len(value):
            raise BlueprintError(key, "the same selector is listed twice")
        return value[0], tuple(value[1:])
    check_selector(value, key)
    return value, ()


def check_url(url: Any, key: str = "url") -> str:
    if not isinstance(url, str) or not url.strip():
        raise BlueprintError(key, "expected an http(s) URL string")
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BlueprintError(key, f"expected an http(s) URL with a host; got {url!r}")
    return url.strip()


# A header (or cookie) name is an HTTP token (RFC 9110 5.1); a value is visible characters, spaces
# and tabs: a CR or LF would split the request (and the browser path hangs on it until its timeout),
# any other control character has no business in a header either.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_BAD_VALUE_CHAR = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _str_map(value: Any, key: str, check_http: bool = True) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise BlueprintError(key, "expected a table of string keys to string values")
    for name, text in value.items() if check_http else ():
        if not _TOKEN.fullmatch(name):
            raise BlueprintError(f"{key}.{escaped(name)}", "not a valid name: letters, digits and !#$%&'*+-.^_`|~ only")
        bad = _BAD_VALUE_CHAR.search(text)
        if bad:
            raise BlueprintError(f"{key}.{name}", f"the value holds a control character ({escaped(bad.group(0))}); "
                                                  f"CR, LF and other controls are not allowed in a header")
    return dict(value)


def from_dict(data: Any, url: str | None = None, require_url: bool = False, check_parser: bool = True,
              check_headers: bool = True) -> Blueprint:
    """Build and check a Blueprint from its dict form. `url` overrides the file's.

    A `parser` is checked the way the sandbox checks it before it runs (allowed imports, no
    forbidden names), so a parser that would be refused at every scrape is refused here, once.
    `check_parser=False` is for blueprints read back from the store, checked when they came in."""
    if not isinstance(data, dict):
        raise BlueprintError("", "a blueprint must be a table/object at the top level")
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise BlueprintError(unknown[0], f"unknown key (known: {', '.join(sorted(_TOP_KEYS - {'name'}))})")

    the_url = url if url is not None else data.get("url")
    if the_url is not None:
        the_url = check_url(the_url, "url")
    elif require_url:
        raise BlueprintError("url", "missing: give it in the blueprint or with --url")

    try:
        every = parse_duration(data.get("every", DEFAULT_EVERY), "every")
    except ValueError as exc:
        raise BlueprintError("every", str(exc).split(": ", 1)[-1]) from None
    if every <= 0:
        raise BlueprintError("every", "must be greater than zero")

    parser = data.get("parser")
    if parser is not None and (not isinstance(parser, str) or "def parse" not in parser):
        raise BlueprintError("parser", "expected Python source defining parse(html)")
    if parser is not None and check_parser:
        from healerd.adapters.sandbox import ParserRejected, check_parser_source

        try:
            check_parser_source(parser)
        except ParserRejected as exc:
            raise BlueprintError("parser", exc.reason) from None

    items = data.get("items")
    items_fallbacks: tuple[str, ...] = ()
    if items is not None:
        items, items_fallbacks = check_selectors(items, "items")

    fetch = data.get("fetch", "http")
    if fetch not in FETCH_MODES:
        raise BlueprintError("fetch", f"expected \"http\" or \"browser\"; got {fetch!r}")
    wait_for = data.get("wait_for")
    if wait_for is not None:
        check_selector(wait_for, "wait_for")
        if fetch != "browser":
            raise BlueprintError("wait_for", "only for pages fetched with a browser (add fetch = \"browser\")")

    raw_fields = data.get("fields")
    if not isinstance(raw_fields, dict) or not raw_fields:
        raise BlueprintError("fields", "a blueprint needs at least one field")
    fields: dict[str, FieldSpec] = {}
    for name, spec in raw_fields.items():
        key = f"fields.{name}"
        if not isinstance(name, str) or not name.strip():
            raise BlueprintError("fields", "field names must be non-empty strings")
        if not isinstance(spec, dict):
            raise BlueprintError(key, "expected a table with at least `css`")
        unknown = sorted(set(spec) - _FIELD_KEYS)
        if unknown:
            raise BlueprintError(f"{key}.{unknown[0]}", "unknown key (known: attr, css, profile, required, type)")
        css = spec.get("css")
        fallbacks: tuple[str, ...] = ()
        if css is None:
            if parser is None:
                raise BlueprintError(f"{key}.css", "missing: every field needs a CSS selector")
        else:
            css, fallbacks = check_selectors(css, f"{key}.css")
        ftype = spec.get("type", "str")
        if ftype not in FIELD_TYPES:
            raise BlueprintError(f"{key}.type", f"expected one of {', '.join(FIELD_TYPES)}; got {ftype!r}")
        attr = spec.get("attr")
        if attr is not None and (not isinstance(attr, str) or not attr.strip()):
            raise BlueprintError(f"{key}.attr", "expected an attribute name")
        required = spec.get("required", True)
        if not isinstance(required, bool):
            raise BlueprintError(f"{key}.required", "expected true or false")
        profile = spec.get("profile", True)
        if not isinstance(profile, bool):
            raise BlueprintError(f"{key}.profile", "expected true or false")
        fields[name] = FieldSpec(name=name, css=css, type=ftype, attr=attr, required=required, fallbacks=fallbacks,
                                 profile=profile)

    return Blueprint(
        key=_record_key(data.get("key"), fields),
        fields=fields,
        url=the_url,
        every=every,
        items=items,
        headers=_str_map(data.get("headers"), "headers", check_headers),
        cookies=_str_map(data.get("cookies"), "cookies", check_headers),
        parser=parser,
        fetch=fetch,
        wait_for=wait_for,
        items_fallbacks=items_fallbacks,
    )


def _record_key(value: Any, fields: dict[str, FieldSpec]) -> tuple[str, ...]:
    """The `key` of a blueprint: a field name, or a non-empty list of distinct field names."""
    if value is None:
        return ()
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise BlueprintError("key", "expected a field name or a list of field names")
    for n in names:
        if n not in fields:
            raise BlueprintError("key", f"{n!r} is not one of the fields ({', '.join(fields)})")
    if len(set(names)) != len(names):
        raise BlueprintError("key", "a field is named twice")
    return tuple(names)


def parse_text(text: str, fmt: str | None = None, url: str | None = None, require_url: bool = False) -> Blueprint:
    """Parse blueprint text. `fmt` is "toml" or "json"; None guesses from the first character."""
    if fmt is None:
        fmt = "json" if text.lstrip().startswith("{") else "toml"
    try:
        data = json.loads(text) if fmt == "json" else tomli.loads(text)
    except (json.JSONDecodeError, tomli.TOMLDecodeError) as exc:
        raise BlueprintError("", f"the blueprint is not valid {fmt.upper()}: {exc}") from None
    return from_dict(data, url=url, require_url=require_url)


def load_file(path: str, url: str | None = None, require_url: bool = False) -> Blueprint:
    return parse_file_bytes(read_file(path), path, url=url, require_url=require_url)


def read_file(path: str) -> bytes:
    """A blueprint file's bytes (BlueprintError when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise BlueprintError("", f"cannot read blueprint file {path}: {exc.strerror}") from None


def parse_file_bytes(raw: bytes, path: str, url: str | None = None, require_url: bool = False) -> Blueprint:
    """The blueprint a file's bytes hold, in the format its name's extension says."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BlueprintError("", f"{path} is not UTF-8 text") from None
    fmt = "json" if path.endswith(".json") else ("toml" if path.endswith(".toml") else None)
    return parse_text(text, fmt, url=url, require_url=require_url)


def from_json(text: str) -> Blueprint:
    """A blueprint read back from the store: checked when it came in. Headers are not checked again,
    so one stored before their check (a CR in a value) still loads, fails at its fetch, and is fixed
    with `update`, instead of breaking every reader of the store."""
    return from_dict(json.loads(text), check_parser=False, check_headers=False)
