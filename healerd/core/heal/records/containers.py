"""The listing healer's first stage: the record containers on the current page.

By values: the widest nodes holding one old record's values and no other's (two lists
carrying them are told apart by their surroundings, or refused). By shape, when every
value changed: repeated nodes in which the old field selectors give values of the old kinds.
"""

from __future__ import annotations

from healerd.core.blueprint import Blueprint
from healerd.core.heal.evidence import (
    CONTEXT_MARGIN,
    MARGIN,
    MAX_RECORD_DEPTH,
    MAX_VALUE_HITS,
    MIN_KIND_SHARE,
    SAMPLE,
    copies,
    describe,
)
from healerd.core.heal.page.fingerprint import (
    Page,
    jaccard,
    words,
)
from healerd.core.heal.page.selectors import (
    relaxations,
)
from healerd.core.heal.records.old_kinds import _spread, _try_in_containers

_MANY = 3   # records a node may hold before the values of further records stop climbing through it


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


def _one_of_two_lists(after: Page, old_context: set[str], a: dict[int, int], b: dict[int, int],
                      passed_over: set[str] = frozenset()) -> dict[int, int] | str:
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
    if passed_over:
        # the last good page had a second list carrying the values too (an index of the records),
        # which the old items selector passed over: the one here looking like it is passed over
        off_a, off_b = jaccard(passed_over, _context_words(after, first_a)), jaccard(passed_over, _context_words(after, first_b))
        lean_a, lean_b = like_a - off_a, like_b - off_b
        if abs(lean_a - lean_b) >= CONTEXT_MARGIN:
            return a if lean_a > lean_b else b
    block_a = _lowest_common(after, list(a.values()))
    block_b = _lowest_common(after, list(b.values()))
    if (block_a >= 0 and block_b >= 0 and not after.contains(block_a, block_b) and not after.contains(block_b, block_a)
            and copies(after, block_a, block_b, "")):
        return a if first_a < first_b else b
    return ("two sets of nodes carry the same records (a copy such as a 'related' block?): "
            f"{describe(after, first_a)} and {describe(after, first_b)}")


def _like_the_others(after: Page, chosen: dict[int, int], twins: dict[int, int]) -> dict[int, int]:
    """Some records are carried by two nodes of one kind (a "promoted" copy of a row placed before it):
    the one built like the other records' containers (classes, children's tags), else the first."""
    def build(a: int) -> tuple:
        return tuple(sorted(after.classes(a))), tuple(after.tags[k] for k in after.children[a])
    out = dict(chosen)
    for r, twin in twins.items():
        others = [build(a) for q, a in chosen.items() if q != r and q not in twins]
        mine, theirs = sum(b == build(chosen[r]) for b in others), sum(b == build(twin) for b in others)
        if theirs > mine:
            out[r] = twin
    return out


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


def _passed_over_context(before: Page, old_containers: list[int], old_raw: list, bp: Blueprint) -> set[str]:
    """Context words of the last good page's other place carrying the first record's values, or an empty set.

    That place (an index or a sidebar listing the records) is the widest node around an old
    value outside the old containers that holds no other record's value and no old container.
    """
    if len(old_raw) < 2:
        return set()
    for name, spec in bp.fields.items():
        value = old_raw[0].get(name)
        if not value or not _distinctive(old_raw, name)[0]:
            continue
        others = [r.get(name) for r in old_raw[1:4] if r.get(name)]
        for h in before.exact(value, spec.attr)[:MAX_VALUE_HITS]:
            if any(before.contains(c, h) or before.contains(h, c) for c in old_containers):
                continue
            a = h
            while True:
                p = before.parent[a]
                if (p < 0 or any(before.contains(p, c) for c in old_containers)
                        or any(before.exact(v, spec.attr, within=p) for v in others)):
                    break
                a = p
            return _context_words(before, a)
    return set()


