"""What the built-in healer's two algorithms share: thresholds, the result, small judgements.

The thresholds are explicit so they can be reasoned about and tuned in one place;
`HealResult` is what `healerd.core.heal.pipeline.heal` returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from healerd.core.blueprint import Blueprint
from healerd.core.heal.page.fingerprint import Page, text_shape

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
    # A refusal's best guess: when every field refused was ambiguous (two places alike, or too
    # little evidence) and each had a likeliest place, the blueprint reading those places, checked
    # on the page. Never when a field's data is gone. For a person to approve, never to promote.
    candidate: Blueprint | None = None
    # The repaired blueprint's raw extraction on the current page, when the healer made one to verify
    # it (so the last checks need not extract again); `heal` drops it before returning.
    extracted: Any = field(default=None, repr=False, compare=False)


def copies(page: Page, a: int, b: int, value: str) -> bool:
    """Nodes a and b sit in two copies of one block (see `single_record._without_copies`)."""
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


def is_weak(value: str) -> bool:
    """Short or plain-number values occur by chance; they need more than the value as evidence."""
    shape = text_shape(value)
    return len(value) < 4 or (shape in ("number", "money") and len(value) < 8) or (shape == "word" and len(value) < 6)


def describe(page: Page, i: int) -> str:
    """A short human name for a node: tag.classes inside its parent's tag.classes."""
    def one(k: int) -> str:
        return page.tags[k] + "".join("." + c for c in page.classes(k)[:2])
    p = page.parent[i]
    return (one(p) + " > " if p >= 0 else "") + one(i)


SAMPLE = 50               # containers scored per candidate; the winner is then checked on all
MIN_KIND_SHARE = 0.8      # share of containers where a selector must give a value of the old kind
STRONG_LABEL_KINDS = ("column", "for", "dt", "label")


def value_kind(value: str) -> str:
    """Coarse kind of a value: numbers stay numbers, dates dates, links links, any text is text."""
    shape = text_shape(value)
    if shape in ("number", "money"):
        return "number"
    if shape in ("word", "short", "text"):
        return "text"
    return shape


# What a value changed with the layout must be, for the fields placed through the fields found
# again (`fields.single_anchored`, `fields.listing_anchored`) and for the corroboration that may
# raise such a heal (`verdict.corroboration`).
MIN_VALUE = 2          # characters a changed value needs before "new text" means anything


class OldText:
    """Every text and attribute value of the last good page: what a new value must not be."""

    def __init__(self, before: Page):
        self.text = before.texts[0] if before.texts else ""
        self.attrs = {v for a in before.attrs for v in a.values() if v}

    def holds(self, value: str) -> bool:
        return value in self.text or value in self.attrs


def relabelled(before: Page, old: int, after: Page, new: int) -> bool:
    """Both nodes named by a label that names one field (column header, <label>, <dt>), and not the same."""
    was, was_kind = before.label_info(old)
    now, now_kind = after.label_info(new)
    return was_kind in STRONG_LABEL_KINDS and now_kind in STRONG_LABEL_KINDS and was != now


def split_confidence(reason: str) -> tuple[str, str]:
    """A heal's reason as (what it did, its " (confidence ...)" ending, "" when it has none)."""
    head, sep, tail = reason.rpartition(" (confidence")
    return (head, sep + tail) if sep else (reason, "")
