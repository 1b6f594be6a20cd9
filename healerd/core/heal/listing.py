"""The built-in healer on listing pages (a blueprint with `items`).

First the record containers: the old items selector, nodes carrying the old records'
values (two lists carrying them are told apart by their surroundings or refused), or,
when every value changed, repeated nodes in which the old field selectors give values of
the old kinds. Then each field inside the containers, scored on a sample and checked on
all. Ambiguities are refused with one line naming what was ambiguous.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.checks.placeholders import PLACEHOLDER
from healerd.core.heal.evidence import (
    MIN_KIND_SHARE,
    SAMPLE,
    HealResult,
)
from healerd.core.heal.fields.listing_anchored import place_changed_fields
from healerd.core.heal.fields.listing_attr_to_text import text_was_a_copy
from healerd.core.heal.fields.listing_by_cell import ALIGNED_CONFIDENCE, aligned_cell
from healerd.core.heal.fields.listing_by_label import by_old_label, no_old_value_left
from healerd.core.heal.fields.listing_by_siblings import all_of_tag, through_siblings_change
from healerd.core.heal.fields.listing_by_value import SHORT_UNLIKE, _field_in_containers
from healerd.core.heal.fields.moved_attr import other_attr_listing
from healerd.core.heal.fields.text_to_attr import attr_for_text_listing
from healerd.core.heal.page.extraction import extract_on
from healerd.core.heal.page.fingerprint import (
    Fingerprint,
    Page,
    fingerprint,
)
from healerd.core.heal.page.selectors import (
    items_selector,
    lexbor_first_in,
    relaxed_selector,
)
from healerd.core.heal.records.containers import (
    _containers_by_shape,
    _containers_hold_records,
    _context_words,
    _find_containers,
    _lowest_common,
    _passed_over_context,
)
from healerd.core.heal.records.kept_by_one_field import one_field_reads_every_record
from healerd.core.heal.records.old_kinds import _OldKinds, _spread
from healerd.core.heal.records.split_listing import old_list_in_places, take_back_left_out


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
    by_values = False     # containers found by the old values (not the old items selector, not by shape)
    reader = None if _containers_hold_records(after, cur, old_raw, bp) else one_field_reads_every_record(
        after, cur, old_raw, bp)
    if reader is not None or _containers_hold_records(after, cur, old_raw, bp):
        containers = cur
        records = list(range(len(cur)))
        details["items"] = {"status": "kept", "why": "old items selector still finds the records" + (
            f" (field {reader!r} reads every record's old value in them)" if reader else "")}
    else:
        found = _find_containers(after, old_raw, bp, _context_words(before, old_containers[0]),
                                 _passed_over_context(before, old_containers, old_raw, bp))
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
            by_values = True
            why = f"{len(containers)} containers carrying the old records' values"
            if _old_items_inside(after, cur, containers, records, old_raw, bp):
                containers = cur
                why = f"{why}: the old items selector's nodes, one inside each, holding as many of them"
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
            items_css = (relaxed_selector(after, bp.items, containers)
                         or items_selector(after, containers, _copies_beside(after, containers, records, old_raw, bp)))
            if items_css is None:
                details["items"] = {"status": "gone", "why": "no selector picks out exactly the record containers"}
                return HealResult(False, None, "cannot heal: items (no selector picks out the record containers)",
                                  {}, details=details)
            details["items"] = {"status": "healed", "selector": items_css, "count": len(containers), "why": why}
        if by_values and records is not None and len(records) < len(old_raw) and old_list_in_places(before, old_containers):
            back = take_back_left_out(before, old_containers, after, containers, records, old_raw, bp)
            if isinstance(back, str):
                details["items"] = {"status": "ambiguous", "why": back}
                return HealResult(False, None, f"cannot heal: items ({back})", {}, details=details)
            if back is not None:
                containers, records, items_css = back
                details["items"] = {"status": "healed", "selector": items_css, "count": len(containers),
                                    "why": f"{why}, and the records the old list read in another place"}

    res = _fields_stage(bp, before, old_containers, after, containers, records, old_raw, fps, old_kind, shared,
                        items_css, details)
    if res.ok or records is None or not by_values:
        return res
    # the widest node around each record may hold more than the record (a decoy placed before it
    # in the same cell): the narrower block around each record's values, when fields fail there
    narrow = _narrow_containers(after, containers, records, old_raw, bp)
    css = (relaxed_selector(after, bp.items, narrow) or items_selector(after, narrow)) if narrow else None
    if narrow is None or css is None:
        return res
    why = f"{len(narrow)} blocks around the old records' values, inside the widest nodes holding them"
    again = _fields_stage(bp, before, old_containers, after, narrow, records, old_raw, fps, old_kind, shared, css,
                          {"items": {"status": "healed", "selector": css, "count": len(narrow), "why": why}})
    return again if again.ok else res


def _copies_beside(after: Page, containers: list[int], records: list[int] | None, old_raw: list,
                   bp: Blueprint) -> frozenset[int]:
    """The containers' look-alike siblings that copy a record: most of the old values its container holds."""
    if records is None:
        return frozenset()
    mine = set(containers)
    tags = {after.tags[c] for c in containers}
    held = []           # the old values each of the first 50 containers holds: a sibling copying one of them
    for c, r in zip(containers[:50], records[:50]):
        vals = [(v, spec.attr) for name, spec in bp.fields.items() if (v := old_raw[r].get(name))]
        held.append([(v, a) for v, a in vals if after.exact(v, a, within=c)])
    out = set()
    for p in {after.parent[c] for c in containers if after.parent[c] >= 0}:
        for k in after.children[p]:
            if k in mine or after.tags[k] not in tags:
                continue
            if any(len(h) >= 2 and sum(1 for v, a in h if after.exact(v, a, within=k)) * 2 > len(h) for h in held):
                out.add(k)
    return frozenset(out)


