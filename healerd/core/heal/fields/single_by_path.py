"""Two places carrying a field's old value told apart by their whole path from the root.

A redesign often renders the same value twice (a page heading and the recipe card's own
title); the node fingerprint looks four levels up and may find them equally alike. The whole
path — every ancestor's tag and class words, root to node — is what a redesign keeps longest
(the layout's columns and sections keep their names while the leaf is retagged). The old node's
path is aligned with each candidate's (an order-keeping alignment, each pair of steps scored by
tag and class words, over the old path's length), and one candidate is taken only when its
path is clearly the more alike. The evidence is a likeness, not the value: such a heal is given a
confidence under the Deployer's promotion threshold, staged for a person to approve.
"""

from __future__ import annotations

from healerd.core.blueprint import Blueprint
from healerd.core.heal.evidence import MARGIN
from healerd.core.heal.fields.single_candidates import (
    Candidate,
    _distractors,
    _exact_candidates,
    _without_copies,
    _without_distractor_twins,
)
from healerd.core.heal.page.fingerprint import Fingerprint, Page, jaccard, words

PATH_MARGIN = 0.1      # the best path must be this much more alike than the runner-up's
MIN_PATH_SIM = 0.5     # ... and alike at all
TWO_PLACES = "two places carry the old value"   # the ambiguity this settles (single_record's words)
KIND = "path"          # evidence kind: _confidence gives it its floor (0.4 + 0.3 * likeness < 0.75)

Step = tuple[str, frozenset[str]]


def path_of(page: Page, i: int) -> list[Step]:
    """The steps from the root down to node i: (tag, class words)."""
    steps: list[Step] = []
    a = i
    while a >= 0:
        steps.append((page.tags[a], frozenset(words(*page.classes(a)))))
        a = page.parent[a]
    steps.reverse()
    return steps


def _step_sim(x: Step, y: Step) -> float:
    tag = 1.0 if x[0] == y[0] else 0.0
    cls = jaccard(set(x[1]), set(y[1])) if (x[1] or y[1]) else 0.5
    return 0.4 * tag + 0.6 * cls


def path_similarity(a: list[Step], b: list[Step]) -> float:
    """0..1: how much of the old path `a` the new path `b` keeps, in order (the best alignment of their steps).

    Over the old path's length: steps the new path adds (a wrapper, a card's header) cost nothing,
    steps of the old path the new one lost or changed do."""
    if not a or not b:
        return 0.0
    prev = [0.0] * (len(b) + 1)
    for x in a:
        cur = [0.0] * (len(b) + 1)
        for j, y in enumerate(b, 1):
            cur[j] = max(prev[j], cur[j - 1], prev[j - 1] + _step_sim(x, y))
        prev = cur
    return prev[-1] / len(a)


def pick_by_path(before: Page, old_node: int, after: Page, nodes: list[int]) -> tuple[int, float, float] | None:
    """(node, its path likeness, the runner-up's) when one of `nodes` is clearly the more alike, else None."""
    if len(nodes) < 2:
        return None
    old = path_of(before, old_node)
    ranked = sorted(((path_similarity(old, path_of(after, n)), -n) for n in nodes), reverse=True)
    (best, neg), (runner, _r) = ranked[0], ranked[1]
    if best < MIN_PATH_SIM or best - runner < PATH_MARGIN:
        return None
    return -neg, best, runner


def place_by_path(bp: Blueprint, before: Page, after: Page, old_nodes: dict, old_raw: dict,
                  fps: dict[str, Fingerprint], decisions: dict) -> dict[str, tuple[Candidate, str]]:
    """Fields refused because two places carry the old value, settled by path: name -> (candidate, why)."""
    placed: dict[str, tuple[Candidate, str]] = {}
    for name, (status, _cand, why) in decisions.items():
        spec = bp.fields[name]
        old_node, value = old_nodes.get(name), old_raw.get(name)
        if status != "ambiguous" or not why.startswith(TWO_PLACES) or old_node is None or not value or name not in fps:
            continue
        exact = _exact_candidates(fps[name], value, spec.attr, after, {}, None)
        exact = _without_copies(after, _without_distractor_twins(
            fps[name], _distractors(before, old_node, value, spec.attr), after, spec.attr, exact), value)
        if len(exact) < 2:
            continue
        contenders = [c for c in exact if exact[0].score - c.score < MARGIN]
        picked = pick_by_path(before, old_node, after, [c.node for c in contenders])
        if picked is None:
            continue
        node, best, runner = picked
        chosen = next(c for c in contenders if c.node == node)
        cand = Candidate(node, chosen.score, chosen.sim, chosen.label_match, KIND)
        placed[name] = (cand, f"{why}; the path from the root tells them apart (alike {best:.2f} vs {runner:.2f}): "
                              "staged for approval")
    return placed
