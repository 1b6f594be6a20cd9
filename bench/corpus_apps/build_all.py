"""Rebuild every application case of tests/data/corpus3 (dev and held-back parts).

    python bench/corpus_apps/build_all.py [--only APP ...]

Runs each generator (app_*.py) with this interpreter, which must have healerd installed.
Each generator renders its pages in throwaway virtualenvs under $CORPUS_APPS_VENVS
(default /tmp/healerd-corpus-apps; made on first use, from pinned releases) and rewrites its
own cases. A rebuild gives the same files byte for byte: the renderers fix the clock
(SOURCE_DATE_EPOCH, TZ), the pages' timings and generator stamps are normalised, and the
mutations are seeded.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
APPS = ["docutils", "pelican", "bandit", "flask_admin", "datasette", "pydoctor"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", choices=APPS, help="rebuild only these applications")
    args = ap.parse_args(argv)
    failed = []
    for app in args.only or APPS:
        rc = subprocess.run([sys.executable, os.path.join(HERE, f"app_{app}.py")]).returncode
        if rc:
            failed.append(app)
    if failed:
        print(f"error: failed to rebuild {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