def _narrow_containers(after: Page, containers: list[int], records: list[int], old_raw: list,
                       bp: Blueprint) -> list[int] | None:
    """The block around each record's values found again: the lowest node holding them all (its parent
    when that node is one of the values), strictly inside each container; None when any is not."""
    out = []
    for c, r in zip(containers, records):
        hits = sorted({h for name, spec in bp.fields.items() if old_raw[r].get(name)
                       for h in after.exact(old_raw[r][name], spec.attr, within=c) if h != c})
        if not hits:
            return None
        block = _lowest_common(after, hits)
        if block in hits:
            block = after.parent[block]
        if block < 0 or block == c or not after.contains(c, block):
            return None
        out.append(block)
    return out if len(set(out)) == len(out) else None


def _fields_stage(bp: Blueprint, before: Page, old_containers: list[int], after: Page, containers: list[int],
                  records: list[int] | None, old_raw: list, fps: dict[str, Fingerprint], old_kind: _OldKinds,
                  shared: dict[str, list[str]], items_css: str | None, details: dict[str, Any]) -> HealResult:
    """Each field inside the containers, then collisions, optional fields and the verification."""
    names = list(bp.fields)
    new_fields: dict[str, FieldSpec] = {}
    decisions: dict[str, tuple[str, str]] = {}
    for name, spec in bp.fields.items():
        status, css, why, info = _field_in_containers(after, containers, records, old_raw, name, spec, fps.get(name),
                                                      old_kind)
        if status == "healed" and css and css != spec.css and _same_nodes(after, containers, css, spec.css):
            status, css, why = "kept", spec.css, f"{why}; the old selector gives the same nodes"
        new_attr = (other_attr_listing(after, containers, [old_raw[r].get(name) for r in records], spec.attr)
                    if status == "gone" and records is not None else None)
        if new_attr is not None:
            # the old values now sit in another attribute (a date moved from abbr[title] to time[datetime])
            spec = replace(spec, attr=new_attr)
            status, css, why, info = _field_in_containers(after, containers, records, old_raw, name, spec,
                                                          fps.get(name), old_kind)
            why = f"{why}, now in the attribute {new_attr!r}"
            status = "healed" if status == "kept" else status    # the field changed: its attribute
            info = {**info, "attr": new_attr, "confidence": round(min(info.get("confidence", 0.8), 0.6), 3)}
        if (status == "gone" and new_attr is None and records is not None
                and text_was_a_copy(before, old_containers, after, containers, records, old_raw, name, spec)):
            # the attribute was dropped; the node's text, an exact copy of it on the last good page, remains
            as_text = replace(spec, attr=None)
            st, css_t, why_t, info_t = _field_in_containers(after, containers, records, old_raw, name, as_text,
                                                            fps.get(name), old_kind)
            if st in ("healed", "kept") and css_t:
                spec, status, css = as_text, "healed", css_t
                why = f"{why_t}, now the node's text (its attribute dropped, the text the same on the last good page)"
                info = {**info_t, "attr": None, "confidence": round(min(info_t.get("confidence", 0.8), 0.6), 3)}
        text_attr = (attr_for_text_listing(after, containers, [old_raw[r].get(name) for r in records])
                     if spec.attr is None and records is not None and (
                         status == "gone" or _reads_no_value(after, containers, css or spec.css)) else None)
        if text_attr is not None:
            # the old values left the text for an attribute (a data-value beside a placeholder): as found as text
            in_attr = replace(spec, attr=text_attr)
            st, css_a, why_a, info_a = _field_in_containers(after, containers, records, old_raw, name, in_attr,
                                                            fps.get(name), old_kind)
            if st in ("healed", "kept") and css_a:
                spec, status, css = in_attr, "healed", css_a
                why = f"{why_a}, now in the attribute {text_attr!r} (its text no longer says it)"
                info = {**info_a, "attr": text_attr}
        labelled = by_old_label(after, containers, spec, fps.get(name), old_kind[name]) if status in (
            "gone", "ambiguous") and no_old_value_left(after, old_raw, name, spec.attr) else None
        if labelled is not None:
            status, css, why = "healed", labelled, f"values changed; found by its label {fps[name].label!r} ({why})"
            info = {"selector": labelled, "confidence": 0.55}
        decisions[name] = (status, why)
        details[name] = {"status": status, "why": why, **info}
        if css:
            new_fields[name] = FieldSpec(name, css, spec.type, spec.attr, spec.required)
    # fields whose values changed, judged through the change of node their siblings found by value show
    by_value = {n: new_fields[n].css for n, (st, _w) in decisions.items() if st in ("healed", "kept") and n in new_fields}
    if records is not None:
        _place_by_cells(bp, before, old_containers, after, containers, records, old_raw, by_value, new_fields,
                        decisions, details)
    for name, spec in bp.fields.items():
        carried = through_siblings_change(after, containers, fps, name, by_value) if decisions[name][0] == "gone" else None
        if carried is None:
            continue
        status, css, why, info = _field_in_containers(after, containers, records, old_raw, name, spec, carried, old_kind)
        if status == "healed" and css and all_of_tag(after, containers, css, carried.tag):
            why = f"{why} (judged through the change of node its sibling fields show)"
            decisions[name] = (status, why)
            details[name] = {"status": status, "why": why, **info,
                             "confidence": round(min(info.get("confidence", 0.8), 0.6), 3)}
            new_fields[name] = FieldSpec(name, css, spec.type, spec.attr, spec.required)
    # fields whose values changed, placed as before relative to the fields found by value (staged)
    place_changed_fields(before, old_containers, after, containers, records, old_raw, bp.fields, decisions, details,
                         new_fields)
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
    changed = {n: new_fields[n].css for n in names
               if new_fields[n].css != bp.fields[n].css or new_fields[n].attr != bp.fields[n].attr}
    if items_css != bp.items:
        changed["items"] = items_css
    if not changed:
        return HealResult(True, bp, "the old selectors still find their fields", {}, unchanged=True,
                          confidence=0.8, details=details)
    new_bp = bp.with_fields({n: new_fields[n] for n in names}, items=items_css)
    got = extract_on(after, new_bp)
    if got.item_count != len(containers):
        return HealResult(False, None, "cannot heal: items (verification: wrong record count)", {}, details=details)
    summary = "; ".join(f"{k} -> {v}" for k, v in changed.items())
    conf = round(min([0.95 if details[n]["status"] == "kept" else details[n].get("confidence", 0.8) for n in names]), 3)
    return HealResult(True, new_bp, f"{summary} (confidence {conf:.2f})", changed, confidence=conf, details=details,
                      extracted=got.raw)


