"""The built-in healer on single-record pages (a blueprint without `items`).

Each field's old node is fingerprinted on the last good page and looked for on the
current one: its old value found again (exactly, then nearly), after dropping look-alikes
the old selector passed over and folding copies of one block; a value changed in place;
the record (the place where the other fields sit as before); its label. Ambiguities are
refused with one line naming what was ambiguous.
"""

from __future__ import annotations

from dataclasses import replace

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.checks.placeholders import PLACEHOLDER
from healerd.core.heal.evidence import (
    IN_PLACE_DOUBT,
    IN_PLACE_MARGIN,
    MARGIN,
    MIN_NEAR_CLOSENESS,
    MIN_SIM_EXACT,
    MIN_SIM_IN_PLACE,
    MIN_SIM_KEEP,
    MIN_SIM_LABEL,
    MIN_SIM_LABEL_SAME_TAG,
    MIN_SIM_NEAR,
    MIN_SIM_UNIQUE,
    MIN_SIM_WEAK,
    RECORD_MARGIN,
    RECORD_MAX_DISTANCE,
    RECORD_MAX_DISTANCE_SOLE,
    STRONG_LABEL_KINDS,
    HealResult,
    describe,
    is_weak,
    value_kind,
)
from healerd.core.heal.fields import single_by_neighbourhood
from healerd.core.heal.fields.merged_labels import merged_rival
from healerd.core.heal.fields.moved_attr import lone_carrier, other_attr_single
from healerd.core.heal.fields.single_anchored import place_by_anchors
from healerd.core.heal.fields.single_by_number import place_by_number
from healerd.core.heal.fields.single_by_path import place_by_path
from healerd.core.heal.fields.single_by_position import PlacedSelectors, placed_selector
from healerd.core.heal.fields.single_candidates import (
    Candidate,
    _distractors,
    _exact_candidates,
    _label_candidates,
    _near_candidates,
    _without_copies,
    _without_distractor_twins,
)
from healerd.core.heal.fields.single_slid_row import slid_into_place
from healerd.core.heal.fields.text_to_attr import attrs_for_text_single
from healerd.core.heal.page.fingerprint import (
    Fingerprint,
    Page,
    fingerprint,
    norm_label,
    similarity,
    text_shape,
)
from healerd.core.heal.page.positions import steps_to_common
from healerd.core.heal.page.selectors import relaxed_first, single_selector


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
        slid = slid_into_place(before, old_nodes[name], after, cur)
        status, cand, why, runner = _locate(fps[name], old_value, spec, after, None if slid else cur, partner_values,
                                            distractors, others, before)
        if slid and status == "gone":
            why = f"{why}; the old selector's node now sits beside {_short(slid)}, another row of the last good page"
        decisions[name] = (status, cand, why)
        details[name] = _detail(status, cand, runner, why, after, spec)

    # a text field whose old value now sits in a data attribute (a data-value beside a placeholder),
    # before any placing by position: located through that attribute as through its text (also when
    # "changed in place" only because the old node now shows a placeholder or nothing)
    moved: dict[str, str] = {}
    for name, (status, _cand, _why) in list(decisions.items()):
        spec = bp.fields[name]
        blank = status == "kept" and _shows_no_value(after, root_a.css_first(spec.css), old_raw.get(name))
        carriers = attrs_for_text_single(after, old_raw.get(name)) if (status == "gone" or blank) and not spec.attr else []
        if carriers and name in fps:
            _through_attr(bp, before, after, fps, old_raw, name, carriers, decisions, details, moved, from_text=True)

    # fields the value alone could not place: their relation to the fields that were placed
    _place_by_record(bp, before, after, old_nodes, old_raw, fps, decisions, details)
    # numeric fields whose words are gone: the bare number where the record places it (staged)
    for name, (cand, why) in place_by_number(bp, before, after, old_nodes, old_raw, fps, decisions).items():
        decisions[name] = ("healed", cand, why)
        details[name] = _detail("healed", cand, None, why, after, bp.fields[name])
    # two places carrying the old value alike, the record no help: the path from the root (staged)
    for name, (cand, why) in place_by_path(bp, before, after, old_nodes, old_raw, fps, decisions).items():
        decisions[name] = ("healed", cand, why)
        details[name] = _detail("healed", cand, None, why, after, bp.fields[name])
    # ... or, still alike, the tree around the old node: its ancestors' children (staged)
    _place_by_neighbourhood(bp, before, after, old_nodes, old_raw, fps, decisions, details)
    # the old value gone: placed as before relative to the fields found again (staged)
    for name, (cand, why) in place_by_anchors(bp, before, after, old_nodes, old_raw, fps, decisions).items():
        decisions[name] = ("healed", cand, why)
        details[name] = _detail("healed", cand, None, why, after, bp.fields[name])

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

    # an attribute field whose old value is now carried by another attribute (a date moved from
    # abbr[title] to time[datetime]): located again through that attribute, at a lower confidence
    for name, (status, _cand, _why) in list(decisions.items()):
        spec = bp.fields[name]
        new_attr = other_attr_single(after, old_raw.get(name), spec.attr) if status == "gone" else None
        if new_attr is not None and name in fps:
            _through_attr(bp, before, after, fps, old_raw, name, [new_attr], decisions, details, moved)

    _drop_collisions_single(bp, after, old_nodes, decisions, details)
    _settle_optional_single(bp, after, decisions, details)
    gone = [n for n, (st, _, _) in decisions.items() if st in ("gone", "ambiguous")]
    if gone:
        refusal = _refusal(gone, decisions, details)
        refusal.candidate = _proposal(bp, after, gone, decisions, details, old_raw, fps)
        return refusal

    new_fields = dict(bp.fields)
    changed: dict[str, str] = {}
    selector_for_node: dict[tuple[int, str | None], str | None] = {}
    placed = PlacedSelectors(before, after, [(v, s.attr) for n, s in bp.fields.items() if (v := old_raw.get(n))])
    for name, (status, cand, _why) in decisions.items():
        if status != "healed" or cand is None:
            continue
        spec = bp.fields[name]
        attr = moved.get(name, spec.attr)
        if cand.node == after.index_of(root_a.css_first(spec.css)) and name not in moved:
            continue   # the old selector already gives this node: nothing to change
        key = (cand.node, attr)
        if key not in selector_for_node:
            selector_for_node[key] = (single_selector(after, cand.node, avoid_attr=attr)
                                      or relaxed_first(after, spec.css, cand.node)
                                      or placed.pick(cand.node, attr))
        css = selector_for_node[key]
        if css is None:
            details.setdefault(name, {})["why"] = "found the node but no selector picks it out"
            return _refusal([name], {**decisions, name: ("gone", None, "no unique selector")}, details)
        new_fields[name] = FieldSpec(name, css, spec.type, attr, spec.required)
        changed[name] = css
        details[name]["selector"] = css
    if not changed:
        # "still find their fields" must be true: a field the old records had a value for finds none
        # on the current page (an empty page, a last good page that no longer matches its records)
        now = extract(after.tree, bp).raw
        lost = [n for n, spec in bp.fields.items()
                if spec.required and old_records.get(n) is not None and now.get(n) is None]
        if lost:
            for n in lost:
                why = "the old selector finds nothing and the old value was not found elsewhere"
                decisions[n] = ("gone", None, why)
                details[n] = {**details.get(n, {}), "status": "gone", "why": why}
            return _refusal(lost, decisions, details)
        return HealResult(True, bp, "the old selectors still find their fields", {}, unchanged=True,
                          confidence=0.8, details=details)
    new_bp = bp.with_fields(new_fields)
    # verification: the new blueprint gives the intended values on the current page
    check = extract(after.tree, new_bp).raw
    for name in changed:
        cand = decisions[name][1]
        if check.get(name) != after.value(cand.node, moved.get(name, bp.fields[name].attr)):
            return _refusal([name], decisions, details, note="verification failed")
    conf = min(_confidence(decisions[n][1]) for n in changed)
    summary = "; ".join(f"{n}: {decisions[n][2]} -> {changed[n]}" for n in changed)
    return HealResult(True, new_bp, f"{summary} (confidence {conf:.2f})", changed, confidence=conf, details=details,
                      extracted=check)


