"""The Doctor's routing and reporting, as plain functions.

- `route`: which strategy an error class gets (classify, then route).
- `relocation_candidates`: where a page that answers 404/410 may have moved on the
  same site (sitemap.xml and links), never another domain.
- `recovery_context` / `deferred_report`: what the next attempt is told about the
  previous ones, and what a person is told when the attempts are exhausted.
"""

from __future__ import annotations

import html as htmllib
import re
from typing import Any
from urllib.parse import urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser

from healerd.core import errors
from healerd.core.blueprint import Blueprint

SELECTORS = "selectors"
RELOCATED_NOTE = "the page moved to "   # the note of a version made by following a moved page
RELOCATE = "relocate"
DECLINE = "decline"

_WHY_NOT: dict[str | None, str] = {
    errors.NETWORK: "a network failure (DNS, connection refused) is not the parser's fault: no healing",
    errors.BLOCKED: "the page is a bot challenge or login wall: healing selectors cannot help",
    errors.TIMEOUT: "the site is slow: the schedule backs off instead of healing",
    errors.RATE_LIMIT: "the site rate-limits us: the schedule backs off instead of healing",
    errors.TOO_LARGE: "the page is too large to work on (over [fetch] max_bytes, max_items, max_elements or "
                      "max_depth): raise the bound or point the source at a smaller page; healing cannot help",
    errors.NOT_HTML: "the URL serves a binary file, not an HTML page: check the URL",
}


def route(error_type: str | None, status: int | None = None, permanent_redirect: str | None = None) -> tuple[str, str]:
    """(strategy, why) for an error class."""
    if error_type in errors.HEALABLE_BY_SELECTORS:
        return SELECTORS, "the page structure changed: heal the selectors"
    if error_type == errors.HTTP_ERROR:
        if permanent_redirect or status in (301, 308, 404, 410):
            return RELOCATE, "the page moved or is gone: look for it on the same site"
        return DECLINE, f"HTTP {status or 'error'} is the server's problem, not the parser's: no healing"
    return DECLINE, _WHY_NOT.get(error_type, f"{error_type} is not healed")


def _tokens(path: str) -> set[str]:
    return {t for t in re.split(r"[^a-z0-9]+", path.lower()) if t and not t.isdigit()}


def relocation_candidates(old_url: str, sitemap_xml: str | None, pages: list[tuple[str, str]], limit: int = 15) -> list[str]:
    """Same-host URLs that may be the moved page, best first.

    `pages` are (url, html) pairs whose links are considered (the site's home page,
    the last good page). Ranked by how many path words they share with the old URL.
    """
    parts = urlsplit(old_url)
    host = parts.hostname
    old_tokens = _tokens(parts.path)
    found: dict[str, int] = {}

    def consider(url: str) -> None:
        url = url.split("#", 1)[0]
        p = urlsplit(url)
        if p.scheme not in ("http", "https") or p.hostname != host or url.rstrip("/") == old_url.rstrip("/"):
            return
        score = len(_tokens(p.path) & old_tokens)
        found[url] = max(found.get(url, -1), score)

    if sitemap_xml:
        for loc in re.findall(r"<loc>\s*([^<\s]+)\s*</loc>", sitemap_xml, flags=re.I)[:5000]:
            consider(htmllib.unescape(loc.strip()))  # XML escapes & as &amp;
    for base, html in pages:
        if not html:
            continue
        for a in LexborHTMLParser(html).css("a[href]")[:5000]:
            href = (a.attributes.get("href") or "").strip()
            if href and not href.startswith(("javascript:", "mailto:", "#")):
                consider(urljoin(base, href))
    ranked = sorted(found.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))
    return [u for u, _ in ranked[:limit]]


def _as_list(data: Any) -> list[dict]:
    if isinstance(data, dict):
        return [data]
    return [r for r in data if isinstance(r, dict)] if isinstance(data, list) else []


def resembles_last_good(candidate: Any, last_good: Any) -> tuple[bool, str]:
    """Does a relocation candidate's output look like the last good records? (ok, why not)

    Without last good records there is nothing to compare with, so never. Otherwise the candidate
    must yield records, every field the last good records filled must be filled with a value of the
    same type, and the number of records must be within a factor of 4 of the last good count."""
    good = _as_list(last_good)
    got = _as_list(candidate)
    if not good:
        return False, "no last good records to compare with"
    if not got:
        return False, "it yields no records"
    filled = {k: type(v) for r in good for k, v in r.items() if v not in (None, "")}
    for key, kind in sorted(filled.items()):
        values = [r.get(key) for r in got if r.get(key) not in (None, "")]
        if not values:
            return False, f"field {key} is empty there"
        if not all(isinstance(v, kind) or (kind is float and isinstance(v, int)) for v in values):
            return False, f"field {key} has another type there"
    if isinstance(last_good, list) and not (len(good) / 4 <= len(got) <= len(good) * 4):
        return False, f"{len(got)} records where the last good scrape had {len(good)}"
    return True, ""


def broken_selectors(blueprint: Blueprint, failed_fields: list[str]) -> list[str]:
    out = []
    for name in failed_fields:
        f = blueprint.fields.get(name)
        if f is not None and f.css:
            out.append(f.css)
    if not out and blueprint.items:
        out.append(blueprint.items)
    return sorted(set(out))


