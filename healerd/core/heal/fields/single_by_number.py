"""A number field found again by its kind: the number alone, where the record's other fields say it sits.

A numeric field's old text may carry words around its number ("Page 1 of 2", "3 reviews"); a
release that keeps the number but drops the words ("1", now the active page link) leaves the old
text nowhere on the page, so the value search finds nothing. This step looks for the number itself
— a node whose whole text is that number — and takes it only where the record places it:

- anchors are the fields already placed with certainty (old value found exactly, or the old
  selector still giving the old value); on the last good page the field sat some steps from each
  (up to their lowest common ancestor), and the candidate must sit as far from each now, give or
  take one step on average (the tight record distance, not the looser one for a sole carrier);
- one candidate must be clearly the closest (the next is off by the record margin), and
- the number must be new beside the record: when the last good page already showed the bare number
  within two steps of where the field sat, it is another field's (a count beside a removed rating), not this one moved.

A bare number is weak evidence, so such a heal is always given a confidence under the Deployer's
promotion threshold: it is staged for a person to approve, never promoted on its own.
"""

from __future__ import annotations

import re

from healerd.core.blueprint import Blueprint
from healerd.core.heal.evidence import RECORD_MARGIN, RECORD_MAX_DISTANCE, RECORD_MAX_DISTANCE_SOLE
from healerd.core.heal.fields.single_candidates import Candidate
from healerd.core.heal.page.fingerprint import Fingerprint, Page, collapse, similarity
from healerd.core.heal.page.positions import steps_to_common

NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
NUMERIC_TYPES = ("int", "float")
KIND = "number"   # evidence kind: _confidence gives it its floor (0.4 + 0.3 * likeness < 0.75)


def bare_number(text: str | None) -> str | None:
    """The number inside a text that holds words around it (the only number there), else None."""
    t = collapse(text)
    found = NUMBER.findall(t)
    if len(found) < 1 or t == found[0]:
        return None
    return found[0]


def _off_by(was: tuple[int, int] | None, now: tuple[int, int] | None) -> float:
    if was is None or now is None:
        return 9.0
    return float(abs(was[0] - now[0]) + abs(was[1] - now[1]))


def _anchors(bp: Blueprint, after: Page, old_nodes: dict, old_raw: dict, decisions: dict) -> dict[str, tuple[int, int]]:
    """name -> (old node, new node) for the fields placed with certainty."""
    root = after.tree.root
    out: dict[str, tuple[int, int]] = {}
    if root is None:
        return out
    for name, (status, cand, _why) in decisions.items():
        old = old_nodes.get(name)
        if old is None:
            continue
        if status == "healed" and cand is not None and cand.kind in ("exact", "near", "record"):
            out[name] = (old, cand.node)
        elif status == "kept" and old_raw.get(name) is not None and bp.fields[name].css:
            node = after.index_of(root.css_first(str(bp.fields[name].css)))
            if node is not None:
                out[name] = (old, node)
    return out


def place_by_number(bp: Blueprint, before: Page, after: Page, old_nodes: dict, old_raw: dict,
                    fps: dict[str, Fingerprint], decisions: dict) -> dict[str, tuple[Candidate, str]]:
    """Fields still "gone" that their bare number places in the record: name -> (candidate, why)."""
    placed: dict[str, tuple[Candidate, str]] = {}
    anchors = _anchors(bp, after, old_nodes, old_raw, decisions)
    for name, (status, _cand, _why) in decisions.items():
        spec = bp.fields[name]
        old_node = old_nodes.get(name)
        if status != "gone" or spec.type not in NUMERIC_TYPES or spec.attr or name not in fps or old_node is None:
            continue
        number = bare_number(old_raw.get(name))
        mine = {a: n for a, n in anchors.items() if a != name and n[0] != old_node}
        if number is None or not mine:
            continue
        olds = {a: steps_to_common(before, old_node, o) for a, (o, _n) in mine.items()}

        def distance(page: Page, i: int, which: int) -> float:
            return sum(_off_by(olds[a], steps_to_common(page, i, ends[which]))  # noqa: B023 - called within this iteration
                       for a, ends in mine.items()) / len(mine)  # noqa: B023 - called within this iteration

        # the number already shown bare beside the record on the last good page: another field's
        if any(distance(before, i, 0) <= RECORD_MAX_DISTANCE_SOLE for i in before.exact(number, None)):
            continue
        ranked: list[tuple[float, int]] = []
        seen: set[int] = set()
        for i in after.exact(number, None):
            if i in seen:
                continue
            members = after.chain_members(i)
            seen.update(members)
            ranked.append(min((distance(after, m, 1), m) for m in members))
        if not ranked:
            continue
        ranked.sort()
        best_d, best = ranked[0]
        runner_d = ranked[1][0] if len(ranked) > 1 else None
        if best_d > RECORD_MAX_DISTANCE or (runner_d is not None and runner_d - best_d < RECORD_MARGIN):
            continue
        cand = Candidate(best, 0.0, similarity(fps[name], after, best), False, KIND)
        why = (f"the old text is gone but its number {number!r} stands alone where the other fields "
               f"({', '.join(sorted(mine))}) place the record (distance {best_d:.1f}); a bare number is "
               "weak evidence: staged for approval")
        placed[name] = (cand, why)
    return placed