def _through_attr(bp: Blueprint, before: Page, after: Page, fps: dict[str, Fingerprint], old_raw: dict, name: str,
                  names: list[str], decisions: dict, details: dict, moved: dict[str, str], from_text: bool = False) -> None:
    """Locate field `name` again through the attribute, among `names`, now carrying its old value.

    From another attribute the field is found at a lower confidence ("moved"), and one node alone
    carrying a telling value takes the field wherever it is; from its text, as through the text
    itself, in a node like the old one only (a lone unlike carrier, a favourite button's
    `data-title`, is a copy of the value, not the field).
    Several attributes leading to different nodes alike: none taken.
    """
    spec = bp.fields[name]
    others = {v for m, v in old_raw.items() if m != name and v}
    found = []
    for new_attr in names:
        st, cand, why, runner = _locate(fps[name], old_raw[name], replace(spec, attr=new_attr), after, None, {},
                                        [], others, before)
        if from_text and cand is not None and (cand.kind == "moved" or cand.sim < MIN_SIM_EXACT):
            # from the text, only a node like the old one counts, label or not: a value in an unlike
            # place (a button's title repeating a heading) is a copy, not the field
            st, cand = "gone", None
        lone = lone_carrier(after, old_raw[name], new_attr) if st == "gone" and not from_text else None
        if lone is not None:
            # the value is no chance value and one node alone carries it: the field moved with it,
            # whatever the node looks like now (the theme that moved the attribute changed the markup)
            st, why = "healed", "the old value, carried by one node alone"
            cand = Candidate(lone, 1.0, similarity(fps[name], after, lone), False, "moved")
        if st == "healed" and cand is not None:
            found.append((cand, new_attr, why, runner))
    found.sort(key=lambda f: -f[0].sim)
    if not found or len(found) > 1 and found[1][0].node != found[0][0].node and found[0][0].sim - found[1][0].sim < MARGIN:
        return
    cand, new_attr, why, runner = found[0]
    if from_text:
        why = f"{why}, now in its attribute {new_attr!r} (its text no longer says it)"
    else:
        cand.kind = "moved"
        why = f"{why}, now in its attribute {new_attr!r} (no longer in {spec.attr!r})"
    moved[name] = new_attr
    decisions[name] = ("healed", cand, why)
    details[name] = {**_detail("healed", cand, runner, why, after, spec), "attr": new_attr}