def recovery_context(previous: list[dict]) -> dict:
    """The recovery context: the earlier attempts of this episode and why they failed."""
    failed = [p for p in previous if p.get("outcome") in ("rejected", "error", "staged")]
    hint = ""
    if failed:
        lines = [f"- attempt at {p.get('at')}: {p.get('strategy')} -> {p.get('outcome')}: {p.get('reason')}"
                 for p in failed[:5]]
        hint = "Previous attempts failed; do not repeat them:\n" + "\n".join(lines)
    return {"previous_attempts": failed[:10], "recovery_hint": hint}


def deferred_report(*, name: str, error_type: str, last_error: str, attempts: list[dict], tried: list[str],
                    missing_fields: list[str], staged_versions: list[int], external_configured: bool,
                    blueprint: Blueprint | None = None, proposal: dict | None = None) -> dict:
    """What a person needs when healing gave up: what was tried (oldest first), the last error, and
    the options that fit the cause.

    `missing_fields`: the fields whose data the healer found gone from the page. No healer can bring
    them back and the page will not come back by waiting, so the options are the ones that work: the
    exact `healerctl update` with those fields made optional (the blueprint to save comes with the
    report, `blueprint_toml`), or `healerctl remove`. Otherwise: the staged candidates to review, an
    external healer when none is configured, and `unquarantine` once the page may have come back.
    `proposal` (see `proposal`): the built-in healer's best guess of an ambiguous refusal, staged, first
    among the options."""
    from healerd.core.blueprint_toml import to_toml, with_optional

    options = []
    if proposal:
        options.append(f"approve the built-in healer's best guess (it refused: ambiguous), staged as version "
                       f"{proposal['version']}, if its values below are right: `{proposal['approve']}`")
        staged_versions = [v for v in staged_versions if v != proposal["version"]]
    options += [f"review staged version {v}: `healerctl history {name}`, then `healerctl approve {name} {v}`"
               for v in staged_versions]
    report: dict[str, Any] = {}
    if missing_fields:
        fields = ", ".join(missing_fields)
        path = f"{name}.toml"
        if blueprint is not None and not blueprint.parser:
            report["blueprint_toml"] = to_toml(with_optional(blueprint, missing_fields))
            deleted = [f for f in missing_fields if f not in blueprint.fields]
            how = (f"{', '.join(deleted)} deleted: its old place now holds another field's data, placed again"
                   if deleted else f"required = false on {fields}; or delete the field")
            options.append(f"the data for {fields} is gone from the page: keep scraping the rest with "
                           f"`healerctl update {name} --blueprint {path}`, {path} being the blueprint below "
                           f"({how})")
        else:
            options.append(f"the data for {fields} is gone from the page: make the field optional "
                           f"(required = false) or delete it in the blueprint, then "
                           f"`healerctl update {name} --blueprint FILE`")
        options.append(f"or stop scraping it: `healerctl remove {name}`")
    else:
        if not external_configured:
            options.append("configure an external healer ([healer] url or CODE_HEALER_URL) for changes the built-in "
                           "healer cannot repair")
        options.append(f"fix the blueprint: `healerctl update {name} --blueprint FILE`")
        options.append(f"once the page may have come back: `healerctl unquarantine {name}`")
    if proposal:
        report["proposal"] = proposal
    ordered = sorted(attempts, key=lambda a: str(a.get("at") or ""))
    return {
        "source": name,
        "error_type": error_type,
        "last_error": last_error,
        "attempts": ordered[-10:],
        "tried": tried[-10:],
        "options": options,
        **({"data_gone": list(missing_fields)} if missing_fields else {}),
        **report,
    }


def fitting_options(report: dict | None, state: str, from_file: bool) -> dict | None:
    """The deferred report as shown now: no option that would be refused in the source's state
    (`unquarantine` is for a QUARANTINED or DEAD source only), and for a source from the sources
    directory the file to edit instead of `healerctl update` (which it refuses)."""
    if not report or not isinstance(report.get("options"), list):
        return report
    options = []
    for opt in report["options"]:
        text = str(opt)
        if "healerctl unquarantine" in text and state not in ("QUARANTINED", "DEAD"):
            continue
        if from_file and "healerctl update" in text:
            name = report.get("source") or "NAME"
            text = (f"fix the blueprint in its file in the sources directory ({name}.toml or {name}.json), "
                    f"then `healerctl reload`" + (" (the blueprint below shows the change)"
                                                 if report.get("blueprint_toml") else ""))
        if text not in options:
            options.append(text)
    return {**report, "options": options}


PROPOSAL_RECORDS = 3   # records of a listing shown beside the last good ones


def proposal(name: str, version: int, would: Any, last_good: Any, fields: list[str]) -> dict:
    """A staged best guess as a person judges it: per field, the value it would extract on the
    current page beside the last good one (a listing's first PROPOSAL_RECORDS records), and the
    one command that puts it in production."""
    def rows(data: Any) -> list:
        return (data if isinstance(data, list) else [data])[:PROPOSAL_RECORDS] if data else []

    now, good = rows(would), rows(last_good)
    values = []
    for i in range(max(len(now), len(good))):
        a = now[i] if i < len(now) and isinstance(now[i], dict) else {}
        b = good[i] if i < len(good) and isinstance(good[i], dict) else {}
        prefix = f"record {i + 1}: " if isinstance(would, list) else ""
        for f in fields:
            values.append(f"{prefix}{f}: would extract {a.get(f)!r}, last good {b.get(f)!r}")
    return {"version": version, "approve": f"healerctl approve {name} {version}", "values": values}
