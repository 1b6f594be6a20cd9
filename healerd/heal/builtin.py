"""The built-in selector healer: repair broken CSS selectors without an LLM.

Given a blueprint, the last good page, the records the blueprint extracted
from it and the current page, `heal` either returns a repaired blueprint that
was checked on the current page, or refuses with the names of the fields whose
data it cannot find. Evidence, strongest first: the old value found again
(exactly, then nearly), the label that named the old node (column header,
<label>, <dt>, preceding text), and structural likeness (tag, classes,
attributes, ancestors, position). Ambiguous matches (a runner-up within the
margin) are refused: a refusal is a right answer, a wrong value is the worst.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from healerd.blueprint import Blueprint, FieldSpec
from healerd.extract import extract, first_number
from healerd.heal.fingerprint import (
    Fingerprint,
    Page,
    fingerprint,
    jaccard,
    near_closeness,
    norm_label,
    similarity,
    text_shape,
    words,
)
from healerd.heal.selectors import (
    Selector,
    first_in,
    items_selector,
    relaxed_first,
    relaxed_selector,
    relaxations,
    lexbor_first_in,
    relative_selectors,
    single_selector,
)

# thresholds (explicit so they can be reasoned about and tuned in one place)
MARGIN = 0.12             # best must beat the runner-up by this much (combined score)
MIN_SIM_EXACT = 0.30      # structural floor for a unique, distinctive exact value
MIN_SIM_UNIQUE = 0.10    # ... for a distinctive value found once on the page (it moved far: low confidence)
MIN_SIM_WEAK = 0.55       # ... for a short/numeric value without a matching label
MIN_SIM_NEAR = 0.50       # ... for a near (containment) value match without a label
MIN_NEAR_CLOSENESS = 0.5  # ... and the old value must be at least half of the text found
MIN_SIM_LABEL = 0.55      # ... for a label-only match (value changed)
MIN_SIM_LABEL_SAME_TAG = 0.30  # ... when the node kind (tag) is unchanged
MIN_SIM_KEEP = 0.75       # the old selector's node is kept when its value changed but it still looks the same
MAX_VALUE_HITS = 8        # values found in more places than this carry no evidence for containers
MAX_FIELD_SELECTORS = 250
MAX_RECORD_DEPTH = 12     # a record container sits at most this many levels above its values
MIN_SIM_IN_PLACE = 0.85   # the old selector's node still looks like the old one: a changed value stays there
IN_PLACE_MARGIN = 0.1     # ... unless the old value turned up in a place nearly as alike
IN_PLACE_DOUBT = "the old selector's node now shows"
TWIN_MARGIN = 0.03       # a candidate more like a passed-over look-alike than like the old node by this much is dropped
RECORD_MAX_DISTANCE = 1.0  # placed by the record: the candidate's distances to the other fields match the old ones
RECORD_MAX_DISTANCE_SOLE = 2.0  # ... or within two steps when it is the one place carrying the value
RECORD_MARGIN = 2.0        # ... and the next candidate's are off by this many more steps
CONTEXT_MARGIN = 0.15     # two sets of record containers: one must look this much more like the old surroundings


@dataclass
class HealResult:
    ok: bool
    blueprint: Blueprint | None
    reason: str
    changed: dict[str, str]
    unchanged: bool = False
    confidence: float = 0.0
    details: dict = field(default_factory=dict)


@dataclass
class Candidate:
    node: int
    score: float          # combined: value evidence + label + structure
    sim: float            # structural likeness 0..1
    label_match: bool
    kind: str             # exact | near | label | current | shared
    closeness: float = 1.0


# ---------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------

def heal(blueprint: Blueprint, before_html: str, old_records: dict | list[dict], after_html: str) -> HealResult:
    """Repair `blueprint` for `after_html`, or refuse naming the fields whose data is gone."""
    if blueprint.parser or any(f.css is None for f in blueprint.fields.values()):
        return HealResult(False, None, "code blueprint: the built-in healer repairs CSS selectors only", {})
    before = Page(before_html)
    after = Page(after_html)
    old = extract(before.tree, blueprint)
    if not _records_match_shape(old_records, blueprint):
        return HealResult(False, None, "old records do not have the blueprint's shape", {})
    now = extract(after.tree, blueprint)
    if _consistent(now.data, old_records, blueprint):
        torn = None if blueprint.items else _newly_torn(blueprint, before, after)
        if torn:
            return HealResult(False, None, f"cannot heal: {torn}", {})
        return HealResult(True, blueprint, "the blueprint still works: nothing to heal", {}, unchanged=True, confidence=1.0)
    if blueprint.items:
        return _heal_items(blueprint, before, after, old.raw, old_records)
    return _heal_single(blueprint, before, after, old.raw, old_records)


def _newly_torn(bp: Blueprint, before: Page, after: Page) -> str | None:
    """A field whose selector matched one node and now matches several with different values, or None.

    The first of them still gives the old value, but it may be a copy placed before the record (a
    "related" block repeating the old value while the record's own changed): which one is the
    field cannot be told, so the page is not taken as unchanged.
    """
    for name, spec in bp.fields.items():
        if len(before.tree.css(spec.css)) != 1:
            continue
        nodes = after.tree.css(spec.css)
        values = {after.value(after.index_of(n), spec.attr) for n in nodes}
        if len(nodes) > 1 and len(values - {None, ""}) > 1:
            return (f"{name} (its selector matched one node and now matches {len(nodes)} with different values: "
                    f"a copy such as a 'related' block may hold the old value)")
    return None


def _records_match_shape(records: Any, bp: Blueprint) -> bool:
    if bp.items:
        return isinstance(records, list) and all(isinstance(r, dict) for r in records)
    return isinstance(records, dict)


def _same_value(a: Any, b: Any, ftype: str) -> bool:
    if ftype == "str":
        return a == b
    return a is not None and b is not None and float(a) == float(b)


def _consistent(now: Any, old: Any, bp: Blueprint) -> bool:
    """True when the old blueprint gives the old records again on the current page."""
    if bp.items:
        if not isinstance(now, list) or len(now) != len(old) or not now:
            return False
        pairs = list(zip(now, old))
    else:
        pairs = [(now, old)]
    for got, want in pairs:
        for name, spec in bp.fields.items():
            if want.get(name) is None:
                if got.get(name) is None and spec.required and not bp.items:
                    return False
                continue
            if not _same_value(got.get(name), want.get(name), spec.type):
                return False
    return True


# ---------------------------------------------------------------------------
# single-record pages
# ---------------------------------------------------------------------------

def _heal_single(bp: Blueprint, before: Page, after: Page, old_raw: dict, old_records: dict) -> HealResult:
    root_b = before.tree.root
    root_a = after.tree.root
    old_nodes: dict[str, int | None] = {}
    fps: dict[str, Fingerprint] = {}
    for name, spec in bp.fields.items():
        i = before.index_of(root_b.css_first(spec.css))
        old_nodes[name] = i
        if i is not None:
            fps[name] = fingerprint(before, i, old_raw.get(name))
    # fields that sat on the same old node (e.g. a link's text and href)
    partners = {n: [m for m in bp.fields if m != n and old_nodes[m] is not None and old_nodes[m] == old_nodes[n]]
                for n in bp.fields}

    decisions: dict[str, tuple[str, Candidate | None, str]] = {}   # name -> (status, cand, why)
    details: dict[str, dict] = {}
    for name, spec in bp.fields.items():
        old_value = old_raw.get(name)
        cur = after.index_of(root_a.css_first(spec.css))
        cur_value = after.value(cur, spec.attr) if cur is not None else None
        if old_value is None or name not in fps:
            decisions[name] = ("kept", None, "no old value to relocate")
            continue
        if cur_value == old_value:
            decisions[name] = ("kept", None, "old selector gives the old value")
            continue
        # a field that shared its old node with another field stays on that node while the
        # other field's old selector still gives the other's old value there (a link's href
        # changed, its text did not)
        held = next((p for p in partners[name] if cur is not None and old_raw.get(p) is not None
                     and after.index_of(root_a.css_first(bp.fields[p].css)) == cur
                     and after.value(cur, bp.fields[p].attr) == old_raw.get(p)), None)
        if held is not None and cur_value:
            decisions[name] = ("kept", None, f"value changed on the node that still gives field {held!r} its old value")
            continue
        partner_values = {after_attr: old_raw.get(p) for p in partners[name]
                          for after_attr in [bp.fields[p].attr]}
        distractors = _distractors(before, old_nodes[name], old_value, spec.attr)
        others = {v for m, v in old_raw.items() if m != name and v}
        status, cand, why, runner = _locate(fps[name], old_value, spec, after, cur, partner_values, distractors, others,
                                            before)
        decisions[name] = (status, cand, why)
        details[name] = _detail(status, cand, runner, why, after, spec)

    # fields the value alone could not place: their relation to the fields that were placed
    _place_by_record(bp, before, after, old_nodes, old_raw, fps, decisions, details)

    # fields whose value changed but whose old node was shared with a found field follow it
    for name, (status, _cand, _why) in list(decisions.items()):
        if status != "gone":
            continue
        for p in partners[name]:
            pst, pc, _ = decisions[p]
            node = pc.node if pc else after.index_of(root_a.css_first(bp.fields[p].css)) if pst == "kept" else None
            spec = bp.fields[name]
            if node is not None and after.value(node, spec.attr):
                c = Candidate(node, pc.score if pc else 1.0, pc.sim if pc else 1.0, False, "shared")
                decisions[name] = ("healed", c, f"same node as field {p!r}")
                details[name] = _detail("healed", c, None, f"same node as field {p!r}", after, spec)
                break

    _drop_collisions_single(bp, after, old_nodes, decisions, details)
    _settle_optional_single(bp, after, decisions, details)
    gone = [n for n, (st, _, _) in decisions.items() if st in ("gone", "ambiguous")]
    if gone:
        return _refusal(gone, decisions, details)

    new_fields = dict(bp.fields)
    changed: dict[str, str] = {}
    selector_for_node: dict[tuple[int, str | None], str | None] = {}
    for name, (status, cand, _why) in decisions.items():
        if status != "healed" or cand is None:
            continue
        spec = bp.fields[name]
        if cand.node == after.index_of(root_a.css_first(spec.css)):
            continue   # the old selector already gives this node: nothing to change
        key = (cand.node, spec.attr)
        if key not in selector_for_node:
            selector_for_node[key] = (single_selector(after, cand.node, avoid_attr=spec.attr)
                                      or relaxed_first(after, spec.css, cand.node))
        css = selector_for_node[key]
        if css is None:
            details.setdefault(name, {})["why"] = "found the node but no selector picks it out"
            return _refusal([name], {**decisions, name: ("gone", None, "no unique selector")}, details)
        new_fields[name] = FieldSpec(name, css, spec.type, spec.attr, spec.required)
        changed[name] = css
        details[name]["selector"] = css
    if not changed:
        return HealResult(True, bp, "the old selectors still find their fields", {}, unchanged=True,
                          confidence=0.8, details=details)
    new_bp = bp.with_fields(new_fields)
    # verification: the new blueprint gives the intended values on the current page
    check = extract(after.tree, new_bp).raw
    for name in changed:
        cand = decisions[name][1]
        if check.get(name) != after.value(cand.node, bp.fields[name].attr):
            return _refusal([name], decisions, details, note="verification failed")
    conf = min(_confidence(decisions[n][1]) for n in changed)
    summary = "; ".join(f"{n}: {decisions[n][2]} -> {changed[n]}" for n in changed)
    return HealResult(True, new_bp, f"{summary} (confidence {conf:.2f})", changed, confidence=conf, details=details)


_EVIDENCE_RANK = {"current": 4, "exact": 3, "record": 3, "moved": 2, "shared": 2, "near": 1, "label": 0}


def _settle_optional_single(bp: Blueprint, after: Page, decisions: dict, details: dict) -> None:
    """An optional field that was not found keeps its old selector only when that selector finds nothing now.

    A null optional field is a right answer; the old selector now picking another node
    (a newsletter box where a note was) would return a wrong value, so the field stays
    "gone" and the heal is refused naming it.
    """
    root = after.tree.root
    for name, (status, _cand, why) in list(decisions.items()):
        spec = bp.fields[name]
        if spec.required or status not in ("gone", "ambiguous"):
            continue
        node = after.index_of(root.css_first(spec.css))
        value = after.value(node, spec.attr) if node is not None else None
        if not value:
            why = f"optional field not found ({why}); its old selector finds nothing, so it stays empty"
            decisions[name] = ("kept", None, why)
            details[name] = {**details.get(name, {}), "status": "kept", "why": why}
        else:
            why = f"optional field not found ({why}) and its old selector now finds other data ({value[:40]!r})"
            decisions[name] = ("gone", None, why)
            details[name] = {**details.get(name, {}), "status": "gone", "why": why}


def _drop_collisions_single(bp: Blueprint, after: Page, old_nodes: dict, decisions: dict, details: dict) -> None:
    """Fields that had different nodes before must not land on the same node now; the weaker one is refused."""
    root = after.tree.root
    def new_node(name):
        st, cand, _ = decisions[name]
        if st == "healed" and cand is not None:
            return cand.node, _EVIDENCE_RANK.get(cand.kind, 0), cand.score
        if st == "kept":
            return after.index_of(root.css_first(bp.fields[name].css)), 5, 9.0
        return None, -1, 0.0
    names = list(bp.fields)
    for x, a in enumerate(names):
        for b in names[x + 1:]:
            if old_nodes[a] is None or old_nodes[a] == old_nodes[b]:
                continue
            na, ra, sa = new_node(a)
            nb, rb, sb = new_node(b)
            if na is None or na != nb:
                continue
            loser = b if (ra, sa) >= (rb, sb) else a
            if decisions[loser][0] != "healed":
                continue
            why = f"would take the node of field {a if loser == b else b!r}"
            decisions[loser] = ("gone", None, why)
            details[loser] = {**details.get(loser, {}), "status": "gone", "why": why}


def _locate(fp: Fingerprint, old_value: str, spec: FieldSpec, after: Page, cur: int | None,
            partner_values: dict, distractors: list[Fingerprint] = (),
            others: set[str] = frozenset(), before: Page | None = None) -> tuple[str, Candidate | None, str, Candidate | None]:
    """Find the node that now carries field data: (status, best, why, runner-up)."""
    weak = _is_weak(old_value)
    exact = _exact_candidates(fp, old_value, spec.attr, after, partner_values, None)
    exact = _without_copies(after, _without_distractor_twins(fp, distractors, after, spec.attr, exact), old_value)
    in_place = _in_place(fp, spec, after, cur, others, before)
    if in_place is not None:
        if not exact or exact[0].sim < in_place - IN_PLACE_MARGIN:
            return "kept", None, (f"value changed in place: the old selector's node still looks the same "
                                  f"(likeness {in_place:.2f})" + (f"; the old value elsewhere looks less alike "
                                                                  f"({exact[0].sim:.2f})" if exact else "")), None
        return "ambiguous", None, (f"{IN_PLACE_DOUBT} {_short(after.value(cur, spec.attr))} "
                                   f"(changed in place?) and the old value is at {_describe(after, exact[0].node)} "
                                   f"(moved?), alike {in_place:.2f} vs {exact[0].sim:.2f}"), exact[0]
    if exact:
        best, runner = exact[0], (exact[1] if len(exact) > 1 else None)
        floor = MIN_SIM_WEAK if (weak and not best.label_match) else MIN_SIM_EXACT
        if best.sim < floor and not best.label_match:
            # a distinctive value found once on the page, where the last good page had it only at the
            # field's own node: the field moved (an author now in a footer link), at a low confidence
            if (runner is None and not weak and _telling(old_value) and best.sim >= MIN_SIM_UNIQUE
                    and not distractors and len(after.exact(old_value, spec.attr)) <= len(after.chain_members(best.node))):
                best.kind = "moved"
                return "healed", best, f"the old value, found once on the page, moved (likeness {best.sim:.2f})", None
            return "gone", None, f"the old value is only found in unlike places (likeness {best.sim:.2f})", best
        if runner is not None and best.score - runner.score < MARGIN:
            return "ambiguous", None, f"two places carry the old value ({best.score:.2f} vs {runner.score:.2f})", runner
        return "healed", best, "old value found" + (" with its label" if best.label_match else ""), runner
    near = _near_candidates(fp, old_value, spec.attr, after, partner_values, None)
    if near:
        best, runner = near[0], (near[1] if len(near) > 1 else None)
        # a long text merely containing the old value (a breadcrumb holding the old name) needs its label
        if best.label_match or (best.sim >= MIN_SIM_NEAR and best.closeness >= MIN_NEAR_CLOSENESS):
            if runner is None or best.score - runner.score >= MARGIN:
                return "healed", best, f"old value found nearly (closeness {best.closeness:.2f})", runner
            return "ambiguous", None, "several places nearly carry the old value", runner
    labelled = _label_candidates(fp, spec.attr, after)
    if labelled:
        best, runner = labelled[0], (labelled[1] if len(labelled) > 1 else None)
        likely = best.sim >= MIN_SIM_LABEL or (after.tags[best.node] == fp.tag and best.sim >= MIN_SIM_LABEL_SAME_TAG)
        if likely and (runner is None or best.score - runner.score >= MARGIN):
            return "healed", best, f"value changed; found by its label {fp.label!r}", runner
    if cur is not None and after.value(cur, spec.attr):
        sim = similarity(fp, after, cur)
        same_label = bool(fp.label) and after.label(cur) == fp.label
        if sim >= MIN_SIM_KEEP and (same_label or not fp.label):
            return "kept", None, "value changed in place (same node kind)", None
    return "gone", None, "the old value is nowhere on the page", None


def _short(value: str | None, n: int = 40) -> str:
    v = value or ""
    return repr(v if len(v) <= n else v[:n - 1] + "…")


def _in_place(fp: Fingerprint, spec: FieldSpec, after: Page, cur: int | None, others: set[str],
              before: Page | None = None) -> float | None:
    """The likeness of the old selector's node when its value changed in place, else None.

    In place: the node looks like the old one (tag, classes, ancestors, position), still gives a
    value of the old shape under the same label, and that value is not another field's old value
    (cells that swapped places are not values that changed), nor a value the last good page already
    showed somewhere (the next item of a list sliding into the place of one that moved away).
    """
    if cur is None:
        return None
    value = after.value(cur, spec.attr)
    if not value or _value_kind(value) != _value_kind(fp.value) or value in others:
        return None
    if before is not None and before.exact(value, spec.attr):
        return None
    if fp.label and fp.label_kind in _STRONG_LABEL_KINDS and after.label(cur) != fp.label:
        return None
    sim = similarity(fp, after, cur, after.value(cur, None) if spec.attr else None)
    if text_shape(value) != fp.shape:
        sim += 0.1   # same kind of value (a name that grew a word): the shape part of likeness holds
    return sim if sim >= MIN_SIM_IN_PLACE else None


def _distractors(before: Page, old_node: int | None, value: str | None, attr: str | None) -> list[Fingerprint]:
    """Fingerprints of the other nodes of the last good page that carried the field's value (and were not chosen)."""
    if old_node is None or not value:
        return []
    chain = set(before.chain_members(old_node)) if not attr else {old_node}
    out = []
    for i in before.exact(value, attr)[:MAX_VALUE_HITS * 3]:
        if i in chain or (not attr and (before.contains(i, old_node) or before.contains(old_node, i))):
            continue
        out.append(fingerprint(before, i, value))
    return out


def _without_distractor_twins(fp: Fingerprint, distractors: list[Fingerprint], after: Page, attr: str | None,
                              cands: list[Candidate]) -> list[Candidate]:
    """Drop candidates that look more like a node the old selector did *not* pick than like the one it did.

    The last good page already had those look-alikes (a navigation link with the same href, the
    <link rel=prev> in the head) and the blueprint passed them over; their counterparts on the
    current page are passed over too. When every candidate is such a twin, none is dropped.
    """
    if not distractors or len(cands) < 2:
        return cands
    kept = []
    for c in cands:
        v = after.value(c.node, None) if attr else None
        twin = max(similarity(d, after, c.node, v) for d in distractors)
        if twin <= c.sim + TWIN_MARGIN:
            kept.append(c)
    return kept or cands


def _without_copies(after: Page, cands: list[Candidate], value: str) -> list[Candidate]:
    """Fold candidates that sit in copies of one block (a layout rendered twice: mobile and desktop).

    Two candidates are copies when the same path of tags and classes leads up to two disjoint
    ancestors (the highest such pair, or the nodes themselves) whose whole texts are equal and
    say more than the value: the same content twice,
    not two fields that happen to hold the same value now. The first in document order stands
    for the copies (it is the one a selector's first match gives).
    """
    if len(cands) < 2:
        return cands
    out: list[Candidate] = []
    for c in sorted(cands, key=lambda c: c.node):
        if not any(_copies(after, k.node, c.node, value) for k in out):
            out.append(c)
        else:
            k = next(k for k in out if _copies(after, k.node, c.node, value))
            k.score = max(k.score, c.score)
    out.sort(key=lambda c: (-c.score, c.node))
    return out


def _copies(page: Page, a: int, b: int, value: str) -> bool:
    if page.tags[a] != page.tags[b] or page.classes(a) != page.classes(b):
        return False
    x, y = a, b
    last = None
    for _level in range(5):
        px, py = page.parent[x], page.parent[y]
        if px < 0 or py < 0 or px == py or page.contains(px, b) or page.contains(py, a):
            break
        if page.tags[px] != page.tags[py] or page.classes(px) != page.classes(py):
            break
        x, y = px, py
        last = (x, y)
    if last is None:
        last = (a, b)
    tx, ty = page.texts[last[0]], page.texts[last[1]]
    return tx == ty and len(tx) >= len(value) + 20


def _relation(page: Page, x: int, y: int) -> tuple[int, int] | None:
    """Steps up from x and from y to their lowest common ancestor."""
    up_x = {x: 0}
    k, a = 0, x
    while a >= 0:
        up_x[a] = k
        a, k = page.parent[a], k + 1
    k, a = 0, y
    while a >= 0:
        if a in up_x:
            return up_x[a], k
        a, k = page.parent[a], k + 1
    return None


def _place_by_record(bp: Blueprint, before: Page, after: Page, old_nodes: dict, old_raw: dict, fps: dict,
                     decisions: dict, details: dict) -> None:
    """Settle fields whose old value turned up in several places (or only in unlike ones) by the record.

    The fields that were placed with certainty are anchors. On the last good page each field
    sat at some distance from each anchor (steps up to their common ancestor); the candidate
    whose distances to the anchors are the old ones — the same record, not a copy in another
    block — is taken when it is clearly the closest and looks enough like the old node.
    """
    root = after.tree.root
    anchors: dict[str, tuple[int, int]] = {}     # name -> (old node, new node)
    for name, (status, cand, _why) in decisions.items():
        if old_nodes.get(name) is None:
            continue
        if status == "healed" and cand is not None and cand.kind in ("exact", "near"):
            anchors[name] = (old_nodes[name], cand.node)
        elif status == "kept" and old_raw.get(name) is not None:
            node = after.index_of(root.css_first(bp.fields[name].css))
            if node is not None:
                anchors[name] = (old_nodes[name], node)
    for name, (status, _cand, why) in list(decisions.items()):
        if status not in ("ambiguous", "gone") or name not in fps or old_nodes.get(name) is None:
            continue
        if why.startswith(IN_PLACE_DOUBT):
            continue   # the old node itself is a candidate: distances to the other fields cannot settle it
        spec = bp.fields[name]
        value = old_raw.get(name)
        mine = {a: n for a, n in anchors.items() if a != name and n[0] != old_nodes[name]}
        if not value or not mine:
            continue
        cands = _exact_candidates(fps[name], value, spec.attr, after, {}, None)
        if not cands:
            continue
        olds = {a: _relation(before, old_nodes[name], o) for a, (o, _n) in mine.items()}

        def distance(c: Candidate) -> float:
            ds = []
            for a, (_o, n) in mine.items():
                was, now = olds[a], _relation(after, c.node, n)
                if was is None or now is None:
                    ds.append(9.0)
                else:
                    ds.append(abs(was[0] - now[0]) + abs(was[1] - now[1]))
            return sum(ds) / len(ds)
        ranked = sorted(((distance(c), -c.score, c.node, c) for c in cands), key=lambda t: t[:3])
        best_d, best = ranked[0][0], ranked[0][3]
        runner_d = ranked[1][0] if len(ranked) > 1 else None
        if best.sim < MIN_SIM_EXACT and not best.label_match:
            continue
        if (best_d > (RECORD_MAX_DISTANCE if runner_d is not None else RECORD_MAX_DISTANCE_SOLE)
                or (runner_d is not None and runner_d - best_d < RECORD_MARGIN)):
            if status == "ambiguous" and runner_d is not None:
                why = (f"{why}; nor does the record tell them apart (distance to the other fields "
                       f"{best_d:.1f} vs {runner_d:.1f})")
                decisions[name] = (status, None, why)
                details[name] = {**details.get(name, {}), "why": why}
            continue
        best.kind = "record"
        why = (f"old value found in {len(cands)} place(s); the one where the other fields "
               f"({', '.join(sorted(mine))}) sit as before (distance {best_d:.1f})")
        decisions[name] = ("healed", best, why)
        details[name] = _detail("healed", best, None, why, after, spec)


def _is_weak(value: str) -> bool:
    """Short or plain-number values occur by chance; they need more than the value as evidence."""
    shape = text_shape(value)
    return len(value) < 4 or (shape in ("number", "money") and len(value) < 8) or (shape == "word" and len(value) < 6)


def _score(fp: Fingerprint, after: Page, i: int, value_weight: float, attr: str | None, partner_values: dict) -> Candidate:
    sim = similarity(fp, after, i, after.value(i, None) if attr else None)
    label_match = bool(fp.label) and after.label(i) == fp.label
    bonus = 0.0
    for pattr, pval in partner_values.items():
        if pval is not None and after.value(i, pattr) == pval:
            bonus += 0.3
    score = value_weight + sim + (0.5 if label_match else 0.0) + bonus
    return Candidate(i, score, sim, label_match, "exact")


def _best_of_chain(fp: Fingerprint, after: Page, members: list[int], attr, partner_values, weight) -> Candidate:
    cands = [_score(fp, after, m, weight, attr, partner_values) for m in members]
    cands.sort(key=lambda c: (-c.score, -after.depth[c.node]))
    return cands[0]


def _exact_candidates(fp, value, attr, after: Page, partner_values, within) -> list[Candidate]:
    hits = after.exact(value, attr, within)
    out: list[Candidate] = []
    if attr:
        out = [_score(fp, after, i, 2.0, attr, partner_values) for i in hits[:50]]
    else:
        seen: set[int] = set()
        for i in hits:
            if i in seen:
                continue
            members = after.chain_members(i)
            seen.update(members)
            out.append(_best_of_chain(fp, after, members, attr, partner_values, 2.0))
            if len(out) >= 50:
                break
    out.sort(key=lambda c: (-c.score, c.node))
    return out


def _near_candidates(fp, value, attr, after: Page, partner_values, within) -> list[Candidate]:
    out: list[Candidate] = []
    seen: set[int] = set()
    for i, closeness in after.near(value, attr, within):
        if i in seen:
            continue
        members = [i] if attr else after.chain_members(i)
        seen.update(members)
        c = _best_of_chain(fp, after, members, attr, partner_values, 1.0 + closeness)
        c.kind, c.closeness = "near", closeness
        out.append(c)
    out.sort(key=lambda c: (-c.score, c.node))
    return out


def _label_candidates(fp: Fingerprint, attr: str | None, after: Page) -> list[Candidate]:
    """Nodes named by the old label (value changed): near the label text, same label, scored by likeness."""
    if not fp.label or fp.label_kind not in ("column", "for", "dt", "label"):
        return []
    label_nodes = [i for t, idxs in after.text_index.items() if len(t) <= 60 and norm_label(t) == fp.label for i in idxs]
    region: list[int] = []
    for ln in label_nodes[:20]:
        for start in (ln, after.parent[ln]):
            if start < 0 or after.parent[start] < 0:
                continue
            sibs = after.children[after.parent[start]]
            k = sibs.index(start)
            for s in sibs[k + 1:k + 3]:
                region.extend(range(s, min(after.end[s], s + 30)))
        if after.tags[ln] == "th":
            table = ln
            while table >= 0 and after.tags[table] != "table":
                table = after.parent[table]
            if table >= 0:
                region.extend(j for j in range(table, min(after.end[table], table + 400)) if after.tags[j] in ("td", "th"))
    out: list[Candidate] = []
    for i in sorted(set(region)):
        if after.label(i) != fp.label:
            continue
        value = after.value(i, attr)
        if not value or text_shape(value) != fp.shape or value == fp.label:
            continue
        sim = similarity(fp, after, i)
        out.append(Candidate(i, 0.5 + sim, sim, True, "label"))
    # one candidate per visible text occurrence: keep the likeliest node of each chain
    best: dict[int, Candidate] = {}
    for c in out:
        top = after.chain_members(c.node)[0] if not attr else c.node
        if top not in best or c.score > best[top].score:
            best[top] = c
    return sorted(best.values(), key=lambda c: (-c.score, c.node))


def _telling(value: str) -> bool:
    """Long enough, and words rather than a bare code or number, not to turn up twice by chance."""
    return len(value) >= 8 and " " in value.strip() and any(ch.isalpha() for ch in value)


def _confidence(c: Candidate | None) -> float:
    if c is None:
        return 0.0
    base = {"exact": 0.7, "record": 0.6, "shared": 0.65, "near": 0.5, "moved": 0.45, "label": 0.45}.get(c.kind, 0.4)
    return round(min(1.0, base + 0.3 * c.sim), 3)


def _detail(status, cand, runner, why, after: Page, spec: FieldSpec) -> dict:
    d = {"status": status, "why": why}
    if cand is not None:
        d.update(score=round(cand.score, 3), likeness=round(cand.sim, 3), evidence=cand.kind,
                 value=after.value(cand.node, spec.attr))
    if runner is not None:
        d["runner_up"] = round(runner.score, 3)
    return d


def _refusal(names: list[str], decisions: dict, details: dict, note: str = "") -> HealResult:
    parts = []
    for n in names:
        st, _, why = decisions.get(n, ("gone", None, ""))
        parts.append(f"{n} ({why})" if why else n)
    reason = ("cannot heal: " + ", ".join(parts)) + (f" [{note}]" if note else "")
    return HealResult(False, None, reason, {}, details=details)


# ---------------------------------------------------------------------------
# pages with repeated records (`items`)
# ---------------------------------------------------------------------------

def _heal_items(bp: Blueprint, before: Page, after: Page, old_raw: list, old_records: list) -> HealResult:
    names = list(bp.fields)
    old_containers = [before.index_of(n) for n in before.tree.css(bp.items)]
    if not old_containers or not old_raw:
        return HealResult(False, None, "items: the old blueprint found no records on the last good page", {})
    # old field nodes (fingerprints from the first record that has the field)
    fps: dict[str, Fingerprint] = {}
    depth_in_record: dict[str, int] = {}    # how far below its record container the old node sat
    shared: dict[str, list[str]] = {n: [] for n in names}
    for name, spec in bp.fields.items():
        for k, c in enumerate(old_containers):
            node = before.index_of(before.nodes[c].css_first(spec.css))
            if node is not None:
                fps[name] = fingerprint(before, node, old_raw[k][name])
                depth_in_record[name] = before.depth[node] - before.depth[c]
                break
    old_kind = _OldKinds(before, old_containers, old_raw, bp)
    for name in names:
        for other in names:
            if other != name and _same_old_nodes(before, old_containers, bp.fields[name].css, bp.fields[other].css):
                shared[name].append(other)

    details: dict[str, Any] = {}
    cur = [after.index_of(n) for n in after.tree.css(bp.items)]
    items_css = bp.items
    if _containers_hold_records(after, cur, old_raw, bp):
        containers = cur
        records = list(range(len(cur)))
        details["items"] = {"status": "kept", "why": "old items selector still finds the records"}
    else:
        found = _find_containers(after, old_raw, bp, _context_words(before, old_containers[0]))
        if (found is not None and not isinstance(found, str) and len(found[0]) < len(old_raw)
                and cur and len(cur) == len(old_raw) and all(c is not None for c in cur)
                and _containers_by_shape(bp, after, cur, depth_in_record, fps, old_kind) == cur):
            # some of the old values linger elsewhere (a table of contents, a breadcrumb) while the
            # old items selector still finds as many records, with values of the old kinds in them
            found = None
        if isinstance(found, str):
            details["items"] = {"status": "ambiguous", "why": found}
            return HealResult(False, None, f"cannot heal: items ({found})", {}, details=details)
        if found is not None:
            containers, records = found
            why = f"{len(containers)} containers carrying the old records' values"
        else:
            # the values changed along with the layout: look for repeated nodes in which the
            # old field selectors find values of the old kinds
            containers = _containers_by_shape(bp, after, cur, depth_in_record, fps, old_kind)
            if containers is None:
                details["items"] = {"status": "gone", "why": "record containers not found"}
                return HealResult(False, None, "cannot heal: items (the records' values are not found on the page)",
                                  {}, details=details)
            records = None
            why = f"{len(containers)} containers in which the field selectors find values of the old kinds"
        if containers == cur:
            details["items"] = {"status": "kept", "why": why}
        else:
            items_css = relaxed_selector(after, bp.items, containers) or items_selector(after, containers)
            if items_css is None:
                details["items"] = {"status": "gone", "why": "no selector picks out exactly the record containers"}
                return HealResult(False, None, "cannot heal: items (no selector picks out the record containers)",
                                  {}, details=details)
            details["items"] = {"status": "healed", "selector": items_css, "count": len(containers), "why": why}

    new_fields: dict[str, FieldSpec] = {}
    decisions: dict[str, tuple[str, str]] = {}
    for name, spec in bp.fields.items():
        status, css, why, info = _field_in_containers(after, containers, records, old_raw, name, spec, fps.get(name),
                                                      old_kind)
        if status == "healed" and css and css != spec.css and _same_nodes(after, containers, css, spec.css):
            status, css, why = "kept", spec.css, f"{why}; the old selector gives the same nodes"
        decisions[name] = (status, why)
        details[name] = {"status": status, "why": why, **info}
        if css:
            new_fields[name] = FieldSpec(name, css, spec.type, spec.attr, spec.required)
    # fields whose values changed follow the field they shared a node with
    for name, spec in bp.fields.items():
        if decisions[name][0] != "gone":
            continue
        for other in shared[name]:
            if other in new_fields and decisions[other][0] in ("healed", "kept"):
                css = new_fields[other].css
                vals = [after.value(n, spec.attr) if n is not None else None
                        for n in (lexbor_first_in(after, c, css) for c in containers)]
                if all(v for v in vals):
                    new_fields[name] = FieldSpec(name, css, spec.type, spec.attr, spec.required)
                    decisions[name] = ("healed", f"same node as field {other!r}")
                    details[name] = {"status": "healed", "why": f"same node as field {other!r}", "selector": css}
                    break

    _drop_collisions_items(bp, before, old_containers, after, containers, new_fields, decisions, details, shared)
    _settle_optional_items(bp, after, containers, new_fields, decisions, details)
    gone = [n for n, (st, _) in decisions.items() if st != "healed" and st != "kept"]
    if gone:
        reason = "cannot heal: " + ", ".join(f"{n} ({decisions[n][1]})" for n in gone)
        return HealResult(False, None, reason, {}, details=details)
    changed = {n: new_fields[n].css for n in names if new_fields[n].css != bp.fields[n].css}
    if items_css != bp.items:
        changed["items"] = items_css
    if not changed:
        return HealResult(True, bp, "the old selectors still find their fields", {}, unchanged=True,
                          confidence=0.8, details=details)
    new_bp = bp.with_fields({n: new_fields[n] for n in names}, items=items_css)
    got = extract(after.tree, new_bp)
    if got.item_count != len(containers):
        return HealResult(False, None, "cannot heal: items (verification: wrong record count)", {}, details=details)
    summary = "; ".join(f"{k} -> {v}" for k, v in changed.items())
    conf = round(min([0.95 if details[n]["status"] == "kept" else details[n].get("confidence", 0.8) for n in names]), 3)
    return HealResult(True, new_bp, f"{summary} (confidence {conf:.2f})", changed, confidence=conf, details=details)


def _same_nodes(after: Page, containers: list[int], css_a: str, css_b: str) -> bool:
    """Both selectors give the same node (or none) in every container (a sample first: most differ early)."""
    def agree(cs):
        return all(lexbor_first_in(after, c, css_a) == lexbor_first_in(after, c, css_b) for c in cs)
    return agree(_spread(containers, 12)) and agree(containers)


def _settle_optional_items(bp, after: Page, containers, new_fields, decisions, details) -> None:
    """An optional field that was not found keeps its old selector only when it finds nothing in the new records.

    Otherwise the old selector would put other data into the field, so it stays "gone"
    and the heal is refused naming it (a wrong value is worse than a refusal).
    """
    for name, spec in bp.fields.items():
        if spec.required or decisions[name][0] in ("healed", "kept"):
            continue
        found = [v for v in (after.value(n, spec.attr) for n in (lexbor_first_in(after, c, spec.css) for c in containers)
                             if n is not None) if v]
        if not found:
            why = f"optional field not found ({decisions[name][1]}); its old selector finds nothing, so it stays empty"
            new_fields[name] = spec
            decisions[name] = ("kept", why)
        else:
            why = (f"optional field not found ({decisions[name][1]}) and its old selector now finds other data "
                   f"in {len(found)} records ({found[0][:40]!r})")
            decisions[name] = ("gone", why)
            new_fields.pop(name, None)
        details[name] = {**details.get(name, {}), "status": decisions[name][0], "why": why}


def _drop_collisions_items(bp, before, old_containers, after, containers, new_fields, decisions, details, shared) -> None:
    """Fields with their own node in the old records must keep their own node in the new ones.

    Checked on a sample of the containers: the question is whether most records share the node.
    """
    sample = _spread(containers, SAMPLE)
    def nodes(css):
        return [lexbor_first_in(after, c, css) for c in sample]
    def strength(name):
        st = decisions[name][0]
        return 2.0 if st == "kept" else details[name].get("confidence", 0.5)
    names = [n for n in bp.fields if n in new_fields and decisions[n][0] in ("healed", "kept")]
    got = {n: nodes(new_fields[n].css) for n in names}
    for x, a in enumerate(names):
        for b in names[x + 1:]:
            if b in shared[a] or decisions[a][0] not in ("healed", "kept") or decisions[b][0] not in ("healed", "kept"):
                continue
            same = sum(1 for p, q in zip(got[a], got[b]) if p is not None and p == q)
            if same * 2 < max(1, len(sample)):
                continue
            loser = b if strength(a) >= strength(b) else a
            if decisions[loser][0] == "kept":
                continue
            why = f"would take the node of field {a if loser == b else b!r}"
            decisions[loser] = ("gone", why)
            details[loser] = {"status": "gone", "why": why}
            new_fields.pop(loser, None)


def _same_old_nodes(before: Page, containers: list[int], css_a: str, css_b: str) -> bool:
    if css_a == css_b:
        return True
    for c in containers[:3]:
        a = before.nodes[c].css_first(css_a)
        b = before.nodes[c].css_first(css_b)
        if a is None or b is None or a.mem_id != b.mem_id:
            return False
    return True


def _distinctive(old_raw: list, name: str) -> list[bool]:
    vals = [r.get(name) for r in old_raw]
    counts: dict[str, int] = {}
    for v in vals:
        if v:
            counts[v] = counts.get(v, 0) + 1
    return [bool(v) and len(v) >= 2 and counts[v] == 1 for v in vals]


def _containers_hold_records(after: Page, cur: list, old_raw: list, bp: Blueprint) -> bool:
    """The current items selector still finds the records (most records' values inside their container)."""
    if not cur or len(cur) != len(old_raw) or any(c is None for c in cur):
        return False
    hits = total = 0
    for name, spec in bp.fields.items():
        for k, v in enumerate(old_raw):
            value = v.get(name)
            if not value:
                continue
            total += 1
            if after.exact(value, spec.attr, within=cur[k]):
                hits += 1
    return total > 0 and hits >= 0.8 * total


def _one_of_two_lists(after: Page, old_context: set[str], a: dict[int, int], b: dict[int, int]) -> dict[int, int] | str:
    """Two disjoint sets of nodes carry the same records (record -> node): which is the list?

    The one whose surroundings look clearly more like the old records' surroundings; else, when
    the two blocks holding them are copies (the same whole text: a list rendered twice), the first
    on the page; else a one-line reason to refuse (a "related" block copying the records).
    """
    first_a, first_b = min(a.values()), min(b.values())
    like_a, like_b = (jaccard(old_context, _context_words(after, first_a)),
                      jaccard(old_context, _context_words(after, first_b)))
    if abs(like_a - like_b) >= CONTEXT_MARGIN:
        return a if like_a > like_b else b
    block_a = _lowest_common(after, list(a.values()))
    block_b = _lowest_common(after, list(b.values()))
    if (block_a >= 0 and block_b >= 0 and not after.contains(block_a, block_b) and not after.contains(block_b, block_a)
            and _copies(after, block_a, block_b, "")):
        return a if first_a < first_b else b
    return ("two sets of nodes carry the same records (a copy such as a 'related' block?): "
            f"{_describe(after, first_a)} and {_describe(after, first_b)}")


def _lowest_common(page: Page, nodes: list[int]) -> int:
    """The deepest node holding all of `nodes` (one of them when they are one)."""
    anc = nodes[0]
    while anc >= 0 and not all(page.contains(anc, n) for n in nodes):
        anc = page.parent[anc]
    return anc


def _context_words(page: Page, i: int) -> set[str]:
    """Words naming a node and its surroundings: its tag and classes, and those of three ancestors."""
    out = {"<" + page.tags[i]} | words(*page.classes(i))
    for a in page.ancestors(i, 3):
        out |= {"<" + page.tags[a]} | words(*page.classes(a), page.attrs[a].get("id") or "")
    return out


def _describe(page: Page, i: int) -> str:
    """A short human name for a node: tag.classes inside its parent's tag.classes."""
    def one(k):
        return page.tags[k] + "".join("." + c for c in page.classes(k)[:2])
    p = page.parent[i]
    return (one(p) + " > " if p >= 0 else "") + one(i)


def _find_containers(after: Page, old_raw: list, bp: Blueprint,
                     old_context: set[str] | None = None) -> tuple[list[int], list[int]] | str | None:
    """New record containers: the widest nodes that hold one record's values and no other record's.

    None when no set of containers carries the records; a one-line reason (str) when two sets
    carry them equally well and nothing tells them apart.
    """
    old_context = old_context or set()
    n_rec = len(old_raw)
    # positions (document order) of each record's value nodes, per ancestor
    spans: dict[int, dict[int, list]] = {}          # ancestor -> record -> [first, last, fields]
    for name, spec in bp.fields.items():
        distinct = _distinctive(old_raw, name)
        for r, rec in enumerate(old_raw):
            v = rec.get(name)
            if not v or (n_rec > 1 and not distinct[r]):
                continue
            hits = after.exact(v, spec.attr)
            if not hits or len(hits) > MAX_VALUE_HITS * (1 if spec.attr else 3):
                continue
            for h in hits:
                for a in after.ancestors(h, MAX_RECORD_DEPTH):  # a container holds its values below itself
                    slot = spans.setdefault(a, {}).setdefault(r, [h, h, set()])
                    slot[0], slot[1] = min(slot[0], h), max(slot[1], h)
                    slot[2].add(name)
    # a node can hold record r when r's values come before any other record's inside it
    # (css_first picks the first match, so nested records are fine)
    per_record: dict[int, list[tuple[int, int]]] = {}
    pure: set[int] = set()      # nodes holding one record's values only
    for a, recs in spans.items():
        if len(recs) == 1:
            pure.add(a)
        # r's values come before any other record's: before the smallest start among the others
        lows = sorted((lo, r) for r, (lo, _hi, _n) in recs.items())[:2]
        for r, (_lo, hi, names) in recs.items():
            if len(recs) == 1 or hi < (lows[1][0] if lows[0][1] == r else lows[0][0]):
                per_record.setdefault(r, []).append((a, len(names)))
    if not per_record:
        return None
    if n_rec == 1:
        cands = per_record[0]
        top = max(c[1] for c in cands)
        lca_like = max((a for a, s in cands if s == top), key=lambda a: after.depth[a])
        return [lca_like], [0]
    # each record's best node: most of its fields, then the widest
    def rank(a: int, s: int) -> tuple:
        # a node that also holds later records (the parent of a nested list) only when nothing purer is found
        return (s, a in pure, -after.depth[a], -a)
    # the container kind most records agree on: tag under the same kind of parent
    def sig(a: int) -> tuple:
        p = after.parent[a]
        return (after.tags[a], after.tags[p] if p >= 0 else "", tuple(sorted(after.classes(p))) if p >= 0 else ())
    by_sig: dict[tuple, dict[int, tuple[int, int]]] = {}
    for r, cands in per_record.items():
        for a, n in cands:
            slot = by_sig.setdefault(sig(a), {})
            if r not in slot or rank(a, n) > rank(*slot[r]):
                slot[r] = (a, n)
    # a second node as good for the same record, outside the first (the list twice on the page)
    twins: dict[tuple, dict[int, int]] = {}
    for r, cands in per_record.items():
        for a, n in cands:
            k = sig(a)
            best, bn = by_sig[k][r]
            if a != best and rank(a, n)[:3] == rank(best, bn)[:3] and not (after.contains(a, best) or after.contains(best, a)):
                twins.setdefault(k, {}).setdefault(r, a)
    # most records covered, then most fields found in them, then the widest (a row rather than
    # the one cell holding every value still found: the fields whose values changed sit beside it)
    def evidence(k):
        return (len(by_sig[k]), sum(n for _, n in by_sig[k].values()))
    ordered = sorted(sorted(by_sig, key=str), key=lambda k: (evidence(k), -min(after.depth[a] for a, _n in by_sig[k].values())),
                     reverse=True)
    top_sig = ordered[0]
    # a second, disjoint set of nodes carrying as many of the records (a "related" block copying
    # them, perhaps with their old values while the list's changed): the values cannot tell which
    # is the list, the surroundings may
    chosen_by_rec = {r: a for r, (a, _n) in by_sig[top_sig].items()}
    other_list = None
    for other in ordered[1:]:
        if len(by_sig[other]) != len(by_sig[top_sig]):
            break
        theirs = {r: a for r, (a, _n) in by_sig[other].items()}
        if not any(after.contains(x, y) or after.contains(y, x) for x in chosen_by_rec.values() for y in theirs.values()):
            other_list = theirs
            break
    if other_list is None and len(twins.get(top_sig, {})) == len(chosen_by_rec):
        other_list = twins[top_sig]     # the same kind of node, twice per record
    if other_list is not None:
        pick = _one_of_two_lists(after, old_context, chosen_by_rec, other_list)
        if isinstance(pick, str):
            return pick
        chosen_by_rec = pick
    # enough of the records must be found: most of those with evidence, half of all
    if len(chosen_by_rec) < max(2, (n_rec + 1) // 2) or len(chosen_by_rec) < 0.8 * len(per_record):
        return None
    chosen = sorted((a, r) for r, a in chosen_by_rec.items())
    nodes = [a for a, _ in chosen]
    if len(set(nodes)) != len(nodes):
        return None
    return nodes, [r for _, r in chosen]


def _field_in_containers(after: Page, containers: list[int], records: list[int] | None, old_raw: list,
                         name: str, spec: FieldSpec, fp: Fingerprint | None,
                         kinds: "_OldKinds") -> tuple[str, str | None, str, dict]:
    """Choose a selector for one field that gives each record's old value inside its container.

    `records` maps each container to its old record; None when the containers were found
    by structure (the values changed), and then only values of the old kind can be checked.
    """
    if records is None:
        return _changed_values_in_containers(after, containers, spec, fp, kinds[name], None)
    wants = [old_raw[r].get(name) for r in records]
    exact_sets = [set(after.exact(v, spec.attr, within=c)) if v else set() for v, c in zip(wants, containers)]
    exact_sets = [{i for i in s if i != c} for s, c in zip(exact_sets, containers)]
    have = sum(1 for s in exact_sets if s)
    present = sum(1 for v in wants if v)

    # candidates are scored on a sample of the containers (big listings), the winner is checked on all
    every = list(range(len(containers)))
    sample = _spread(every, SAMPLE)
    in_sample = set(sample)
    have_s = sum(1 for k in sample if exact_sets[k])

    def evaluate(css_or_sel, where: list[int] = every) -> tuple[int, int, float]:
        """(records whose value it gives, records whose value it misses although present, mean likeness).

        Likeness is averaged over the sampled containers only: it ranks, it does not count.
        """
        hits = wrong = sim_n = 0
        sims = 0.0
        for k in where:
            c, want, s = containers[k], wants[k], exact_sets[k]
            if isinstance(css_or_sel, str):
                node = lexbor_first_in(after, c, css_or_sel)
            else:
                node = first_in(after, css_or_sel, c)
            if node is None:
                continue
            val = after.value(node, spec.attr)
            if want is not None and val == want:
                hits += 1
                if fp is not None and k in in_sample:
                    sims += similarity(fp, after, node)
                    sim_n += 1
            elif s:
                wrong += 1
        return hits, wrong, sims / max(sim_n, 1)

    # the old selector may still be right inside the (new) containers
    h, w, _ = evaluate(spec.css)
    if present and h == present:
        return "kept", spec.css, "old selector gives every record's value", {}
    if have == 0:
        near_info = _near_in_containers(after, containers, wants, spec, fp)
        if near_info is not None:
            return near_info
        status, css, why, info = _changed_values_in_containers(after, containers, spec, fp, kinds[name], None)
        if status == "gone":
            why = f"the records' old values are nowhere in their containers; {why}"
        return status, css, why, info
    if have < max(1, 0.6 * present):
        status, css, why, info = _changed_values_in_containers(after, containers, spec, fp, kinds[name], (wants, exact_sets))
        if status == "gone":
            why = f"only {have} of {present} records still carry this field's value; {why}"
        return status, css, why, info
    # candidate selectors from the first containers holding the value
    seen: set[str] = set()
    cands: list[Selector] = []
    for c, s in zip(containers, exact_sets):
        if not s:
            continue
        for t in sorted(s)[:4]:
            for sel in relative_selectors(after, c, t, avoid_attr=spec.attr):
                css = sel.css()
                if css not in seen:
                    seen.add(css)
                    cands.append(sel)
        if len(seen) > 40:
            break
    cands.sort(key=lambda s: s.cost)
    cands = relaxations(spec.css) + cands   # loosened old selectors first: they keep the author's intent
    scored = []
    for sel in cands[:MAX_FIELD_SELECTORS]:
        h, w, sim = evaluate(sel, sample)
        if h == 0:
            continue
        scored.append((h - 2 * w, sim, -(sel.cost if isinstance(sel, Selector) else 0.0), sel))
        if h == have_s and w == 0 and len(scored) >= 3:
            break
    if not scored:
        return "gone", None, "no selector finds the value in the containers", {}
    scored.sort(key=lambda t: (-t[0], -t[1], -t[2], _css(t[3])))
    best = scored[0]
    net, sim, _, sel = best
    if net < max(1, round(0.8 * have_s)):
        return "gone", None, f"the best selector finds only {net} of {have_s} records' values", {}
    css = _css(sel)
    h, w, _ = evaluate(css, sample)  # check with lexbor itself
    if h - 2 * w != net:
        return "gone", None, "selector disagreed under verification", {}
    if len(sample) < len(containers):
        h, w, _ = evaluate(css)  # and on every container
        net = h - 2 * w
        if net < max(1, round(0.8 * have)):
            return "gone", None, f"the best selector finds only {net} of {have} records' values", {}
    if fp is not None and sim < MIN_SIM_EXACT and _is_weak_all(wants):
        return "ambiguous", None, f"short values in unlike places (likeness {sim:.2f})", {}
    if fp is not None and sim < MIN_SIM_WEAK and _is_weak_all(wants):
        # a short value found again only in another kind of node (tag) that was another part of the
        # old records (a parameter's name in the parameter list, where the signature's changed)
        found = [n for n in (lexbor_first_in(after, containers[k], css) for k in sample) if n is not None]
        foreign = sum(1 for n in found if after.tags[n] != fp.tag and _node_sig(after, n) in kinds[name].foreign)
        if found and foreign * 2 > len(found):
            return "ambiguous", None, (f"short values found only in nodes like another part of the old records "
                                       f"({css!r}, likeness {sim:.2f})"), {}
    conf = (0.4 + 0.3 * min(1.0, net / max(present, 1)) + 0.3 * min(1.0, sim + 0.3)) if present else 0.5
    return "healed", css, f"finds {h} of {len(containers)} records' values", {
        "selector": css, "likeness": round(sim, 3), "confidence": round(min(conf, 1.0), 3)}


def _css(sel) -> str:
    return sel if isinstance(sel, str) else sel.css()


def _is_weak_all(values: list) -> bool:
    vals = [v for v in values if v]
    return not vals or all(_is_weak(v) for v in vals)


def _near_in_containers(after: Page, containers, wants, spec: FieldSpec, fp: Fingerprint | None):
    """Values edited a little (a word added): one selector giving near values in most containers.

    Looked for in a sample of the containers (near matching reads each container's subtree),
    then the selector is checked on all of them.
    """
    if fp is None:
        return None
    sample = _spread(list(range(len(containers))), SAMPLE)
    tops: list[int | None] = []
    for k in sample:
        c, v = containers[k], wants[k]
        near = after.near(v, spec.attr, within=c) if v else []
        near = [(i, cl) for i, cl in near if i != c and cl >= 0.5]
        if not near:
            tops.append(None)
            continue
        best = max(near, key=lambda t: (t[1], similarity(fp, after, t[0]), -t[0]))
        tops.append(best[0])
    found = [(containers[k], t) for k, t in zip(sample, tops) if t is not None]
    if len(found) < max(1, round(0.8 * len(sample))):
        return None
    c0, t0 = found[0]
    for sel in relative_selectors(after, c0, t0, avoid_attr=spec.attr)[:MAX_FIELD_SELECTORS]:
        css = sel.css()
        if all(lexbor_first_in(after, c, css) == t for c, t in found):
            sim = sum(similarity(fp, after, t) for _, t in found) / len(found)
            if sim < MIN_SIM_NEAR:
                return None
            if len(sample) < len(containers):
                # every container: the selector's node nearly carries that record's old value
                near_all = 0
                for c, v in zip(containers, wants):
                    node = lexbor_first_in(after, c, css)
                    text = after.value(node, spec.attr) if node is not None and node != c else None
                    if v and text and near_closeness(v, text, spec.attr) >= 0.5:
                        near_all += 1
                if near_all < max(1, round(0.8 * len(containers))):
                    return None
            return "healed", css, "old values found nearly (edited text)", {"selector": css, "likeness": round(sim, 3),
                                                                             "confidence": 0.6}
    return None


# ---------------------------------------------------------------------------
# records whose values changed along with the layout
# ---------------------------------------------------------------------------

SAMPLE = 50               # containers scored per candidate; the winner is then checked on all
MIN_KIND_SHARE = 0.8      # share of containers where a selector must give a value of the old kind
_STRONG_LABEL_KINDS = ("column", "for", "dt", "label")


def _spread(seq: list, k: int) -> list:
    """Up to k members of seq, spread evenly through it (first and last included)."""
    n = len(seq)
    if n <= k:
        return list(seq)
    return [seq[(j * (n - 1)) // (k - 1)] for j in range(k)]


def _value_kind(value: str) -> str:
    """Coarse kind of a value: numbers stay numbers, dates dates, links links, any text is text."""
    shape = text_shape(value)
    if shape in ("number", "money"):
        return "number"
    if shape in ("word", "short", "text"):
        return "text"
    return shape


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
    def of(cls, before: Page, old_containers: list[int], old_raw: list, name: str, spec: FieldSpec) -> "_OldKind":
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
        return cls(frozenset(_value_kind(v) for v in vals), len(set(vals)) > 1, frozenset(others - own), spec.type,
                   single)

    def fits(self, value: str | None) -> bool:
        if not value or _value_kind(value) not in self.kinds:
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

    def conflicts(self, other: "_Trial") -> bool:
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
    if runner is not None and best.score - runner.score < MARGIN:
        return "ambiguous", None, (f"values changed; {best.css!r} and {runner.css!r} both give values of the old kind "
                                   f"({best.score:.2f} vs {runner.score:.2f})"), {}
    if kind.single:
        # one node per old record, but the winner matches two alike nodes giving different values of
        # the old kind in a record (a price now and a price before): its first match is a coin toss
        torn = 0
        for c in sample[:12]:
            vals = {v for v in (after.value(after.index_of(n), spec.attr) for n in after.nodes[c].css(best.css))
                    if kind.fits(v)}
            torn += len(vals) > 1
        if torn * 2 > min(len(sample), 12):
            return "ambiguous", None, (f"values changed; {best.css!r} now finds two nodes with different values "
                                       f"of the old kind in {torn} of {min(len(sample), 12)} records"), {}
    if fp.label and fp.label_kind in _STRONG_LABEL_KINDS:
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


def _containers_by_shape(bp: Blueprint, after: Page, cur: list, depth_in_record: dict, fps: dict,
                         old_kind: dict) -> list[int] | None:
    """Record containers when no old value is left: repeated nodes where the old field selectors give old kinds.

    Candidates: what the old items selector and its loosened forms match, and the ancestors
    of the old field selectors' matches at the old record depth (and one above, for an added
    wrapper), grouped by tag and parent kind. A candidate list passes when every required
    field's old selector gives values of the old kind in MIN_KIND_SHARE of it; the best
    must beat any other list (not nested one-to-one in it) by MARGIN.
    """
    fields = [(n, s) for n, s in bp.fields.items() if n in fps and old_kind[n].kinds]
    if not fields or not any(s.required for _n, s in fields):
        return None
    lists: list[list[int]] = []
    if cur and all(c is not None for c in cur):
        lists.append(cur)
    for css in relaxations(bp.items):
        lists.append([after.index_of(n) for n in after.tree.css(css)])
    for name, spec in fields:
        hits = [after.index_of(n) for n in after.tree.css(spec.css)]
        for up in (depth_in_record[name], depth_in_record[name] + 1):
            groups: dict[tuple, set[int]] = {}
            for h in hits:
                a = h
                for _ in range(up):
                    a = after.parent[a] if a >= 0 else -1
                if a >= 0:
                    p = after.parent[a]
                    sig = (after.tags[a], after.tags[p] if p >= 0 else "", tuple(sorted(after.classes(p))) if p >= 0 else ())
                    groups.setdefault(sig, set()).add(a)
            lists.extend(sorted(g) for _s, g in sorted(groups.items(), key=lambda kv: min(kv[1])))
    seen: set[tuple] = set()
    scored = []
    for nodes in lists:
        key = tuple(nodes)
        if key in seen or len(nodes) < 2 or any(after.contains(a, b) for a, b in zip(nodes, nodes[1:])):
            continue
        seen.add(key)
        if len(seen) > 24:
            break
        sample = _spread(nodes, SAMPLE)
        total, sims, ok = 0.0, 0.0, True
        for name, spec in fields:
            t = _try_in_containers(after, sample, spec.css, spec, fps[name], old_kind[name], 0)
            good = t is not None and t.share >= MIN_KIND_SHARE and t.foreign <= 0.2
            if good and old_kind[name].distinct and len(sample) >= 3:
                good = len({after.value(n, spec.attr) for n in t.nodes if n is not None}) > 1
            if not good and spec.required:
                ok = False
                break
            if good:
                total += t.share
                sims += t.sim
        if ok and total:
            if cur and key == tuple(cur):
                # the old items selector still finds records in which every field's old selector
                # gives values of the old kind: the blueprint still works, with other values
                return list(cur)
            scored.append((total / len(fields) + sims / len(fields), key))
    if not scored:
        return None
    scored.sort(key=lambda t: (-t[0], t[1]))
    best_score, best = scored[0]
    for score, other in scored[1:]:
        nested = len(other) == len(best) and all(after.contains(a, b) or after.contains(b, a) for a, b in zip(best, other))
        if not nested and best_score - score < MARGIN:
            return None
    return list(best)
