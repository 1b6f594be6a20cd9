"""The names nearest a mistyped one, for "did you mean" (difflib's ratio, the standard library's)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(name: str, names: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """Up to `n` of `names` nearest `name`, best first; a name differing only in case first of all."""
    pool = [x for x in names if x != name]
    same_case = [x for x in pool if x.lower() == name.lower()]
    near = difflib.get_close_matches(name, pool, n=n, cutoff=cutoff)
    return (same_case + [x for x in near if x not in same_case])[:n]
