"""Judging a candidate parser before it may reach production (the Deployer's core).

A candidate is promoted only when, on the live page:
- it passes the validator (schema, types, item-count band, not a blocked page);
- it is plausible against the last good records: a similar item count (unless the
  page really changed size) and values of the same shape per field;
- it breaks nothing that worked: every field the production parser still
  extracted correctly on this page gives the same values under the candidate.

Some candidates are never auto-applied and are kept in staging for a person
(`healerctl approve`): one that drops or renames a field, or moves the source
to another host; a listing that leaves out last good records the page still shows
(`left_out`); a candidate its healer was not confident in (below LOW_CONFIDENCE: the
values changed along with the layout, so the repair rests on structure and labels rather
than on the old values found again) unless it reads every last good record back whole
(`reads_last_good_whole`: the old values found again after all; never a refusal's best guess,
deployed with REFUSAL_GUESS); a candidate one of whose fields gives a new value from
under another heading (column header, dt/th/label) than production read on the last good page
(`candidate_headings.candidate_relabelled`: a remembered fix for another dropped column); and any candidate
while the source is flagged for review.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from html import unescape
from typing import Any
from urllib.parse import urlsplit

from healerd.core import errors
from healerd.core.blueprint import Blueprint
from healerd.core.candidate_headings import candidate_relabelled
from healerd.core.confidence import LOW_CONFIDENCE
from healerd.core.extract import Extraction
from healerd.core.validate import URL_ATTRS, ValidationResult, is_url_reference, validate, value_shape
from healerd.core.value_profile import check, field_texts

REFUSAL_GUESS = 0.0       # the confidence a refusal's best guess is deployed with: it is never promoted

PROMOTE = "promote"
STAGE = "stage"
REJECT = "reject"

# The judge compares the candidate's values with the last good ones and accepts a looser
# majority than the validator's drift check (validate.SHAPE_MAJORITY); both classify a value
# with the one validate.value_shape.
JUDGE_SHAPE_MAJORITY = 0.6


@dataclass
class Verdict:
    action: str                     # promote | stage | reject
    reason: str
    validation: ValidationResult | None = None
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"action": self.action, "reason": self.reason, "problems": self.problems,
                "validation": self.validation.to_dict() if self.validation else None}


def _field_values(data: Any, name: str) -> list:
    if isinstance(data, list):
        return [d.get(name) for d in data if isinstance(d, dict)]
    if isinstance(data, dict):
        return [data.get(name)]
    return []


def _dominant_shape(values: list, links: bool = False) -> str | None:
    """The shape of at least JUDGE_SHAPE_MAJORITY of `values`; with `links` (values read from a
    URL attribute), a value with a link's structure is a URL whatever its ending
    (validate.is_url_reference, as in the validator's drift check)."""
    shapes = [("url" if links and is_url_reference(v) else value_shape(v)) for v in values if v not in (None, "")]
    if not shapes:
        return None
    best = max(sorted(set(shapes)), key=shapes.count)
    return best if shapes.count(best) / len(shapes) >= JUDGE_SHAPE_MAJORITY else None


_TAG = re.compile(r"<[^>]*>")
_MIN_DISTINCT = 4          # characters a value needs to tell its record apart


def _norm(v: Any) -> str | None:
    s = " ".join(str(v).split()) if isinstance(v, str) else None
    return s or None


def left_out(candidate: Blueprint, data: Any, last_good: Any, html: str) -> str | None:
    """Last good records the candidate leaves out while the page still shows them: each such record
    has text values no other last good record has (its title, say), all of them still in the page's
    text, and none among the candidate's values. A listing healed onto the wrong list, or one
    missing a record moved into another block, proves nothing on the live page."""
    if not (isinstance(data, list) and isinstance(last_good, list) and last_good):
        return None
    texts = [n for n, f in candidate.fields.items() if f.attr is None and f.type == "str"]
    if not texts:
        return None
    old = [r for r in last_good if isinstance(r, dict)]
    seen = Counter(v for r in old for n in texts if (v := _norm(r.get(n))) is not None)
    got = {v for r in data if isinstance(r, dict) for n in texts if (v := _norm(r.get(n))) is not None}
    page: str | None = None
    missed = []
    for r in old:
        own = [v for n in texts if (v := _norm(r.get(n))) is not None and seen[v] == 1 and len(v) >= _MIN_DISTINCT]
        if not own or any(v in got for v in own):
            continue
        if page is None:
            page = " ".join(unescape(_TAG.sub("", html or "")).split())
        if all(v in page for v in own):
            missed.append(own[0])
    if not missed:
        return None
    return (f"the candidate leaves out {len(missed)} last good record(s) the page still shows "
            f"(e.g. {missed[0][:40]!r}): promotion waits for a person (healerctl approve)")


def _cell(v: Any) -> Any:
    return " ".join(v.split()) if isinstance(v, str) else v


def _lost_distinction(production: list, candidate: list, last_good: list) -> bool:
    """A field that no longer tells the records apart: the last good records had at least three
    different values, production now gives at most half as many (it reads something the records
    share: a group's heading, a file name) and the candidate gives as many as the last good did."""
    if not (len(production) == len(candidate) == len(last_good)):
        return False
    kinds = [len({_cell(v) for v in vals if v not in (None, "")}) for vals in (production, candidate, last_good)]
    return kinds[2] >= 3 and kinds[0] * 2 <= kinds[2] and kinds[1] >= kinds[2]


def reads_last_good_whole(data: Any, last_good: Any) -> bool:
    """The candidate gives back every last good record whole on the live page: as many records,
    in the same order, every field the same value (whitespace aside), and at least one value that
    is not empty. Evidence that outweighs a healer's low confidence: that confidence is low when the
    repair rests on structure and labels because the values changed with the layout; a candidate
    that reads all the old values back did find them again. A page whose data changed since the
    last good scrape never passes this, and the candidate waits for a person as before."""
    if isinstance(data, dict) and isinstance(last_good, dict):
        data, last_good = [data], [last_good]
    if not (isinstance(data, list) and isinstance(last_good, list) and last_good and len(data) == len(last_good)):
        return False
    filled = False
    for new, old in zip(data, last_good):
        if not (isinstance(new, dict) and isinstance(old, dict)) or set(new) != set(old):
            return False
        for name, value in old.items():
            if _cell(new[name]) != _cell(value):
                return False
            filled = filled or value not in (None, "")
    return filled


def never_auto_apply(production: Blueprint, candidate: Blueprint) -> str | None:
    """Why a candidate must wait for a person, or None."""
    if set(candidate.fields) != set(production.fields):
        dropped = sorted(set(production.fields) - set(candidate.fields))
        added = sorted(set(candidate.fields) - set(production.fields))
        what = []
        if dropped:
            what.append(f"drops {', '.join(dropped)}")
        if added:
            what.append(f"adds {', '.join(added)}")
        return f"the candidate {' and '.join(what)}: a field change needs a person (healerctl approve)"
    for name, f in production.fields.items():
        c = candidate.fields[name]
        if c.type != f.type or c.required != f.required:
            return f"the candidate changes the type or requiredness of {name}: needs a person (healerctl approve)"
    if production.url and candidate.url:
        a, b = urlsplit(production.url).hostname, urlsplit(candidate.url).hostname
        if a != b:
            return f"the candidate moves the source from {a} to {b}: needs a person (healerctl approve)"
    return None


def profile_departures(candidate: Blueprint, candidate_ex: Extraction, profiles: dict | None) -> list[str]:
    """Why the candidate's values of each profiled field leave the source's value profiles."""
    out = []
    for name, spec in candidate.fields.items():
        if profiles and spec.profile and name in profiles:
            d = check(name, profiles[name], field_texts(candidate_ex.data, candidate_ex.raw, name))
            if d is not None:
                out.append(d.reason)
    return out


def judge(candidate: Blueprint, production: Blueprint, candidate_ex: Extraction, html: str, *,
          production_ex: Extraction | None = None, recent_counts: list[int] | None = None,
          last_good: Any = None, flagged_for_review: bool = False, status: int = 200,
          confidence: float | None = None, last_good_html: str | None = None,
          relabelled: str | None = None, hidden: str | None = None, profiles: dict | None = None,
          origin: str | None = None, by_position: str | None = None) -> Verdict:
    """Decide promote / stage / reject for a candidate extraction on the live page.

    `confidence` is the healer's own (0..1, None when it gives none); below LOW_CONFIDENCE a
    candidate that passes everything else waits in staging for `healerctl approve`.
    `last_good_html`: the page the last good records came from (their headings are compared here);
    `relabelled`: that comparison's answer already worked out where untrusted selectors may run
    (the Deployer asks the trial worker: `candidate_headings.candidate_relabelled`);
    `hidden`: why the candidate reads nodes a browser would not render (`visible.reads_hidden`,
    worked out there too): rejected; `profiles`: the source's value profiles, which the
    candidate's values must keep (`value_profile.check`); `origin`: an "external" candidate that
    gives no confidence is promoted only on the evidence a built-in heal needs (the last good
    records read back whole), never on validation alone; `by_position`: the candidate's items
    selector leaves look-alikes out by position where a class tells them apart
    (`telling_feature.by_telling_feature`): staged, it would drop a record once they go."""
    held = never_auto_apply(production, candidate)
    result = validate(candidate_ex, candidate, recent_counts=recent_counts, last_good=last_good, html=html,
                      status=status)
    if not result.passed:
        said = ("Blocked: " if result.error_type == errors.BLOCKED else "") + "; ".join(result.errors[:4])
        return Verdict(REJECT, "fails validation on the live page: " + said, result, list(result.errors))
    if hidden:
        return Verdict(REJECT, f"reads what the page does not show: {hidden}", result, [hidden])
    gone = profile_departures(candidate, candidate_ex, profiles)
    if gone:
        return Verdict(REJECT, "its values leave their profile: " + "; ".join(gone[:3]), result, gone)
    problems: list[str] = []
    data = candidate_ex.data

    # Plausibility against the last good records.
    if last_good is not None:
        if isinstance(last_good, list) and isinstance(data, list) and last_good:
            old, new = len(last_good), len(data)
            # The page really changed size when the production parser finds as many items on it.
            resized = (production_ex is not None and isinstance(production_ex.data, list)
                       and len(production_ex.data) == new)
            if not resized and (new < max(1, old // 2) or new > old * 3 + 5):
                problems.append(f"item count {new} is implausible against the last good {old}")
        for name in candidate.fields:
            before = _dominant_shape(_field_values(last_good, name))
            links = before == "url" and (candidate.fields[name].attr or "").lower() in URL_ATTRS
            after = _dominant_shape(_field_values(data, name), links)
            if before and after and before != after and not ({before, after} <= {"text", "date"}):
                problems.append(f"{name}: values were {before}, now {after}")

    # Nothing that worked may break.
    if production_ex is not None and held is None:
        for name in production.fields:
            if name not in candidate.fields:
                continue
            old_vals = _field_values(production_ex.data, name)
            if not old_vals or any(v in (None, "") for v in old_vals):
                continue  # this field was failing under production: it is what is being fixed
            new_vals = _field_values(data, name)
            if isinstance(production_ex.data, list) and isinstance(data, list) and len(old_vals) != len(new_vals):
                continue  # a different item set; the count check above judges it
            if old_vals != new_vals:
                if last_good is not None and new_vals == _field_values(last_good, name):
                    continue  # production drifted onto other content; the candidate gives back the last good values
                if last_good is not None and _lost_distinction(old_vals, new_vals, _field_values(last_good, name)):
                    continue  # production now reads something the records share; the candidate tells them apart again
                problems.append(f"{name} worked under production and changes under the candidate")

    if problems:
        return Verdict(REJECT, "implausible: " + "; ".join(problems[:4]), result, problems)
    if held:
        return Verdict(STAGE, held, result)
    if by_position:
        return Verdict(STAGE, f"{by_position}: promotion waits for a person (healerctl approve)", result)
    missed = left_out(candidate, data, last_good, html)
    if missed:
        return Verdict(STAGE, missed, result)
    moved = relabelled
    if moved is None and last_good_html and last_good is not None:
        moved = candidate_relabelled(production, last_good_html, last_good, candidate, html, data)
    if moved:
        return Verdict(STAGE, f"{moved}: promotion waits for a person (healerctl approve)", result)
    if flagged_for_review:
        return Verdict(STAGE, "the parser changed too often recently: promotion waits for a person "
                              "(healerctl approve)", result)
    if confidence is None and origin == "external" and not reads_last_good_whole(data, last_good):
        return Verdict(STAGE, "an external candidate with no confidence whose records are not the last good ones "
                              "read back whole: validation alone promotes nothing; promotion waits for a person "
                              "(healerctl approve)", result)
    if confidence is not None and confidence < LOW_CONFIDENCE:
        if confidence > REFUSAL_GUESS and reads_last_good_whole(data, last_good):
            return Verdict(PROMOTE, f"validated on the live page; the healer's confidence was low ({confidence:.2f}) "
                                    f"but the candidate reads every last good record back whole", result)
        return Verdict(STAGE, f"low-confidence repair ({confidence:.2f} < {LOW_CONFIDENCE:.2f}: found by structure "
                              f"and labels, not by the old values): promotion waits for a person (healerctl approve)",
                       result)
    return Verdict(PROMOTE, "validated on the live page", result)
