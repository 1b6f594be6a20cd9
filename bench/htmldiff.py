"""Time the structural HTML diff and the sanitizer on ~1 MB pages.

    python bench/htmldiff.py [CORPUS_DIR]

Prints one line per case (seconds, output size) and, as its last line, one JSON
object with the figures. CORPUS_DIR (optional) adds every before/after pair of
the corpus, timed as a whole.
"""

from __future__ import annotations

import glob
import json
import os
import random
import sys
import time

from healerd.core.htmldiff import diff_signature, structural_diff, structure_lines, template_signature
from healerd.core.sanitize import mask_text


def shop(n: int, item_class: str = "product", seed: int = 0) -> str:
    rnd = random.Random(seed)
    cards = "".join(f'<div class="{item_class} card"><h3 class="title">Product {i}</h3>'
                    f'<span class="price">${rnd.randint(1, 999)}.99</span><p class="desc">{"lorem ipsum " * 3}</p>'
                    f'</div>' for i in range(n))
    return f'<html><body><div class="wrap"><script>var a = 1;</script>{cards}</div></body></html>'


def scrambled(n: int, seed: int) -> str:
    rnd = random.Random(seed)
    rows = "".join(f'<div class="c{rnd.randint(0, 50)}"><span class="s{rnd.randint(0, 30)}">t{rnd.randint(0, 9)}'
                   f'</span></div>' for _ in range(n))
    return f"<html><body>{rows}</body></html>"


def timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t, out


def main() -> None:
    figures: dict[str, float] = {}
    a = shop(6500)
    cases = {
        "lines_1mb": (structure_lines, a),
        "template_sig_1mb": (template_signature, a),
        "diff_class_rename_1mb": (structural_diff, a, shop(6500, "item")),
        "diff_text_changes_1mb": (structural_diff, a, shop(6500, seed=1)),
        "diff_identical_1mb": (structural_diff, a, a),
        "diff_scrambled_1mb": (structural_diff, scrambled(20_000, 1), scrambled(20_000, 2)),
        "mask_text_1mb": (mask_text, a),
    }
    print(f"page size: {len(a) / 1e6:.2f} MB")
    for name, (fn, *args) in cases.items():
        secs, out = timed(fn, *args)
        figures[name] = round(secs, 3)
        print(f"{name:28s} {secs:7.3f}s  output {len(out) if hasattr(out, '__len__') else out}")
    secs, _ = timed(diff_signature, structural_diff(a, shop(6500, "item")))
    figures["diff_signature"] = round(secs, 4)
    if len(sys.argv) > 1:
        pairs = sorted(glob.glob(os.path.join(sys.argv[1], "**", "before.html"), recursive=True))
        t = time.perf_counter()
        for before in pairs:
            after = os.path.join(os.path.dirname(before), "after.html")
            with open(before, encoding="utf-8", errors="replace") as f1, \
                    open(after, encoding="utf-8", errors="replace") as f2:
                structural_diff(f1.read(), f2.read())
        figures["corpus_pairs"] = len(pairs)
        figures["corpus_total_s"] = round(time.perf_counter() - t, 3)
        print(f"corpus: {len(pairs)} pairs in {figures['corpus_total_s']}s")
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
