"""A blueprint's settings (how and when the page is fetched, what identifies a record) apart
from its selectors (what is read from the page).

A sources-directory file whose selectors are as they were loaded last but whose settings
changed (`every`, headers, the URL, ...) changes the settings of the production version and
keeps its selectors, which may have been healed since: the file's stale selectors never come
back through an edit of its schedule.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from healerd.core.blueprint import Blueprint

SELECTOR_KEYS = ("items", "fields", "parser")   # what extraction reads; every other key is a setting

UNCHANGED, SETTINGS, SELECTORS = "unchanged", "settings", "selectors"


def _selectors(d: dict) -> dict:
    return {k: d.get(k) for k in SELECTOR_KEYS}


def file_change(last_loaded: str | None, now: Blueprint) -> str:
    """How the file's blueprint `now` differs from the one loaded from it last (its JSON; None:
    not known): UNCHANGED, only its SETTINGS, or its SELECTORS (the whole blueprint is new).
    Compared as values, so the order of keys (or of a stored copy's sorted keys) is no change."""
    if last_loaded is None:
        return SELECTORS
    text = now.to_json()
    if last_loaded == text:   # the usual case, without parsing: a reload of 100,000 untouched files
        return UNCHANGED
    try:
        before = json.loads(last_loaded)
    except ValueError:
        return SELECTORS
    after = json.loads(text)
    if before == after:
        return UNCHANGED
    return SETTINGS if _selectors(before) == _selectors(after) else SELECTORS


def with_settings(bp: Blueprint, source: Blueprint) -> Blueprint:
    """`bp`'s selectors with `source`'s settings (its record key kept to the fields `bp` has)."""
    return replace(bp, url=source.url or bp.url, every=source.every, headers=dict(source.headers),
                   cookies=dict(source.cookies), fetch=source.fetch, wait_for=source.wait_for,
                   key=tuple(k for k in source.key if k in bp.fields))


def changed_settings(before: Blueprint, after: Blueprint) -> list[str]:
    """The names of the settings that differ (for the audit line; never their values)."""
    out = []
    for name in ("url", "every", "headers", "cookies", "fetch", "wait_for", "key"):
        a: Any = getattr(before, name)
        b: Any = getattr(after, name)
        if a != b:
            out.append(name)
    return out
