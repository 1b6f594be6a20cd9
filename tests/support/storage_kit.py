"""A disk that fills up: a file written until ENOSPC, and a page big enough to need the space."""

from __future__ import annotations

import errno
from pathlib import Path


def fill(path: Path) -> None:
    block = b"\0" * 65536
    with open(path, "wb") as fh:
        try:
            while True:
                fh.write(block)
                fh.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def big_page(n: int = 400) -> str:
    rows = "".join(f'<tr class="player"><td class="name">{"player-" * 8}{i}</td><td class="score">{i}</td></tr>'
                   for i in range(n))
    return f'<html><body><table class="stats">{rows}</table></body></html>'
