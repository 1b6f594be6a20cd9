"""A listing field whose values changed with the layout, placed through the fields found by value.

The records' containers were found, and some fields in them by their old values; one field's
values changed along with the layout (prices bumped while the table became a grid), so no old
value is left to find and the loosened old selector reads nodes that look unlike the old one.
In every record, each field found again reached the changed field's old node on the last good
page by a path of child positions (`page.positions.relative_path`). When, in every record, that same
path from every found field leads to one node, and that node says the record's old value or new
text of the old kind (`single_anchored.acceptable`: not old text of the page, not another field's
node, not its old parent's sentence, not under another label) while the record's old value is
nowhere else in it, and records whose values differed do not now say the same (a template's "Read
more…"), a selector relative to the record that reads exactly those nodes is the field's.

A column removed leaves its neighbour in its place: old text, refused. The evidence is structure,
not the values: a confidence under the Deployer's promotion threshold (`verdict.corroboration` may corroborate
the heal, as for any changed value).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from healerd.core.blueprint import FieldSpec
from healerd.core.heal.evidence import OldText
from healerd.core.heal.fields.single_anchored import acceptable, agreed_node
from healerd.core.heal.page.fingerprint import Page, collapse
from healerd.core.heal.page.selectors import lexbor_first_in, relative_selectors

CONFIDENCE = 0.6       # staged for a person unless the agreement corroborates the heal
MAX_RECORDS = 200      # a longer listing is not followed record by record (the cost of the paths)
MAX_TRIED = 12         # relative selectors tried for the first record's node


def place_in_records(before: Page, old_containers: list[int], after: Page, containers: list[int],
                     records: list[int] | None, old_raw: list, fields: dict[str, FieldSpec], name: str,
                     found: dict[str, str], old_text: OldText) -> tuple[str, str] | None:
    """(selector, why) reading the field's node placed as before relative to the fields `found`
    (name -> their new selector) in every record; None when one record does not settle it."""
    spec = fields[name]
    if (records is None or not containers or len(records) != len(containers) or len(containers) > MAX_RECORDS
            or spec.css is None or len(containers) != len(old_raw)):
        return None           # a record the containers left out (or one more) is no ground to place by structure
    nodes: list[int] = []
    for k, c in enumerate(containers):
        r = records[k]
        if r is None or r >= len(old_containers) or r >= len(old_raw):
            return None
        oc, want = old_containers[r], old_raw[r].get(name)
        old = before.first_in(oc, spec.css)
        if old is None or not isinstance(want, str) or not want.strip():
            return None
        anchors: list[tuple[int, int]] = []
        for a, css in found.items():
            a_spec = fields[a]
            a_old, a_new = before.first_in(oc, a_spec.css or ""), after.first_in(c, css)
            a_want = old_raw[r].get(a)
            if a_old is None or a_new is None or not isinstance(a_want, str) or not a_want.strip():
                continue
            if (after.value(a_new, a_spec.attr) != a_want or a_old == old or before.contains(a_old, old)
                    or before.contains(old, a_old)):
                continue      # not found again by its value in this record, or the same node as the field
            anchors.append((a_old, a_new))
        node = agreed_node(before, old, after, anchors, spec.attr)
        if node is None or node == c or not after.contains(c, node):
            return None       # nothing agreed, or a node outside the record (another record's)
        value = collapse(after.value(node, spec.attr))
        if value != collapse(want) and after.exact(want, spec.attr, within=c):
            return None       # the record's old value is still in it, elsewhere: which node is the field is not told
        if value != collapse(want) and not acceptable(before, old, want, after, node, value,
                                                      [n for _o, n in anchors], old_text):
            return None
        nodes.append(node)
    pairs = [(collapse(old_raw[r].get(name)), collapse(after.value(n, spec.attr))) for n, r in zip(nodes, records)]
    changed = [(was, now) for was, now in pairs if was != now]
    if not changed:
        return None           # nothing changed: the value finders had their chance
    if len({now for _w, now in changed}) < len({was for was, _n in changed}):
        return None           # records that differed now say the same: a template's text ("Read more…"), no data
    why = f"values changed; placed as before relative to {', '.join(sorted(found))} in every record"
    if all(lexbor_first_in(after, c, spec.css) == n for c, n in zip(containers, nodes)):
        return spec.css, f"{why}: the old selector's nodes, their values changed in place"
    for sel in relative_selectors(after, containers[0], nodes[0], avoid_attr=spec.attr)[:MAX_TRIED]:
        css = sel.css()
        if all(lexbor_first_in(after, c, css) == n for c, n in zip(containers, nodes)):
            return css, f"{why} (new values of the old kind)"
    return None


def place_changed_fields(before: Page, old_containers: list[int], after: Page, containers: list[int],
                         records: list[int] | None, old_raw: list, fields: dict[str, FieldSpec],
                         decisions: dict[str, tuple[str, str]], details: dict[str, Any],
                         new_fields: dict[str, FieldSpec]) -> None:
    """Every field still refused ("gone") placed by `place_in_records` when it can be (in place)."""
    if records is None or not any(st == "gone" for st, _w in decisions.values()):
        return
    found = {n: new_fields[n].css or "" for n, (st, _w) in decisions.items()
             if st in ("healed", "kept") and n in new_fields and new_fields[n].css}
    if not found:
        return
    old_text = OldText(before)
    for name, (status, _why) in list(decisions.items()):
        placed = None if status != "gone" else place_in_records(
            before, old_containers, after, containers, records, old_raw, fields, name, found, old_text)
        if placed is not None:
            css, why = placed
            if css == fields[name].css:
                decisions[name] = ("kept", why)
                details[name] = {"status": "kept", "why": why}
                new_fields[name] = fields[name]
                continue
            decisions[name] = ("healed", why)
            details[name] = {"status": "healed", "why": why, "selector": css, "confidence": CONFIDENCE}
            new_fields[name] = replace(fields[name], css=css)
