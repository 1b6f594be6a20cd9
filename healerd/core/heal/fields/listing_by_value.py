"""The listing healer's second stage: each field's selector inside the record containers.

The old selector when it still gives every record's value; else selectors built where the
old values sit (scored on a sample of the containers, checked on all), values edited a
little (near), or, when the values changed, the old kinds (`records.old_kinds`).
"""

from __future__ import annotations

from healerd.core.blueprint import FieldSpec
from healerd.core.heal.evidence import (
    MAX_FIELD_SELECTORS,
    MIN_SIM_EXACT,
    MIN_SIM_NEAR,
    MIN_SIM_WEAK,
    SAMPLE,
    STRONG_LABEL_KINDS,
    is_weak,
)
from healerd.core.heal.fields.merged_labels import merged_label_field
from healerd.core.heal.page.fingerprint import (
    Fingerprint,
    Page,
    near_closeness,
    similarity,
)
from healerd.core.heal.page.label_pairs import label_renamed
from healerd.core.heal.page.selectors import (
    Compound,
    Selector,
    first_in,
    lexbor_first_in,
    relative_selectors,
    relaxations,
)
from healerd.core.heal.records.old_kinds import _changed_values_in_containers, _node_sig, _OldKinds, _spread

# a field told apart only by a label reworded from the old one: staged, not promoted
RENAMED_LABEL_CONFIDENCE = 0.7
SHORT_UNLIKE = "short values in unlike places"   # the refusal `listing_by_cell` may settle


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
    exact_sets = [{i for i in after.exact(v, spec.attr, within=c) if i != c} if v else set()
                  for v, c in zip(wants, containers)]
    have = sum(1 for s in exact_sets if s)
    present = sum(1 for v in wants if v)
    # records saying their old value only with words around it (a label merged in: "Note: ..."):
    # a selector finding nothing there misses them too
    nearly = [not s and bool(v) and bool(after.near(v, spec.attr, within=c, limit=1))
              for v, c, s in zip(wants, containers, exact_sets)] if 0 < have < present else [False] * len(wants)

    # candidates are scored on a sample of the containers (big listings), the winner is checked on all
    every = list(range(len(containers)))
    sample = _spread(every, SAMPLE)
    in_sample = set(sample)
    have_s = sum(1 for k in sample if exact_sets[k])

    likeness: dict[int, float] = {}     # node -> similarity to fp: candidates mostly land on the same nodes

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
                # the record's old value is in its container and the selector finds nothing there:
                # a miss as much as a wrong node (rows laid out two ways: only one of them read)
                wrong += 1 if s or nearly[k] else 0
                continue
            val = after.value(node, spec.attr)
            if want is not None and val == want:
                hits += 1
                if fp is not None and k in in_sample:
                    like = likeness.get(node)
                    if like is None:
                        like = likeness[node] = similarity(fp, after, node)
                    sims += like
                    sim_n += 1
            elif s:
                wrong += 1
        return hits, wrong, sims / max(sim_n, 1)

    # the old selector may still be right inside the (new) containers
    # (on the sample first: a miss there is a miss on all, and on a big listing most old selectors miss)
    if present and evaluate(spec.css, sample)[0] == sum(1 for k in sample if wants[k]) and evaluate(spec.css)[0] == present:
        return "kept", spec.css, "old selector gives every record's value", {}
    if have == 0:
        near_info = _near_in_containers(after, containers, wants, spec, fp)
        if near_info is None:
            near_info = merged_label_field(after, containers, wants, spec, name, fp)
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
    cands += [s for s in cell_selectors(after, containers, exact_sets) if s.css() not in seen]
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
    labelled = _labelled_alike(after, containers, sample, css, fp) if fp is not None else None
    if labelled == "renamed" and sorted(records) != list(range(len(old_raw))):
        labelled = None     # a reworded label names the column only among all the last good records
    if fp is not None and sim < MIN_SIM_EXACT and _is_weak_all(wants) and labelled is None:
        return "ambiguous", None, f"{SHORT_UNLIKE} (likeness {sim:.2f})", {"proposal": css}
    if fp is not None and sim < MIN_SIM_WEAK and _is_weak_all(wants):
        # a short value found again only in another kind of node (tag) that was another part of the
        # old records (a parameter's name in the parameter list, where the signature's changed)
        found = [n for n in (lexbor_first_in(after, containers[k], css) for k in sample) if n is not None]
        foreign = sum(1 for n in found if after.tags[n] != fp.tag and _node_sig(after, n) in kinds[name].foreign)
        if found and foreign * 2 > len(found):
            return "ambiguous", None, (f"short values found only in nodes like another part of the old records "
                                       f"({css!r}, likeness {sim:.2f})"), {"proposal": css}
    conf = (0.4 + 0.3 * min(1.0, net / max(present, 1)) + 0.3 * min(1.0, sim + 0.3)) if present else 0.5
    why = f"finds {h} of {len(containers)} records' values"
    if sim < MIN_SIM_EXACT and _is_weak_all(wants) and labelled == "renamed":
        # short values told apart only by a label reworded from the old one: weaker than the old
        # label itself, so below the Deployer's bar (staged for a person)
        conf, why = min(conf, RENAMED_LABEL_CONFIDENCE), f"{why}, under a label reworded from the old one"
    return "healed", css, why, {
        "selector": css, "likeness": round(sim, 3), "confidence": round(min(conf, 1.0), 3)}


