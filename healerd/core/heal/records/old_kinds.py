"""The listing healer when a field's values changed: what the old values were like, and trials.

`_OldKind` records the old records' value kinds, whether they differed, and the other nodes
of the old records (a look-alike that was another part of a record is not this field
moved); `_changed_values_in_containers` tries the old selector and its loosened forms inside
the record containers and keeps one only when it gives values of the old kind, clearly.
"""

from __future__ import annotations

from dataclasses import dataclass

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import first_number
from healerd.core.heal.evidence import (
    MARGIN,
    MIN_KIND_SHARE,
    MIN_SIM_LABEL,
    MIN_SIM_LABEL_SAME_TAG,
    SAMPLE,
    STRONG_LABEL_KINDS,
    value_kind,
)
from healerd.core.heal.page.fingerprint import (
    Fingerprint,
    Page,
    similarity,
)
from healerd.core.heal.page.selectors import (
    lexbor_first_in,
    relaxations,
)


def _spread(seq: list, k: int) -> list:
    """Up to k members of seq, spread evenly through it (first and last included)."""
    n = len(seq)
    if n <= k:
        return list(seq)
    return [seq[(j * (n - 1)) // (k - 1)] for j in range(k)]


def _node_sig(page: Page, i: int) -> tuple:
    return page.tags[i], tuple(sorted(page.classes(i)))


@dataclass
class _OldKind:
    """What one field's old values and nodes looked like, for checking values that changed.

    kinds: the value kinds the old records had; distinct: the old records had different
    values (a selector giving one constant text in every record is then wrong); foreign:
    (tag, classes) of the other nodes in the old records: a look-alike that already sat in
    the old records as something else is not this field moved.
    """

    kinds: frozenset
    distinct: bool
    foreign: frozenset
    ftype: str
    single: bool = True   # the old selector matched one node per old record (not the first of a list)

    @classmethod
    def of(cls, before: Page, old_containers: list[int], old_raw: list, name: str, spec: FieldSpec) -> _OldKind:
        vals = [r.get(name) for r in old_raw if r.get(name)]
        own: set = set()
        others: set = set()
        single = True
        for c in _spread(old_containers, 12):
            if len(before.nodes[c].css(spec.css)) > 1:
                single = False
            node = before.index_of(before.nodes[c].css_first(spec.css))
            mine = set(before.chain_members(node)) if node is not None and not spec.attr else (
                {node} if node is not None else set())
            own.update(_node_sig(before, j) for j in mine)
            for j in range(c + 1, min(before.end[c], c + 400)):
                if j not in mine:
                    others.add(_node_sig(before, j))
        return cls(frozenset(value_kind(v) for v in vals), len(set(vals)) > 1, frozenset(others - own), spec.type,
                   single)

    def fits(self, value: str | None) -> bool:
        if not value or value_kind(value) not in self.kinds:
            return False
        return self.ftype == "str" or first_number(value) is not None


class _OldKinds(dict):
    """field name -> _OldKind, computed on first use (only fields whose values changed need it)."""

    def __init__(self, before: Page, old_containers: list[int], old_raw: list, bp: Blueprint):
        super().__init__()
        self._args = (before, old_containers, old_raw, bp)

    def __missing__(self, name: str) -> _OldKind:
        before, old_containers, old_raw, bp = self._args
        got = self[name] = _OldKind.of(before, old_containers, old_raw, name, bp.fields[name])
        return got


@dataclass
class _Trial:
    """One selector tried inside the containers (see `_try_in_containers`)."""

    css: str
    nodes: tuple
    share: float          # containers where it gives a value of the old kind
    sim: float            # mean likeness of its nodes to the old node
    foreign: float        # share of its nodes that look like another node of the old records
    order: int

    @property
    def score(self) -> float:
        return self.share + self.sim

    def conflicts(self, other: _Trial) -> bool:
        """True when the two give different nodes in some container where both find one."""
        return any(a is not None and b is not None and a != b for a, b in zip(self.nodes, other.nodes))


def _try_in_containers(after: Page, sample: list[int], css: str, spec: FieldSpec, fp: Fingerprint,
                       kind: _OldKind, order: int) -> _Trial | None:
    nodes = tuple(lexbor_first_in(after, c, css) for c in sample)
    found = [n for n in nodes if n is not None]
    if not found:
        return None
    fit = sum(1 for n in found if kind.fits(after.value(n, spec.attr)))
    sim = sum(similarity(fp, after, n) for n in found) / len(found)
    foreign = sum(1 for n in found if _node_sig(after, n) in kind.foreign) / len(found)
    return _Trial(css, nodes, fit / len(sample), sim, foreign, order)


def _changed_values_in_containers(after: Page, containers: list[int], spec: FieldSpec, fp: Fingerprint | None,
                                  kind: _OldKind, anchors) -> tuple[str, str | None, str, dict]:
    """The field's values changed: the old selector, or a loosened form of it, inside the containers.

    Loosened forms drop one compound's classes, tag or step (`relaxations`). A selector is
    accepted only when it gives a value of the old kind (numbers stay numbers...) in at least
    MIN_KIND_SHARE of the containers, its nodes look like the old node and were not another
    node of the old records, and it beats any selector giving other nodes by MARGIN. Scored
    on a sample of containers, then checked on all. `anchors` (wants, exact_sets): where a
    record's old value is still in its container, the selector must give it.
    """
    if fp is None or not kind.kinds or not containers:
        return "gone", None, "no old values of this field to compare with", {}
    sample = _spread(containers, SAMPLE)
    trials: list[_Trial] = []
    for k, css in enumerate([spec.css] + relaxations(spec.css)):
        t = _try_in_containers(after, sample, css, spec, fp, kind, k)
        if t is not None:
            trials.append(t)
    if not trials:
        return "gone", None, "the old selector and its loosened forms find nothing in the records", {}
    trials.sort(key=lambda t: (-t.score, t.order))
    best = trials[0]
    runner = next((t for t in trials[1:] if t.conflicts(best)), None)
    if best.share < MIN_KIND_SHARE:
        return "gone", None, (f"values changed and no selector gives values of the old kind "
                              f"({best.css!r} in {best.share:.0%} of the records)"), {}
    floor = MIN_SIM_LABEL_SAME_TAG if after.tags[next(n for n in best.nodes if n is not None)] == fp.tag else MIN_SIM_LABEL
    if best.sim < floor:
        return "gone", None, f"values changed; {best.css!r} finds unlike nodes (likeness {best.sim:.2f})", {}
    if best.foreign > 0.2:
        return "gone", None, f"values changed; {best.css!r} finds nodes that were another part of the old records", {}
    # the old selector itself ahead: its loosened forms are no rival evidence (they only widen it),
    # so a loosened form giving other nodes nearly as well does not make the old selector doubtful
    if runner is not None and best.score - runner.score < MARGIN and not (best.order == 0 and best.css == spec.css):
        return "ambiguous", None, (f"values changed; {best.css!r} and {runner.css!r} both give values of the old kind "
                                   f"({best.score:.2f} vs {runner.score:.2f})"), {"proposal": best.css}
    if kind.single:
        # one node per old record, but the winner matches two alike nodes giving different values of
        # the old kind in a record (a price now and a price before): its first match is a coin toss
        torn = 0
        for c in sample[:12]:
            vals = {v for v in (after.value(after.index_of(n), spec.attr) for n in after.nodes[c].css(best.css))
                    if kind.fits(v)}
            torn += len(vals) > 1
        if torn * 2 > min(len(sample), 12):
            why = (f"values changed; {best.css!r} now finds two nodes with different values "
                   f"of the old kind in {torn} of {min(len(sample), 12)} records")
            return "ambiguous", None, why, {"proposal": best.css}
    if fp.label and fp.label_kind in STRONG_LABEL_KINDS:
        labels = [after.label(n) for n in best.nodes[:5] if n is not None]
        if labels and all(lb and lb != fp.label for lb in labels):
            return "gone", None, f"values changed; {best.css!r} is now labelled {labels[0]!r}, not {fp.label!r}", {}
    # the winner on every container
    nodes = [lexbor_first_in(after, c, best.css) for c in containers]
    vals = [after.value(n, spec.attr) if n is not None else None for n in nodes]
    share = sum(1 for v in vals if kind.fits(v)) / len(containers)
    if share < MIN_KIND_SHARE:
        return "gone", None, f"values changed; {best.css!r} gives values of the old kind in only {share:.0%} of the records", {}
    if kind.distinct and len(containers) >= 3 and len({v for v in vals if v}) < 2:
        return "gone", None, f"values changed; {best.css!r} gives the same text in every record", {}
    if anchors is not None:
        wants, exact_sets = anchors
        held = [(v, w) for v, w, s in zip(vals, wants, exact_sets) if s]
        if held and sum(1 for v, w in held if v == w) < MIN_KIND_SHARE * len(held):
            return "gone", None, f"values changed; {best.css!r} misses the records whose old values are still there", {}
    conf = round(min(0.7, 0.3 + 0.4 * best.sim), 3)
    why = ("values changed; the old selector still gives values of the old kind" if best.css == spec.css
           else "values changed; loosened old selector gives values of the old kind")
    return "healed", best.css, why, {"selector": best.css, "likeness": round(best.sim, 3), "confidence": conf}
