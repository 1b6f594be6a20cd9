"""healerctl: control a running healerd over its Unix socket.

Exit codes: 0 success; 1 the request was refused or failed (one line on stderr saying
why); 2 usage error; 3 the daemon cannot be reached (the message names the socket).

This module is the entry point (`healerctl = healerd.cli.healerctl:main`, and `python -m
healerd.cli.healerctl`). The common queries in their plain forms (`status NAME`, `ping`,
`records NAME`) are answered by healerd/cli/light.py without importing click, which costs more
CPU than the rest of such a command; everything else goes to the click group
(healerd/cli/group.py), which prints the same text. `cli`, the group, is importable from here.
"""

from __future__ import annotations

import sys

# typing only for the type checker: importing it costs healerctl's light path ~10 ms of CPU
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def main() -> None:
    from healerd.cli.light import answer

    code = answer(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from healerd.cli.group import main as full

    full()


def __getattr__(name: str) -> Any:
    """`cli` (the click group) and `_flatten_records`, imported when asked for, not at start."""
    if name == "cli":
        from healerd.cli.group import cli
        return cli
    if name == "_flatten_records":
        from healerd.cli.views import _flatten_records
        return _flatten_records
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main()
