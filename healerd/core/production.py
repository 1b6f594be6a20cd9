"""What happens to a parser once it is in production: probation, rollback, layout merge.

Plain functions, no actors and no database:

- `probation_verdict`: a promoted fix that fails within its first `probation` scrapes is a
  production false positive (it passed staging, then failed on the live site); one that
  passes them all has passed.
- `plan_before_heal`: when the production version fails on a page, should the previous
  version simply come back (it passes on this page), should the two be merged into one
  parser (each passes on one layout the site serves at once), or is it ordinary healing?
- `merge` / `prove`: one blueprint with per-field fallback selectors that reads both
  layouts, proved on a stored page of each before it may be promoted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from healerd.core import errors
from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import Extraction
from healerd.core.validate import validate

PASSED = "passed"
FALSE_POSITIVE = "false_positive"
SITE_CHANGED = "site_changed"   # failed within its probation, on another layout than it was proved on

HEAL = "heal"
ROLLBACK = "rollback"
MERGE = "merge"


# -- probation -----------------------------------------------------------------------------
def probation_verdict(good_scrapes: int, ok: bool, error_type: str | None, probation: int) -> str | None:
    """The verdict one scrape gives on a promoted version still on probation, or None (still on it).

    `good_scrapes` is how many scrapes it passed so far. A failure that is the parser's
    (PARSE_ERROR, SCHEMA_MISMATCH) makes it a false positive; a network error, a block or a
    timeout says nothing about the parser and leaves it on probation."""
    if not ok:
        return FALSE_POSITIVE if error_type in errors.HEALABLE_BY_SELECTORS else None
    return PASSED if good_scrapes + 1 >= max(1, probation) else None


def failure_verdict(proved_on_signature: str | None, failing_signature: str | None) -> str:
    """A parser failure within probation: a production false positive when the failing page has the
    layout (page template signature) the fix was proved on; when the site has changed layout since,
    the fix is not at fault (it is a new breakage, with its own episode): `site_changed`. Without
    both signatures there is no evidence of a change: a false positive."""
    if proved_on_signature and failing_signature and proved_on_signature != failing_signature:
        return SITE_CHANGED
    return FALSE_POSITIVE


# -- merging two layouts ----------------------------------------------------------------------
def _merged_list(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for css in (*a, *b):
        if css not in out:
            out.append(css)
    return tuple(out)


def merge(first: Blueprint, second: Blueprint) -> Blueprint | None:
    """One blueprint trying `first`'s selectors, then `second`'s, per field (and for `items`).

    None when they cannot be one parser: code parsers, other fields, a field read from an
    attribute in one and from the text in the other, items in one only, or nothing to merge."""
    if first.parser or second.parser:
        return None
    if set(first.fields) != set(second.fields) or bool(first.items) != bool(second.items):
        return None
    fields: dict[str, FieldSpec] = {}
    for name, a in first.fields.items():
        b = second.fields[name]
        if a.attr != b.attr or a.type != b.type or a.required != b.required:
            return None
        selectors = _merged_list(a.selectors, b.selectors)
        fields[name] = FieldSpec(name=name, css=selectors[0], type=a.type, attr=a.attr, required=a.required,
                                 fallbacks=selectors[1:])
    items = _merged_list(first.items_selectors, second.items_selectors)
    merged = Blueprint(fields=fields, url=first.url, every=first.every, items=items[0] if items else None,
                       headers=first.headers, cookies=first.cookies, items_fallbacks=items[1:])
    if merged.to_json() in (first.to_json(), second.to_json()):
        return None   # one already reads everything the other does: nothing to merge
    return merged


@dataclass(frozen=True)
class ProofPage:
    """A page one version passed on, and what it extracted there (what a merge must give too)."""
    label: str
    html: str
    expected: Any
    status: int = 200


def prove(bp: Blueprint, pages: list[ProofPage], *, recent_counts: list[int] | None = None,
          run: Callable[[Blueprint, str], Extraction] | None = None) -> list[str]:
    """The problems of `bp` on the proof pages: it must pass validation on each and extract
    exactly what the version that passed there extracted. An empty list is a proof. `run`
    evaluates the selectors (the daemon's: in a worker, with a deadline); None: here."""
    from healerd.core.extract import extract

    problems: list[str] = []
    for p in pages:
        try:
            ex = run(bp, p.html) if run is not None else extract(p.html, bp)
        except Exception as exc:   # selectolax on a hostile page
            problems.append(f"{p.label}: extraction failed ({exc})")
            continue
        result = validate(ex, bp, recent_counts=recent_counts, last_good=p.expected, html=p.html, status=p.status)
        if not result.passed:
            problems.append(f"{p.label}: " + "; ".join(result.errors[:3]))
        elif ex.data != p.expected:
            problems.append(f"{p.label}: extracts other values than the version that passed there")
    return problems


def merge_and_prove(a: Blueprint, b: Blueprint, pages: list[ProofPage], *,
                    recent_counts: list[int] | None = None,
                    run: Callable[[Blueprint, str], Extraction] | None = None) -> tuple[Blueprint | None, list[str]]:
    """The merged blueprint that passes on every proof page (a's selectors first, else b's),
    or (None, why not)."""
    why: list[str] = []
    for first, second in ((a, b), (b, a)):
        merged = merge(first, second)
        if merged is None:
            return None, ["the two versions cannot be merged into one selector parser"]
        problems = prove(merged, pages, recent_counts=recent_counts, run=run)
        if not problems:
            return merged, []
        why = problems
    return None, why


# -- before healing ---------------------------------------------------------------------------
@dataclass
class Plan:
    """What to do about a production version that failed on a page, before any healing."""
    action: str                          # heal | rollback | merge
    reason: str
    to_version: int | None = None        # rollback: the version that comes back
    merged: Blueprint | None = None      # merge: the new parser
    merged_from: tuple[int, int] | None = None
    data: Any = None                     # what the version that comes in extracts from this page
    item_count: int | None = None
    validation: dict | None = None
    proof: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"action": self.action, "reason": self.reason, "to_version": self.to_version,
                "merged": self.merged.to_json() if self.merged else None,
                "merged_from": list(self.merged_from) if self.merged_from else None,
                "data": self.data, "item_count": self.item_count, "validation": self.validation,
                "proof": self.proof}