def cell_selectors(after: Page, containers: list[int], exact_sets: list[set[int]]) -> list[Selector]:
    """The value's cell named by its place in the row, "the k-th of n" (`div:nth-child(2):nth-last-child(3)`).

    Inside a container, lexbor's first match may be the container itself: a row that is the second
    child of its grid is `div:nth-child(2)` as much as its second cell is. A row of n cells is never
    also the k-th of n of its own parent unless the grid has as many rows as the row has cells, so
    naming the place from both ends tells the cell from the row that holds it. From the first
    container holding the value: the cell, and the value's tag inside it when it lies deeper.
    """
    for c, s in zip(containers, exact_sets):
        out = []
        for t in sorted(s)[:2]:
            cell = t
            while cell >= 0 and after.parent[cell] != c:
                cell = after.parent[cell]
            if cell < 0:
                continue
            kids = after.children[c]
            k = kids.index(cell)
            placed = Compound(tag=after.tags[cell], nth_child=k + 1, nth_last=len(kids) - k, cost=4.6)
            out.append(Selector((placed,)) if cell == t else Selector((placed, Compound(tag=after.tags[t])), (" ",)))
        return out
    return []


def _labelled_alike(after: Page, containers: list[int], sample: list[int], css: str, fp: Fingerprint) -> str | None:
    """Does every sampled record name the node the selector finds by the old node's label?

    Short values found in unlike nodes (a table's cells now a card's labelled pairs) are the
    field's own when each sits under the label its old column or field had ("same"), or under
    one label, the same in every record, reworded from it ("renamed": `label_pairs.label_renamed`,
    "Storage" become "Your storage"); else None.
    """
    if not fp.label or fp.label_kind not in STRONG_LABEL_KINDS:
        return None
    found = [lexbor_first_in(after, containers[k], css) for k in sample]
    if len(found) < 2 or any(n is None for n in found):
        return None
    labels = {after.label(n) for n in found if n is not None}
    if labels == {fp.label}:
        return "same"
    if len(labels) == 1 and label_renamed(fp.label, next(iter(labels))):
        return "renamed"
    return None


def _css(sel) -> str:
    return sel if isinstance(sel, str) else sel.css()


def _is_weak_all(values: list) -> bool:
    vals = [v for v in values if v]
    return not vals or all(is_weak(v) for v in vals)


def _near_in_containers(after: Page, containers, wants, spec: FieldSpec, fp: Fingerprint | None):
    """Values edited a little (a word added): one selector giving near values in most containers.

    Looked for in a sample of the containers (near matching reads each container's subtree),
    then the selector is checked on all of them. A value may also have merged with its label
    ("Storage — 50 GB" where "50 GB" was): a longer text is taken only when the text around the
    old value is the same in every record (a label, not data).
    """
    if fp is None:
        return None
    got = _near_tops(after, containers, wants, spec, fp, None)
    if got is None:
        got = _near_tops(after, containers, wants, spec, fp, "affix")
    if got is None:
        return None
    sample, found, affix = got
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
                    if v and text and (near_closeness(v, text, spec.attr) >= 0.5
                                       or (affix is not None and _affix(v, text) == affix)):
                        near_all += 1
                if near_all < max(1, round(0.8 * len(containers))):
                    return None
            why = ("old values found nearly (edited text)" if affix is None
                   else f"old values found with the same text around them in every record ({affix[0]!r} … {affix[1]!r})")
            return "healed", css, why, {"selector": css, "likeness": round(sim, 3), "confidence": 0.6}
    return None


def _affix(value: str, text: str) -> tuple[str, str] | None:
    """The text before and after `value` inside `text` (it occurs there once), else None."""
    k = text.find(value)
    if k < 0 or text.find(value, k + 1) >= 0:
        return None
    return text[:k], text[k + len(value):]


def _near_tops(after: Page, containers, wants, spec: FieldSpec, fp: Fingerprint, mode: str | None):
    """(sample, [(container, node)], affix) when most sampled containers nearly carry their old value.

    mode None: near texts at least half of which is the old value; "affix": any text holding the
    old value once, when the text around it is one short label, the same in every record found.
    """
    sample = _spread(list(range(len(containers))), SAMPLE)
    tops: list[int | None] = []
    affixes: set = set()
    for k in sample:
        c, v = containers[k], wants[k]
        near = after.near(v, spec.attr, within=c) if v else []
        near = [(i, cl) for i, cl in near if i != c and (mode is not None or cl >= 0.5)]
        if not near:
            tops.append(None)
            continue
        best = max(near, key=lambda t: (t[1], similarity(fp, after, t[0]), -t[0]))
        tops.append(best[0])
        if mode is not None:
            affixes.add(_affix(v, after.value(best[0], spec.attr) or ""))
    found = [(containers[k], t) for k, t in zip(sample, tops) if t is not None]
    if len(found) < max(1, round(0.8 * len(sample))):
        return None
    if mode is None:
        return sample, found, None
    if len(found) < 2 or len(affixes) != 1:
        return None
    affix = next(iter(affixes))
    if affix is None or len(affix[0]) + len(affix[1]) > 40 or not any(ch.isalpha() for ch in affix[0] + affix[1]):
        return None
    return sample, found, affix
