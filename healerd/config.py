"""The daemon's configuration (`--config FILE`, TOML), with defaults for every key.

Durations accept seconds or s/m/h/d suffixes everywhere, so tests and demos can
shrink a 24-hour window to seconds. Unknown sections or keys are refused with an
error naming them, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import os
import shutil
import tomllib
from dataclasses import dataclass, field, fields, replace
from typing import Any

from healerd import __version__
from healerd.core.errors import HealerdError
from healerd.core.sanitize import Secret
from healerd.core.timeutil import parse_duration

DEFAULT_USER_AGENT = f"healerd/{__version__} (+https://github.com/healerd/healerd)"
LADDER_RUNGS = ("memory", "builtin", "external")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
ALERT_EVENTS = ("DEGRADED", "HEALED", "HEAL_FAILED", "QUARANTINED", "UNQUARANTINED", "DEAD", "RECOVERED",
                "SYSTEMIC_HALT", "BUDGET_PAUSED", "FLAGGED_FOR_REVIEW")


class ConfigError(ValueError, HealerdError):
    pass


@dataclass(frozen=True)
class DaemonSection:
    scrapers: int = 8
    sources_dir: str | None = None
    sources_max_bytes: int = 1_000_000    # a blueprint file of sources_dir larger than this is refused unread
    socket_group: str | None = None       # group allowed on the control socket (0660)
    log_level: str = "INFO"
    records_retention: int = 500          # records rows kept per source
    politeness_delay: float = 1.0         # seconds between two requests to one host (robots crawl-delay wins)
    jitter: float = 0.1                   # +-10 % on every schedule
    tick: float = 0.2                     # scheduler tick, seconds
    workers: int | str = "auto"           # extraction worker processes; "auto": one per core (1-4), 0: in-process
    extraction_timeout: float = 15.0      # wall clock for the selectors on one page in a worker (scrape or candidate)


@dataclass(frozen=True)
class FetchSection:
    timeout: float = 20.0
    connect_timeout: float = 10.0
    max_bytes: int = 10_000_000           # decoded (inflated) bytes of one page
    max_items: int = 10_000               # a scrape matching more items fails (TOO_LARGE)
    max_elements: int = 250_000           # elements of one page, counted before it is parsed
    max_depth: int = 256                  # element nesting of one page, measured before it is parsed
    user_agent: str = DEFAULT_USER_AGENT
    per_host_concurrency: int = 2
    respect_robots: bool = True


@dataclass(frozen=True)
class DoctorSection:
    enabled: bool = True                  # feature flag: false = never heal, only alert
    max_fix_attempts: int = 3             # FAILED attempts per source per attempt_window (a promotion spends none)
    attempt_window: float = 86400.0
    quarantine_for: float = 86400.0
    systemic_threshold: int = 3           # the same failure on this many distinct HOSTS (not sources) -> halt healing
    systemic_window: float = 3600.0
    ladder: tuple[str, ...] = LADDER_RUNGS
    dead_after: float = 7 * 86400.0
    review_changes: int = 5               # more automatic parser changes than this ...
    review_window: float = 7 * 86400.0    # ... in this window -> FLAGGED_FOR_REVIEW
    timeout_backoff: float = 30.0         # first retry after a TIMEOUT; doubles, capped at the interval
    probation: int = 3                    # a promoted fix failing within this many scrapes is a false positive


@dataclass(frozen=True)
class HealerSection:
    url: str = ""
    token: str = ""
    timeouts: tuple[float, ...] = (30.0, 45.0, 60.0, 90.0, 120.0)
    kind: str = "code-healer"
    model: str = ""
    cycles: int = 5                        # external cycles per Doctor attempt, at most len(timeouts)
    daily_budget_per_source: int = 10      # external calls per source per 24 h
    daily_budget_total: int = 100          # external calls in total per 24 h
    allowed_user: str = ""                 # a local healer may listen as root, the daemon's user or this user

    def __post_init__(self) -> None:
        if not isinstance(self.token, Secret):   # never printed: repr(Config) shows token=Secret('***')
            object.__setattr__(self, "token", Secret(self.token))


BROWSER_RESOURCE_TYPES = ("stylesheet", "image", "media", "font", "script", "texttrack", "xhr", "fetch",
                          "eventsource", "websocket", "manifest", "other")


@dataclass(frozen=True)
class BrowserSection:
    executable: str = ""                  # a Chromium/Chrome binary; empty: chromium, chromium-browser, google-chrome on PATH
    max_pages: int = 2                    # pages rendered at once (one browser, in its own process)
    block: tuple[str, ...] = ("image", "font", "media")   # resource types never loaded
    recycle_after: int = 500              # pages rendered before the browser process is replaced
    max_memory_mb: int = 1024             # the browser's processes above this (PSS, MB): replaced
    launch_timeout: float = 30.0          # starting the browser
    allow_private: bool = False           # pages may reach loopback/private/link-local addresses (not only their source's origin)
    endpoint: str = ""                    # ws://host:port/ of a running Playwright server instead of a local Chromium


@dataclass(frozen=True)
class AlertsSection:
    webhook: str = ""
    dedupe_window: float = 3600.0


@dataclass(frozen=True)
class MetricsSection:
    listen: str = ""                      # "127.0.0.1:9464" or a unix socket path: Prometheus /metrics


@dataclass(frozen=True)
class Config:
    daemon: DaemonSection = field(default_factory=DaemonSection)
    fetch: FetchSection = field(default_factory=FetchSection)
    doctor: DoctorSection = field(default_factory=DoctorSection)
    healer: HealerSection = field(default_factory=HealerSection)
    alerts: AlertsSection = field(default_factory=AlertsSection)
    browser: BrowserSection = field(default_factory=BrowserSection)
    metrics: MetricsSection = field(default_factory=MetricsSection)
    feeds: tuple[FeedSection, ...] = ()   # [[feeds]]: where each stored scrape is delivered
    notify: tuple[NotifySection, ...] = ()   # [[notify]]: alerts through Apprise (the apprise extra)

    def with_env(self) -> Config:
        """CODE_HEALER_URL / CODE_HEALER_TOKEN override [healer] url / token."""
        healer = _env_healer(self.healer)
        if healer is not self.healer:
            _check_healer(healer)   # the environment's URL and token meet the same rules as the file's
        return replace(self, healer=healer)


def _env_healer(healer: HealerSection) -> HealerSection:
    if os.environ.get("CODE_HEALER_URL"):
        healer = replace(healer, url=os.environ["CODE_HEALER_URL"])
    if os.environ.get("CODE_HEALER_TOKEN"):
        healer = replace(healer, token=os.environ["CODE_HEALER_TOKEN"])
    return healer


_DURATIONS = {
    ("daemon", "politeness_delay"), ("daemon", "tick"),
    ("fetch", "timeout"), ("fetch", "connect_timeout"),
    ("doctor", "attempt_window"), ("doctor", "quarantine_for"), ("doctor", "systemic_window"),
    ("doctor", "dead_after"), ("doctor", "review_window"), ("doctor", "timeout_backoff"),
    ("alerts", "dedupe_window"), ("browser", "launch_timeout"),
    ("daemon", "extraction_timeout"),
}
_SECTIONS = {"daemon": DaemonSection, "fetch": FetchSection, "doctor": DoctorSection,
             "healer": HealerSection, "alerts": AlertsSection,
             "browser": BrowserSection, "metrics": MetricsSection}


def _coerce(section: str, key: str, value: Any, default: Any) -> Any:
    where = f"[{section}] {key}"
    if (section, key) == ("daemon", "workers"):
        if value == "auto":
            return value
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"{where}: expected \"auto\" or a whole number >= 0, got {value!r}")
        return value
    if (section, key) == ("healer", "allowed_user"):
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return str(value)
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a user name or a uid, got {value!r}")
        return value.strip()
    if (section, key) in _DURATIONS:
        try:
            return parse_duration(value, where)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if isinstance(default, int) and not isinstance(default, bool):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"{where}: expected a whole number >= 0, got {value!r}")
        return value
    if isinstance(default, float):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if isinstance(default, tuple):
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        if key == "timeouts":
            try:
                return tuple(parse_duration(v, where) for v in value)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        return tuple(value)
    if default is None or isinstance(default, str):
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    return value


def from_dict(data: dict) -> Config:
    if not isinstance(data, dict):
        raise ConfigError("the configuration must be a TOML table")
    sections: dict[str, Any] = {}
    for name, value in data.items():
        if name == "feeds":
            sections["feeds"] = parse_feeds(value)
            continue
        if name == "notify":
            sections["notify"] = parse_notify(value)
            continue
        if name not in _SECTIONS:
            raise ConfigError(f"[{name}]: unknown section (known: {', '.join(_SECTIONS)}, feeds, notify)")
        if not isinstance(value, dict):
            raise ConfigError(f"[{name}]: expected a table")
        cls = _SECTIONS[name]
        defaults = cls()
        known = {f.name for f in fields(cls)}
        kwargs = {}
        for key, v in value.items():
            if key not in known:
                raise ConfigError(f"[{name}] {key}: unknown key (known: {', '.join(sorted(known))})")
            kwargs[key] = _coerce(name, key, v, getattr(defaults, key))
        sections[name] = cls(**kwargs)
    cfg = Config(**sections)
    _check(cfg)
    return cfg


def _check(cfg: Config) -> None:
    bad = [r for r in cfg.doctor.ladder if r not in LADDER_RUNGS]
    if bad:
        raise ConfigError(f"[doctor] ladder: unknown rung {bad[0]!r} (known: {', '.join(LADDER_RUNGS)})")
    twice = sorted({r for r in cfg.doctor.ladder if cfg.doctor.ladder.count(r) > 1})
    if twice:
        raise ConfigError(f"[doctor] ladder: the rung {twice[0]!r} appears more than once")
    if str(cfg.daemon.log_level).upper() not in LOG_LEVELS:
        raise ConfigError(f"[daemon] log_level: expected one of {', '.join(LOG_LEVELS)}, got {cfg.daemon.log_level!r}")
    if cfg.healer.kind not in ("code-healer", "openai"):
        raise ConfigError(f"[healer] kind: expected \"code-healer\" or \"openai\", got {cfg.healer.kind!r}")
    if cfg.daemon.scrapers < 1:
        raise ConfigError("[daemon] scrapers: at least 1")
    if cfg.daemon.sources_max_bytes < 1:
        raise ConfigError("[daemon] sources_max_bytes: at least 1")
    if cfg.daemon.extraction_timeout <= 0:
        raise ConfigError("[daemon] extraction_timeout: must be greater than zero")
    if cfg.doctor.probation < 1:
        raise ConfigError("[doctor] probation: at least 1")
    for key in ("max_bytes", "max_items", "max_elements", "max_depth"):
        if getattr(cfg.fetch, key) < 1:
            raise ConfigError(f"[fetch] {key}: at least 1")
    if cfg.fetch.per_host_concurrency < 1:
        raise ConfigError("[fetch] per_host_concurrency: at least 1")
    if not cfg.healer.timeouts:
        raise ConfigError("[healer] timeouts: at least one timeout")
    _check_healer(_env_healer(cfg.healer))   # what will be used: the environment's url/token win
    _check_browser(cfg.browser)
    if cfg.alerts.webhook and not _is_http_url(cfg.alerts.webhook):
        raise ConfigError("[alerts] webhook: expected an http:// or https:// URL")
    if cfg.metrics.listen:
        from healerd.adapters.metrics import parse_listen

        try:
            parse_listen(cfg.metrics.listen)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None


def _check_healer(h: HealerSection) -> None:
    """The healer's URL is one healerd can reach, a token never goes over plain http to another
    host, and `allowed_user` names a user (docs/HEALER_API.md, "Who receives the request")."""
    from healerd.adapters.peer import resolve_user
    from healerd.core.peers import plain_secret_refusal, split_unix_url

    if h.url:
        try:
            unix = split_unix_url(h.url)
        except ValueError as exc:
            raise ConfigError(f"[healer] url: {exc}") from None
        if unix is None and not _is_http_url(h.url):
            raise ConfigError("[healer] url: expected an http:// or https:// URL, or unix:/path/to.sock")
        refusal = plain_secret_refusal(h.url, bool(h.token))
        if refusal:
            raise ConfigError(f"[healer] url: {refusal}")
    try:
        resolve_user(h.allowed_user)
    except ValueError as exc:
        raise ConfigError(f"[healer] allowed_user: {exc}") from None


def _check_browser(b: BrowserSection) -> None:
    if b.max_pages < 1:
        raise ConfigError("[browser] max_pages: at least 1")
    if b.recycle_after < 1:
        raise ConfigError("[browser] recycle_after: at least 1")
    if b.max_memory_mb < 64:
        raise ConfigError("[browser] max_memory_mb: at least 64")
    if b.launch_timeout <= 0:
        raise ConfigError("[browser] launch_timeout: must be greater than zero")
    bad = [t for t in b.block if t not in BROWSER_RESOURCE_TYPES]
    if bad:
        raise ConfigError(f"[browser] block: unknown resource type {bad[0]!r} "
                          f"(known: {', '.join(BROWSER_RESOURCE_TYPES)})")
    if b.endpoint and not b.endpoint.startswith(("ws://", "wss://")):
        raise ConfigError("[browser] endpoint: expected a ws:// or wss:// URL of a Playwright server "
                          "(playwright run-server)")
    if b.executable and not b.endpoint and shutil.which(b.executable) is None:
        raise ConfigError(f"[browser] executable: {b.executable} is not an executable file (a path, or a name "
                          f"on PATH)")


def _is_http_url(url: str) -> bool:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        _ = parts.port   # raises ValueError on a bad port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def load(path: str | None) -> Config:
    """The configuration from `path` (None: all defaults), with the environment applied."""
    if not path:
        return Config().with_env()
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    return from_dict(data).with_env()


# -- [[feeds]] -------------------------------------------------------------------------------

FEED_KINDS = ("webhook", "jsonl")


@dataclass(frozen=True)
class FeedSection:
    """One `[[feeds]]` table: where every stored scrape of the matching sources is delivered,
    at least once and in order (healerd/actors/feeds.py)."""

    kind: str
    name: str = ""                        # how status and alerts name it; default "<kind>:<url or path>"
    url: str = ""                         # webhook: the URL each scrape is POSTed to (a Secret: may hold a token)
    headers: dict[str, Secret] = field(default_factory=dict)   # webhook: sent to the URL's origin only
    path: str = ""                        # jsonl: the file; "{source}" in it: one file per source
    sources: tuple[str, ...] = ("*",)     # shell-style globs of source names
    only_changes: bool = False            # only scrapes whose change set is not empty
    max_bytes: int = 64 * 1024 * 1024     # jsonl: the file is rotated before it grows past this
    keep: int = 5                         # jsonl: rotated files kept (path.1 ... path.N)
    timeout: float = 10.0                 # webhook: per request (the whole answer within 3x this)
    retry_max: float = 300.0              # longest wait between two tries while it fails


_FEED_KEYS = {f.name for f in fields(FeedSection)}


def parse_feeds(value: Any) -> tuple[FeedSection, ...]:
    """The `[[feeds]]` array of tables, each checked; errors name the feed by its position."""
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ConfigError("[[feeds]]: expected an array of tables ([[feeds]] ... [[feeds]])")
    out = [_feed(i + 1, t) for i, t in enumerate(value)]
    names = [f.name for f in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"[[feeds]] name: {twice[0]!r} is used by two feeds; give each its own name")
    return tuple(out)


def _feed(n: int, t: dict) -> FeedSection:
    where = f"[[feeds]] #{n}"
    unknown = sorted(set(t) - _FEED_KEYS)
    if unknown:
        raise ConfigError(f"{where} {unknown[0]}: unknown key (known: {', '.join(sorted(_FEED_KEYS))})")
    kind = t.get("kind")
    if kind not in FEED_KINDS:
        raise ConfigError(f"{where} kind: expected \"webhook\" or \"jsonl\", got {kind!r}")
    defaults = FeedSection(kind=kind)
    kw: dict[str, Any] = {"kind": kind}
    for key in ("name", "url", "path"):
        if key in t:
            if not isinstance(t[key], str):
                raise ConfigError(f"{where} {key}: expected a string, got {t[key]!r}")
            kw[key] = t[key].strip()
    if kind == "webhook":
        if not _is_http_url(kw.get("url", "")):
            raise ConfigError(f"{where} url: a webhook feed needs an http:// or https:// URL")
        if "path" in kw:
            raise ConfigError(f"{where} path: only for jsonl feeds")
    else:
        if not kw.get("path") or not os.path.isabs(kw["path"]):
            raise ConfigError(f"{where} path: a jsonl feed needs an absolute file path")
        if "url" in kw or "headers" in t:
            raise ConfigError(f"{where} {'url' if 'url' in kw else 'headers'}: only for webhook feeds")
        try:
            kw["path"].format(source="x")
        except (KeyError, IndexError, ValueError):
            raise ConfigError(f"{where} path: the only placeholder is {{source}}") from None
    headers = t.get("headers", {})
    if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise ConfigError(f"{where} headers: expected a table of string names to string values")
    kw["headers"] = {k: Secret(v) for k, v in headers.items()}
    globs = t.get("sources", ["*"])
    if isinstance(globs, str):
        globs = [globs]
    if not isinstance(globs, list) or not globs or not all(isinstance(g, str) and g for g in globs):
        raise ConfigError(f"{where} sources: expected a non-empty list of source-name globs, e.g. [\"*\"]")
    kw["sources"] = tuple(globs)
    for key in ("only_changes", "max_bytes", "keep", "timeout", "retry_max"):
        if key in t:
            v = t[key]
            if key in ("timeout", "retry_max"):
                try:
                    v = parse_duration(v, f"{where} {key}")
                except ValueError as exc:
                    raise ConfigError(str(exc)) from None
            default = getattr(defaults, key)
            if isinstance(default, bool) and not isinstance(v, bool):
                raise ConfigError(f"{where} {key}: expected true or false, got {v!r}")
            if isinstance(default, int) and not isinstance(default, bool) and (
                    not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise ConfigError(f"{where} {key}: expected a whole number >= 0, got {v!r}")
            kw[key] = v
    if kw.get("max_bytes", defaults.max_bytes) < 1024:
        raise ConfigError(f"{where} max_bytes: at least 1024")
    for key in ("timeout", "retry_max"):
        if kw.get(key, 1.0) <= 0:
            raise ConfigError(f"{where} {key}: must be greater than zero")
    if not kw.get("name"):
        kw["name"] = f"{kind}:{kw['url'] if kind == 'webhook' else kw['path']}"
    if kind == "webhook":
        from healerd.core.sanitize import mask_url

        kw["name"] = mask_url(kw["name"])   # a name is shown everywhere: never a credential of the URL
        kw["url"] = Secret(kw["url"])       # the URL may carry a token: a printed Config shows ***
    return FeedSection(**kw)


# -- [[notify]] ------------------------------------------------------------------------------


@dataclass(frozen=True)
class NotifySection:
    """One `[[notify]]` table: alerts sent through Apprise (healerd/adapters/notify.py), at least
    once and in order, like the alert webhook (healerd/actors/alert_delivery.py)."""

    url: str                              # any Apprise URL (a Secret: it holds tokens and passwords)
    events: tuple[str, ...] = ()          # only these events; empty: every one
    sources: tuple[str, ...] = ("*",)     # shell-style globs of source names (the fleet's own alerts always pass)


def parse_notify(value: Any) -> tuple[NotifySection, ...]:
    """The `[[notify]]` array of tables, each checked (the URL by Apprise itself, never echoed);
    errors name the table by its position."""
    from healerd.adapters.notify import check_url

    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ConfigError("[[notify]]: expected an array of tables ([[notify]] ... [[notify]])")
    out = []
    for n, t in enumerate(value, 1):
        where = f"[[notify]] #{n}"
        unknown = sorted(set(t) - {"url", "events", "sources"})
        if unknown:
            raise ConfigError(f"{where} {unknown[0]}: unknown key (known: events, sources, url)")
        url = t.get("url")
        if not isinstance(url, str) or not url.strip():
            raise ConfigError(f"{where} url: expected an Apprise URL (slack://..., mailto://..., json://...)")
        problem = check_url(url.strip())
        if problem:
            raise ConfigError(f"{where} url: {problem}")
        events = t.get("events", [])
        if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
            raise ConfigError(f"{where} events: expected a list of event names, e.g. [\"QUARANTINED\"]")
        bad = [e for e in events if e not in ALERT_EVENTS]
        if bad:
            raise ConfigError(f"{where} events: {bad[0]!r} is no event (known: {', '.join(ALERT_EVENTS)})")
        globs = t.get("sources", ["*"])
        if isinstance(globs, str):
            globs = [globs]
        if not isinstance(globs, list) or not globs or not all(isinstance(g, str) and g for g in globs):
            raise ConfigError(f"{where} sources: expected a non-empty list of source-name globs, e.g. [\"*\"]")
        out.append(NotifySection(url=Secret(url.strip()), events=tuple(events), sources=tuple(globs)))
    return tuple(out)