def _reads_no_value(after: Page, containers: list[int], css: str) -> bool:
    """True when `css` reads nothing or a placeholder in most records (a value hidden, not changed)."""
    vals = [after.value(n, None) if n is not None else None for n in (lexbor_first_in(after, c, css) for c in containers)]
    return bool(vals) and sum(1 for v in vals if not v or PLACEHOLDER.match(v)) >= MIN_KIND_SHARE * len(vals)


def _place_by_cells(bp: Blueprint, before: Page, old_containers: list[int], after: Page, containers: list[int],
                    records: list[int], old_raw: list, by_value: dict[str, str], new_fields: dict[str, FieldSpec],
                    decisions: dict[str, tuple[str, str]], details: dict[str, Any]) -> None:
    """Short values refused in unlike places, taken when they sit in their old cell (`fields.listing_by_cell`)."""
    for name, spec in bp.fields.items():
        proposal = details[name].get("proposal")
        if decisions[name][0] != "ambiguous" or not proposal or not decisions[name][1].startswith(SHORT_UNLIKE):
            continue
        why = aligned_cell(before, old_containers, after, containers, records, old_raw, bp, name, proposal, by_value)
        if why is None:
            continue
        why = f"{decisions[name][1]}, but {why}"
        decisions[name] = ("healed", why)
        details[name] = {"status": "healed", "why": why, "selector": proposal, "confidence": ALIGNED_CONFIDENCE}
        new_fields[name] = FieldSpec(name, proposal, spec.type, spec.attr, spec.required)


def _old_items_inside(after: Page, cur: list, containers: list[int], records: list[int], old_raw: list,
                      bp: Blueprint) -> bool:
    """The old items selector's nodes sit one inside each found container and hold as many of the old values.

    The found containers are the widest nodes holding one record's values; when the values
    changed in part, the old items selector's nodes inside them are still the records (a wider
    node may also hold a decoy placed before the record), and the blueprint keeps its items.
    """
    if (not cur or len(cur) != len(containers) or any(c is None for c in cur) or cur == containers
            or not all(after.contains(f, c) for f, c in zip(containers, cur))):
        return False

    def held(nodes: list[int]) -> int:
        return sum(1 for k, node in enumerate(nodes) for name, spec in bp.fields.items()
                   if old_raw[records[k]].get(name) and after.exact(old_raw[records[k]][name], spec.attr, within=node))
    return held(cur) >= held(containers)


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