def _shows_no_value(after: Page, node, old_value: str | None) -> bool:
    """True when the old selector's node now shows nothing or a placeholder where a value was."""
    i = after.index_of(node) if node is not None else None
    text = after.value(i, None) if i is not None else None
    return bool(old_value) and (not text or PLACEHOLDER.match(text) is not None)


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
    weak = is_weak(old_value)
    exact = _exact_candidates(fp, old_value, spec.attr, after, partner_values, None)
    exact = _without_copies(after, _without_distractor_twins(fp, distractors, after, spec.attr, exact), old_value)
    in_place = _in_place(fp, spec, after, cur, others, before)
    if in_place is not None:
        if not exact or exact[0].sim < in_place - IN_PLACE_MARGIN:
            return "kept", None, (f"value changed in place: the old selector's node still looks the same "
                                  f"(likeness {in_place:.2f})" + (f"; the old value elsewhere looks less alike "
                                                                  f"({exact[0].sim:.2f})" if exact else "")), None
        return "ambiguous", None, (f"{IN_PLACE_DOUBT} {_short(after.value(cur, spec.attr))} "
                                   f"(changed in place?) and the old value is at {describe(after, exact[0].node)} "
                                   f"(moved?), alike {in_place:.2f} vs {exact[0].sim:.2f}"), exact[0]
    if exact:
        best, runner = exact[0], (exact[1] if len(exact) > 1 else None)
        # a short value with a loose label (the text before it, often another field's value) found in
        # an unlike place (a "7" in a pager link) is chance: only a real label (column, <label>, <dt>) vouches
        vouched = best.label_match and (not weak or fp.label_kind in STRONG_LABEL_KINDS)
        floor = MIN_SIM_WEAK if (weak and not vouched) else MIN_SIM_EXACT
        if best.sim < floor and not vouched:
            # a distinctive value found once on the page, where the last good page had it only at the
            # field's own node: the field moved (an author now in a footer link), at a low confidence
            if (runner is None and not weak and _telling(old_value) and best.sim >= MIN_SIM_UNIQUE
                    and not distractors and len(after.exact(old_value, spec.attr)) <= len(after.chain_members(best.node))):
                best.kind = "moved"
                return "healed", best, f"the old value, found once on the page, moved (likeness {best.sim:.2f})", None
            return "gone", None, f"the old value is only found in unlike places (likeness {best.sim:.2f})", best
        if runner is not None and best.score - runner.score < MARGIN:
            return "ambiguous", None, f"two places carry the old value ({best.score:.2f} vs {runner.score:.2f})", runner
        rival = None if best.label_match else merged_rival(after, fp, old_value, spec.attr, best.node, best.sim)
        if rival is not None:
            return "ambiguous", None, (f"the old value is at {describe(after, best.node)} and, with a label merged in, "
                                       f"at {describe(after, rival)}, more like the old node"), best
        return "healed", best, "old value found" + (" with its label" if best.label_match else ""), runner
    near = _near_candidates(fp, old_value, spec.attr, after, partner_values, None)
    if near:
        best, runner = near[0], (near[1] if len(near) > 1 else None)
        # a long text merely containing the old value (a breadcrumb holding the old name) needs its label
        if best.label_match or (best.sim >= MIN_SIM_NEAR and best.closeness >= MIN_NEAR_CLOSENESS):
            # two nodes of one kind both extend the old value as much ("... XL" and "... XS"): look-alikes
            # that only a real label can tell apart
            twin = (runner is not None and runner.closeness >= best.closeness
                    and after.tags[runner.node] == after.tags[best.node]
                    and not (best.label_match and fp.label_kind in STRONG_LABEL_KINDS))
            if not twin and (runner is None or best.score - runner.score >= MARGIN):
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
        shown = _shown_before(before, after.value(cur, spec.attr), spec.attr, fp)
        if sim >= MIN_SIM_KEEP and (same_label or not fp.label) and not shown:
            return "kept", None, "value changed in place (same node kind)", None
        if shown:
            return "gone", None, (f"the old value is nowhere on the page, and the old selector now reads {shown}, "
                                  "which the last good page showed elsewhere (another record in its place?)"), None
    return "gone", None, "the old value is nowhere on the page", None