def _find_containers(after: Page, old_raw: list, bp: Blueprint, old_context: set[str] | None = None,
                     passed_over: set[str] = frozenset()) -> tuple[list[int], list[int]] | str | None:
    """New record containers: the widest nodes that hold one record's values and no other record's.

    None when no set of containers carries the records; a one-line reason (str) when two sets
    carry them equally well and nothing tells them apart. The containers' kind is their tag under
    their parent's tag and classes; when no kind holds enough of the records, once more under
    their parent's tag alone (`coarse`): classes that differ from one parent to the next (a
    utility-class soup, `flex p-4 text-sm`) name no kind.
    """
    found = _containers_of_a_kind(after, old_raw, bp, old_context, passed_over, coarse=False)
    if found is None and len(old_raw) > 1:
        found = _containers_of_a_kind(after, old_raw, bp, old_context, passed_over, coarse=True)
    return found


def _containers_of_a_kind(after: Page, old_raw: list, bp: Blueprint, old_context: set[str] | None,
                          passed_over: set[str], coarse: bool) -> tuple[list[int], list[int]] | str | None:
    old_context = old_context or set()
    n_rec = len(old_raw)
    # positions (document order) of each record's value nodes, per ancestor
    spans: dict[int, dict[int, list]] = {}          # ancestor -> record -> [first, last, fields]
    parent = after.parent
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
                # a container holds its values below itself: h's ancestors, MAX_RECORD_DEPTH of them at most
                # (walked here rather than listed by Page.ancestors: this loop runs once per value on the page)
                a, left = parent[h], MAX_RECORD_DEPTH
                while a >= 0 and left > 0:
                    held = spans.get(a)
                    if held is None:
                        held = spans[a] = {}
                    slot = held.get(r)
                    if slot is None:
                        if len(held) >= _MANY:
                            # a node already holding several other records is no container for this one, nor
                            # is any node above it (on a big listing, climbing to the root costs most)
                            break
                        held[r] = [h, h, {name}]
                    else:
                        if h < slot[0]:
                            slot[0] = h
                        if h > slot[1]:
                            slot[1] = h
                        slot[2].add(name)
                    a, left = parent[a], left - 1
    # a node can hold record r when r's values come before any other record's inside it
    # (css_first picks the first match, so nested records are fine)
    per_record: dict[int, list[tuple[int, int]]] = {}
    pure: set[int] = set()      # nodes holding one record's values only
    for a, recs in spans.items():
        if len(recs) == 1:
            pure.add(a)
            for r, (_lo, _hi, names) in recs.items():
                per_record.setdefault(r, []).append((a, len(names)))
            continue
        # r's values come before any other record's: before the smallest start among the others
        lows = sorted((lo, r) for r, (lo, _hi, _n) in recs.items())[:2]
        for r, (_lo, hi, names) in recs.items():
            if hi < (lows[1][0] if lows[0][1] == r else lows[0][0]):
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
    sigs: dict[int, tuple] = {}     # a node's kind, read once: every record asks it of many nodes, twice

    def sig(a: int) -> tuple:
        k = sigs.get(a)
        if k is None:
            p = after.parent[a]
            k = sigs[a] = (after.tags[a], after.tags[p] if p >= 0 else "",
                           tuple(sorted(after.classes(p))) if p >= 0 and not coarse else ())
        return k
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
        pick = _one_of_two_lists(after, old_context, chosen_by_rec, other_list, passed_over)
        if isinstance(pick, str):
            return pick
        chosen_by_rec = pick
    elif twins.get(top_sig):
        chosen_by_rec = _like_the_others(after, chosen_by_rec, twins[top_sig])
    # enough of the records must be found: most of those with evidence, half of all
    if len(chosen_by_rec) < max(2, (n_rec + 1) // 2) or len(chosen_by_rec) < 0.8 * len(per_record):
        return None
    chosen = sorted((a, r) for r, a in chosen_by_rec.items())
    nodes = [a for a, _ in chosen]
    if len(set(nodes)) != len(nodes):
        return None
    return nodes, [r for _, r in chosen]


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
