"""A changed field judged through the layout change its sibling fields show.

A table became a grid of <div>s and one column's values changed: the other columns were found
by their old values, in <div>s where <td>s were, inside rows of another kind. The changed column's
old selector, loosened, finds a <div> too, but it looks unlike the old <td> (likeness 0.45) and is
refused. Every field of the record changed its node the same way, so the old node's fingerprint is
carried through that change before comparing: the tag and the surroundings of a sibling field's new
node (a field whose old node was of the same tag, among the same ancestors), its own classes,
attributes, value shape and position kept; the node so found must be of the siblings' new tag.
"""

from __future__ import annotations

from dataclasses import replace

from healerd.core.heal.page.fingerprint import Fingerprint, Page, fingerprint
from healerd.core.heal.page.selectors import lexbor_first_in


def through_siblings_change(after: Page, containers: list[int], fps: dict[str, Fingerprint], name: str,
                            found: dict[str, str]) -> Fingerprint | None:
    """The field's old fingerprint carried through a found sibling field's change of node, or None.

    `found`: field name -> selector, the fields located by their old values. None when no sibling
    sat where this field sat (same tag, same ancestors) or the siblings' nodes did not change.
    """
    fp = fps.get(name)
    if fp is None or not containers:
        return None
    for other, css in found.items():
        ofp = fps.get(other)
        if other == name or ofp is None or ofp.tag != fp.tag or ofp.ancestor_words != fp.ancestor_words:
            continue
        node = lexbor_first_in(after, containers[0], css)
        if node is None:
            continue
        now = fingerprint(after, node, ofp.value)
        if now.tag == ofp.tag and now.ancestor_words == ofp.ancestor_words:
            return None    # the sibling's node did not change: nothing to carry
        return replace(fp, tag=now.tag, ancestor_words=now.ancestor_words, ancestor_tags=now.ancestor_tags)
    return None


def all_of_tag(after: Page, containers: list[int], css: str, tag: str) -> bool:
    """The selector finds, in every container where it finds a node, one of `tag` inside it: the field's
    node changed as its siblings' did (a <td> become a <div> with them), not into a third kind."""
    nodes = [lexbor_first_in(after, c, css) for c in containers]
    if any(n == c for n, c in zip(nodes, containers)):
        return False   # a selector that matches a record's own container (a row that is `:nth-child(3)`) reads it whole
    found = [n for n in nodes if n is not None]
    return bool(found) and all(after.tags[n] == tag for n in found)