def _shown_before(before: Page | None, value: str | None, attr: str | None, fp: Fingerprint | None = None) -> str:
    """The value, quoted, when the last good page showed it — a short one only in a look-alike of the old
    node (its tag and four ancestors' tags: the next item of its list) —; else ""."""
    hits = before.exact(value, attr) if before is not None and value else []
    if hits and is_weak(value or "") and before is not None:
        hits = [] if fp is None else [j for j in hits if before.tags[j] == fp.tag
                                      and [before.tags[a] for a in before.ancestors(j, 4)] == fp.ancestor_tags]
    return _short(value) if hits else ""


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
    if not value or value_kind(value) != value_kind(fp.value) or value in others:
        return None
    if before is not None and _shown_before(before, value, spec.attr, fp):
        return None
    if (fp.label and fp.label_kind in STRONG_LABEL_KINDS and after.label(cur) != fp.label
            and fp.label not in {norm_label(o) for o in others}):
        # (a label that was another field's value, a glossary's term, changes with that field)
        return None
    if spec.attr and spec.attr in fp.attrs:
        # the field is this attribute: its value changing is the change itself, not unlikeness
        fp = replace(fp, attrs={**fp.attrs, spec.attr: value})
    sim = similarity(fp, after, cur, value)   # the shape compared is the field's own value's
    if text_shape(value) != fp.shape:
        sim += 0.1   # same kind of value (a name that grew a word): the shape part of likeness holds
    return sim if sim >= MIN_SIM_IN_PLACE else None


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
        olds = {a: steps_to_common(before, old_nodes[name], o) for a, (o, _n) in mine.items()}

        def distance(c: Candidate) -> float:
            ds = []
            for a, (_o, n) in mine.items():  # noqa: B023 - called within this iteration
                was, now = olds[a], steps_to_common(after, c.node, n)  # noqa: B023 - called within this iteration
                if was is None or now is None:
                    ds.append(9.0)
                else:
                    ds.append(abs(was[0] - now[0]) + abs(was[1] - now[1]))
            return sum(ds) / len(ds)
        ranked = sorted(((distance(c), -c.score, c.node, c) for c in cands), key=lambda t: t[:3])
        best_d, best = ranked[0][0], ranked[0][3]
        runner_d = ranked[1][0] if len(ranked) > 1 else None
        # unlike the old node, it is placed only when it is the one place carrying a distinctive value
        # (value and record agree; a low confidence: a person approves it)
        faint = best.sim < MIN_SIM_EXACT and not best.label_match
        if faint and (runner_d is not None or is_weak(value) or best.sim < MIN_SIM_UNIQUE):
            continue
        if (is_weak(value) and best.sim < MIN_SIM_WEAK and fps[name].tag != "a"
                and any(after.tags[m] == "a" for m in after.chain_members(best.node))):
            continue   # a short value now only a link's text (a pager's "7", a menu) where it was no link: chance
        if (best_d > (RECORD_MAX_DISTANCE if runner_d is not None else RECORD_MAX_DISTANCE_SOLE)
                or (runner_d is not None and runner_d - best_d < RECORD_MARGIN)):
            if status == "ambiguous" and runner_d is not None:
                why = (f"{why}; nor does the record tell them apart (distance to the other fields "
                       f"{best_d:.1f} vs {runner_d:.1f})")
                decisions[name] = (status, None, why)
                details[name] = {**details.get(name, {}), "why": why, "proposal_node": best.node}
            continue
        best.kind = "moved" if faint else "record"
        why = (f"old value found in {len(cands)} place(s); the one where the other fields "
               f"({', '.join(sorted(mine))}) sit as before (distance {best_d:.1f}, likeness {best.sim:.2f})")
        decisions[name] = ("healed", best, why)
        details[name] = _detail("healed", best, None, why, after, spec)


