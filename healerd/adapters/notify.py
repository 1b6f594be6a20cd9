"""Notifications through Apprise (the `apprise` extra): one `[[notify]]` table, one target.

Apprise speaks to Slack, e-mail, Discord, ntfy, Telegram, a JSON endpoint... from one URL
(`slack://…`, `mailto://…`, `json://…`). An `AppriseTarget` is an alert target of
healerd.actors.alert_delivery: it sends one alert as one notification (title: the event and the
source; body: the message; type: the alert's level) and answers the error when Apprise could
not deliver it, so the delivery thread retries it (at least once, in order, like the webhook).

An Apprise URL holds its secrets anywhere (a password, a token as a path segment, a query
value): it is shown only as Apprise's own privacy form (`json://user:****@host/…`, `slack://T...2/…`),
and every part of it is masked out of the errors Apprise reports. Apprise's own log lines
(which may name the URL) are captured, masked, and reduced to the one error line; they never
reach the daemon's log. Apprise keeps nothing on disk here (memory storage, no plugin paths).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import logging
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from healerd.core.sanitize import mask_text
from healerd.core.terminal import visible

EXTRA = "pip install 'healerd[apprise]'"
TIMEOUT_S = 10.0   # Apprise's socket connect and read timeouts, each

_KINDS = {"error": "failure", "warning": "warning", "info": "info"}
_GOOD = ("HEALED", "RECOVERED", "UNQUARANTINED")


def _apprise() -> Any:
    """The apprise module (ImportError when the extra is not installed); its log kept to itself."""
    import apprise

    logging.getLogger("apprise").propagate = False   # its lines may name the URL: captured per call instead
    return apprise


def _token_like(part: str) -> bool:
    """A URL part that may be a token: 16 characters or more, or eight with a digit among letters
    (Slack's tokens are path segments like `T1JJ3T3L2`, Telegram's bot token is the host part)."""
    return len(part) >= 16 or (len(part) >= 8 and any(c.isdigit() for c in part) and any(c.isalpha() for c in part))


def url_secrets(url: str) -> list[str]:
    """The parts of an Apprise URL that may be secrets, to mask as literals: the password (and
    what stands before `@` but the user name), every token-like path segment, host part or query
    value, and the whole URL. Plain words (`notify`, a user name, a host) are left readable."""
    found = [url]
    try:
        parts = urlsplit(url)
        if parts.password:
            found += [parts.password, unquote(parts.password)]
        found += [seg for seg in (unquote(s) for s in parts.path.split("/")) if _token_like(seg)]
        found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True)
                  if _token_like(v) or k.lower() in ("pass", "password", "token", "key", "secret", "apikey")]
        host = parts.netloc.rpartition("@")[2]
        found += [p for p in host.split(":") if _token_like(p) and "." not in p]
    except ValueError:
        pass
    return sorted({s for s in found if s and len(s) >= 4}, key=len, reverse=True)


def _asset(apprise: Any) -> Any:
    return apprise.AppriseAsset(plugin_paths=[], storage_mode=apprise.PersistentStoreMode.MEMORY,
                                secure_logging=True)


def check_url(url: str) -> str | None:
    """Why Apprise cannot use `url` (never echoing it), or None."""
    try:
        apprise = _apprise()
    except ImportError:
        return f"needs the apprise extra ({EXTRA})"
    scheme = url.partition("://")[0] if "://" in url else ""
    if apprise.Apprise.instantiate(url, asset=_asset(apprise)) is None:
        shown = f" ({scheme}://)" if scheme.isalnum() and len(scheme) <= 20 else ""
        return f"Apprise does not understand this URL{shown}; see its list of services"
    return None


def shown_url(url: str) -> str:
    """The URL as Apprise's privacy form shows it (its secrets as ****), for logs and errors."""
    try:
        apprise = _apprise()
        plugin = apprise.Apprise.instantiate(url, asset=_asset(apprise))
    except ImportError:
        plugin = None
    if plugin is None:
        return url.partition("://")[0] + "://***"
    return mask_text(plugin.url(privacy=True), url_secrets(url))


def target_name(url: str, events: tuple[str, ...], sources: tuple[str, ...]) -> str:
    """A stable name for the cursor of one [[notify]] table (its URL hashed: never shown)."""
    digest = hashlib.sha256(json.dumps([url, list(events), list(sources)]).encode()).hexdigest()
    return f"notify:{digest[:12]}"


class AppriseTarget:
    """One [[notify]] table as an alert target (healerd.actors.alert_delivery.Target)."""

    def __init__(self, url: str, events: tuple[str, ...] = (), sources: tuple[str, ...] = ("*",)):
        apprise = _apprise()
        self._module = apprise
        self.name = target_name(url, events, sources)
        self.shown = shown_url(url)
        self._secrets = url_secrets(url)
        self.events = frozenset(events)
        self.sources = sources
        self._apprise = apprise.Apprise(asset=_asset(apprise))
        plugin = apprise.Apprise.instantiate(url, asset=self._apprise.asset)
        if plugin is None:   # never: the configuration was checked
            raise ValueError("Apprise does not understand this URL")
        for key in ("socket_connect_timeout", "socket_read_timeout"):
            if hasattr(plugin, key):
                setattr(plugin, key, TIMEOUT_S)
        self._apprise.add(plugin)

    def wants(self, alert: dict) -> bool:
        """The alert's event is one of `events` (all when empty) and its source matches `sources`;
        an alert of no source (the fleet's: storage, the healer, a target down) matches any."""
        if self.events and alert["event"] not in self.events:
            return False
        source = alert.get("source")
        return source is None or any(fnmatch.fnmatchcase(source, g) for g in self.sources)

    def send(self, alert: dict) -> str | None:
        apprise = self._module
        kind = "success" if alert["event"] in _GOOD else _KINDS.get(alert["level"], "info")
        title = visible(f"healerd {alert['event']}: {alert.get('source') or 'the fleet'}")
        body = visible(f"{alert['message']}\n{alert['ts']}", one_line=False)
        with apprise.LogCapture(level=logging.WARNING) as captured:
            try:
                ok = bool(self._apprise.notify(title=title, body=body, notify_type=kind))
            except Exception as exc:   # noqa: BLE001 - a plugin's own failure is this alert's error, retried
                ok, captured_error = False, f"{type(exc).__name__}: {exc}"
            else:
                captured_error = ""
            said = captured.getvalue()
        if ok:
            return None
        lines = [line.split(" - ", 2)[-1] for line in said.splitlines() if line.strip()]
        why = captured_error or (lines[-1] if lines else "no reason given")
        return mask_text(" ".join(f"Apprise could not notify {self.shown}: {why}".split()), self._secrets)[:500]

    def close(self) -> None:
        self._apprise.clear()