@dataclass(frozen=True)
class Trial:
    """One parser version tried on one page."""
    version: int
    blueprint: Blueprint
    extraction: Extraction | None    # None: the parser crashed on the page
    passed: bool
    validation: dict | None = None


def plan_before_heal(*, error_type: str | None, production: Trial, previous: Trial | None, html: str,
                     status: int = 200, production_page: ProofPage | None = None, alternating: bool = False,
                     recent_counts: list[int] | None = None,
                     run: Callable[[Blueprint, str], Extraction] | None = None) -> Plan:
    """Decide, from trials already run, what a failing production version calls for.

    - the failure is not the parser's, or no previous version passes on this page: ordinary healing;
    - the previous version passes here, the two already took turns (`alternating`: one was rolled
      back to the other before) and the failing one passed on its own stored page: the site serves
      both layouts at once; merge them when one parser proved on both pages reads them;
    - else the previous version passes here: roll back to it (a site that went back to its old
      layout, or the first turn of two)."""
    if error_type not in errors.HEALABLE_BY_SELECTORS or production.passed:
        return Plan(HEAL, "not a parser failure on this page")
    if previous is None or not previous.passed or previous.extraction is None:
        return Plan(HEAL, "no previous version passes on this page")
    data = previous.extraction.data
    count = previous.extraction.item_count
    if production_page is not None and alternating:
        pages = [ProofPage("this page", html, data, status), production_page]
        merged, why = merge_and_prove(previous.blueprint, production.blueprint, pages, recent_counts=recent_counts,
                                      run=run)
        if merged is not None:
            return Plan(MERGE, f"versions {previous.version} and {production.version} each pass on one of two "
                               f"layouts the site serves: merged into one parser proved on both",
                        merged=merged, merged_from=(previous.version, production.version), data=data,
                        item_count=count, validation=previous.validation, proof=[p.label for p in pages])
        reason_merge = f" (no merge: {'; '.join(why[:2])})"
    elif alternating:
        reason_merge = " (no merge: no stored page the failing version passed on)"
    else:
        reason_merge = ""
    return Plan(ROLLBACK, f"version {production.version} fails on the live page and version {previous.version} "
                          f"passes on it{reason_merge}",
                to_version=previous.version, data=data, item_count=count, validation=previous.validation)


def trial(version: int, bp: Blueprint, html: str, *, run: Callable[[Blueprint, str], Extraction],
          extraction: Extraction | None = None, recent_counts: list[int] | None = None, last_good: Any = None,
          status: int = 200) -> Trial:
    """Run one version on a page with `run` (the production parser: selectors in-process, code
    in the sandbox; or take the extraction it already gave) and validate it."""
    if extraction is None:
        try:
            extraction = run(bp, html)
        except Exception:
            return Trial(version, bp, None, False)
    result = validate(extraction, bp, recent_counts=recent_counts, last_good=last_good, html=html, status=status)
    return Trial(version, bp, extraction, result.passed, result.to_dict())
