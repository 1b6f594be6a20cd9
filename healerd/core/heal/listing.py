"""The built-in healer on listing pages (a blueprint with `items`).

First the record containers: the old items selector, nodes carrying the old records'
values (two lists carrying them are told apart by their surroundings or refused), or,
when every value changed, repeated nodes in which the old field selectors give values of
the old kinds. Then each field inside the containers, scored on a sample and checked on
all. Ambiguities are refused with one line naming what was ambiguous.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract, first_number
from healerd.core.heal.evidence import (
    CONTEXT_MARGIN,
    MARGIN,
    MAX_FIELD_SELECTORS,
    MAX_RECORD_DEPTH,
    MAX_VALUE_HITS,
    MIN_KIND_SHARE,
    MIN_SIM_EXACT,
    MIN_SIM_LABEL,
    MIN_SIM_LABEL_SAME_TAG,
    MIN_SIM_NEAR,
    MIN_SIM_WEAK,
    SAMPLE,
    STRONG_LABEL_KINDS,
    HealResult,
    copies,
    describe,
    is_weak,
    value_kind,
)
from healerd.core.heal.fingerprint import (
    Fingerprint,
    Page,
    fingerprint,
    jaccard,
    near_closeness,
    similarity,
    words,
)
from healerd.core.heal.selectors import (
    Selector,
    first_in,
    items_selector,
    lexbor_first_in,
    relative_selectors,
    relaxations,
    relaxed_selector,
)


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
        return HealResult(False, None, reason, {}, details=details,
                          candidate=_proposal(bp, after, gone, decisions, details, new_fields, items_css, containers,
                                              old_raw))
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
            and copies(after, block_a, block_b, "")):
        return a if first_a < first_b else b
    return ("two sets of nodes carry the same records (a copy such as a 'related' block?): "
            f"{describe(after, first_a)} and {describe(after, first_b)}")


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
                         kinds: _OldKinds) -> tuple[str, str | None, str, dict]:
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
        return "ambiguous", None, f"short values in unlike places (likeness {sim:.2f})", {"proposal": css}
    if fp is not None and sim < MIN_SIM_WEAK and _is_weak_all(wants):
        # a short value found again only in another kind of node (tag) that was another part of the
        # old records (a parameter's name in the parameter list, where the signature's changed)
        found = [n for n in (lexbor_first_in(after, containers[k], css) for k in sample) if n is not None]
        foreign = sum(1 for n in found if after.tags[n] != fp.tag and _node_sig(after, n) in kinds[name].foreign)
        if found and foreign * 2 > len(found):
            return "ambiguous", None, (f"short values found only in nodes like another part of the old records "
                                       f"({css!r}, likeness {sim:.2f})"), {"proposal": css}
    conf = (0.4 + 0.3 * min(1.0, net / max(present, 1)) + 0.3 * min(1.0, sim + 0.3)) if present else 0.5
    return "healed", css, f"finds {h} of {len(containers)} records' values", {
        "selector": css, "likeness": round(sim, 3), "confidence": round(min(conf, 1.0), 3)}


def _css(sel) -> str:
    return sel if isinstance(sel, str) else sel.css()


def _is_weak_all(values: list) -> bool:
    vals = [v for v in values if v]
    return not vals or all(is_weak(v) for v in vals)


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
    if runner is not None and best.score - runner.score < MARGIN:
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


def _proposal(bp: Blueprint, after: Page, refused: list[str], decisions: dict, details: dict,
              new_fields: dict[str, FieldSpec], items_css: str | None, containers: list[int],
              old_raw: list[dict]) -> Blueprint | None:
    """The refusal's best guess (HealResult.candidate): only when every refused field was ambiguous
    with a likeliest selector, the guess gives as many records as there are containers, and for
    each refused field at least half of the old values again (values merely "of the old kind"
    may be another field's, or data that is gone: no guess then)."""
    if any(decisions[n][0] != "ambiguous" or not details.get(n, {}).get("proposal") for n in refused):
        return None
    fields = dict(new_fields)
    for n in refused:
        spec = bp.fields[n]
        fields[n] = FieldSpec(n, details[n]["proposal"], spec.type, spec.attr, spec.required)
    if any(n not in fields for n in bp.fields):
        return None
    guess = bp.with_fields({n: fields[n] for n in bp.fields}, items=items_css)
    try:
        got = extract(after.tree, guess)
    except Exception:
        return None
    if got.item_count != len(containers) or not isinstance(got.raw, list):
        return None
    for n in refused:
        old = {r.get(n) for r in old_raw if r.get(n)}
        now = {r.get(n) for r in got.raw if isinstance(r, dict) and r.get(n)}
        if not old or len(old & now) * 2 < len(old):
            return None
    return guess