def _place_by_neighbourhood(bp: Blueprint, before: Page, after: Page, old_nodes: dict, old_raw: dict, fps: dict,
                            decisions: dict, details: dict) -> None:
    """Fields whose old value two places carry, settled by the tree around the old node (`fields.single_by_neighbourhood`)."""
    for name, (status, _cand, why) in list(decisions.items()):
        if status != "ambiguous" or not why.startswith("two places carry") or old_nodes.get(name) is None:
            continue
        spec = bp.fields[name]
        cands = _exact_candidates(fps[name], old_raw[name], spec.attr, after, {}, None)
        node, how = single_by_neighbourhood.pick(before, old_nodes[name], after, [c.node for c in cands])
        if node is None:
            decisions[name] = (status, None, f"{why}; {how}")
            details[name] = {**details.get(name, {}), "why": f"{why}; {how}"}
            continue
        best = next(c for c in cands if c.node == node)
        best.kind = "neighbourhood"
        why = f"old value found in {len(cands)} places; {how}"
        decisions[name] = ("healed", best, why)
        details[name] = _detail("healed", best, None, why, after, spec)


def _telling(value: str) -> bool:
    """Long enough, and words rather than a bare code or number, not to turn up twice by chance."""
    return len(value) >= 8 and " " in value.strip() and any(ch.isalpha() for ch in value)


def _confidence(c: Candidate | None) -> float:
    if c is None:
        return 0.0
    if c.kind == "neighbourhood":
        return single_by_neighbourhood.CONFIDENCE
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


def _proposal(bp: Blueprint, after: Page, refused: list[str], decisions: dict, details: dict, old_raw: dict,
              fps: dict) -> Blueprint | None:
    """The refusal's best guess (HealResult.candidate): only when every refused field was ambiguous
    (never gone), each at its likeliest place (the record's distances, else the best-scored place
    carrying the old value), with a selector lexbor confirms gives that node's value."""
    if any(decisions[n][0] != "ambiguous" for n in refused):
        return None
    root = after.tree.root
    fields = dict(bp.fields)
    for name, (status, cand, _why) in decisions.items():
        spec = bp.fields[name]
        node = cand.node if status == "healed" and cand is not None else None
        if name in refused:
            node = details.get(name, {}).get("proposal_node")
            if node is None and name in fps and old_raw.get(name):
                found = _exact_candidates(fps[name], old_raw[name], spec.attr, after, {}, None)
                node = found[0].node if found else None
            if node is None:
                return None
        if node is None or node == after.index_of(root.css_first(spec.css)):
            continue
        css = (single_selector(after, node, avoid_attr=spec.attr) or relaxed_first(after, spec.css, node)
               or placed_selector(after, node, avoid_attr=spec.attr))
        if css is None:
            return None
        fields[name] = FieldSpec(name, css, spec.type, spec.attr, spec.required)
    guess = bp.with_fields(fields)
    got = extract(after.tree, guess).raw
    for name in refused:
        node = details.get(name, {}).get("proposal_node")
        if node is not None and got.get(name) != after.value(node, bp.fields[name].attr):
            return None
    return guess if guess.to_json() != bp.to_json() else None
