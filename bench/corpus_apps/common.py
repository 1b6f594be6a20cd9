"""Shared parts of the application corpus generators (bench/corpus_apps/).

Each generator renders the same fixed data with two releases or themes of one application,
each release in its own throwaway virtualenv (VENVS below, pinned versions), and turns the
pages into "the site changed" cases (format: tests/data/corpus/README.md).

A generator script has two halves:
- ``render``: run by the application's own virtualenv (``python app_x.py render OUTDIR LABEL``);
  it imports the application, writes pages into OUTDIR and never imports healerd;
- ``cases``: run by healerd's interpreter; it reads the rendered pages and writes cases with
  `CaseWriter`, which computes every expected value with healerd's extraction: the old
  blueprint on before.html, hand-written truth selectors (kept in the generator, never in
  case.json) on after.html.

Only the standard library is imported at module level, so the render half can import this
module from an application's virtualenv.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(REPO, "tests", "data", "corpus3")
VENVS = os.environ.get("CORPUS_APPS_VENVS", "/tmp/healerd-corpus-apps")

# Whole applications kept out of the development part (see tests/data/corpus3/README.md).
HELD_BACK = {"datasette", "pydoctor"}


def part_of(app: str) -> str:
    return "held-back" if app in HELD_BACK else "dev"


# ---------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------

def venv_python(name: str, requirements: list[str]) -> str:
    """The interpreter of the throwaway virtualenv VENVS/NAME, made when missing.

    What is installed is the lock file locks/NAME.txt when there is one (every package of the
    virtualenv at the version the cases were rendered with, installed without resolution),
    else REQUIREMENTS (the generator's pins of the application itself)."""
    root = os.path.join(VENVS, name)
    py = os.path.join(root, "bin", "python")
    lock = os.path.join(HERE, "locks", name + ".txt")
    if os.path.exists(lock):
        requirements = ["--no-deps", "-r", lock]
        with open(lock, encoding="utf-8") as fh:
            wanted = fh.read()
    else:
        wanted = "\n".join(requirements) + "\n"
    stamp = os.path.join(root, "installed.txt")
    if os.path.exists(stamp):
        with open(stamp, encoding="utf-8") as fh:
            if fh.read() == wanted:
                return py
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", root], check=True)
    subprocess.run([py, "-m", "pip", "install", "-q", *requirements], check=True)
    with open(stamp, "w", encoding="utf-8") as fh:
        fh.write(wanted)
    return py


def render_with(script: str, venv: str, requirements: list[str], outdir: str, label: str) -> None:
    """Run SCRIPT's render half with the virtualenv's interpreter into OUTDIR/LABEL."""
    py = venv_python(venv, requirements)
    target = os.path.abspath(os.path.join(outdir, label))
    script = os.path.abspath(script)
    os.makedirs(target, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update({"TZ": "UTC", "LC_ALL": "C.UTF-8", "SOURCE_DATE_EPOCH": "1700000000", "PYTHONHASHSEED": "0"})
    subprocess.run([py, script, "render", target, label], check=True, env=env, cwd=target)


_STYLE = re.compile(r"(<style\b[^>]*>).*?(</style>)", re.S | re.I)
_SCRIPT = re.compile(r"(<script\b[^>]*>).*?(</script>)", re.S | re.I)


def tidy(html: str, subs: list[tuple[str, str]] = ()) -> str:  # type: ignore[assignment]
    """A rendered page made small and reproducible: inline style and script bodies emptied,
    the generator's substitutions (timestamps, temporary paths) applied."""
    html = _STYLE.sub(r"\1\2", html)
    html = _SCRIPT.sub(r"\1\2", html)
    for pattern, repl in subs:
        html = re.sub(pattern, repl, html)
    return html.replace("\r\n", "\n")


def read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


# ---------------------------------------------------------------------------
# cases
# ---------------------------------------------------------------------------

Field = tuple[str, str | None, str]          # selector, attr, type
Truth = tuple[str, str | None] | None        # selector, attr on after.html; None: the data is gone


class CaseWriter:
    """Writes one application's cases below tests/data/corpus3/<part>/."""

    def __init__(self, app: str, root: str = CORPUS):
        self.app = app
        self.root = os.path.join(root, part_of(app))
        self.positives: list[str] = []
        self.written: list[str] = []

    def case(self, cid: str, origin: str, items: str | None, fields: dict[str, Field],
             before: str, after: str, truth_items: str | None, truth: dict[str, Truth],
             expect: str) -> dict[str, Any]:
        """One real case. EXPECT is "positive" (the old selectors break, the data is there),
        "negative" (a field's data is gone: TRUTH maps it to None) or "control" (the old
        selectors still give the truth). Each is checked before anything is written."""
        from healerd.core.blueprint import Blueprint, FieldSpec
        from healerd.core.extract import extract

        assert expect in ("positive", "negative", "control"), expect
        assert set(truth) == set(fields), f"{cid}: truth must name every field"
        bp = Blueprint(fields={n: FieldSpec(n, s, t, a) for n, (s, a, t) in fields.items()}, items=items)
        got_before = extract(before, bp).raw
        recs = got_before if isinstance(got_before, list) else [got_before]
        assert recs, f"{cid}: the blueprint finds no record on before.html"
        for r in recs:
            empty = [n for n, v in r.items() if not v]
            assert not empty, f"{cid}: fields {empty} empty on before.html"
        live = {n: t for n, t in truth.items() if t is not None}
        tbp = Blueprint(fields={n: FieldSpec(n, s, fields[n][2], a) for n, (s, a) in live.items()}, items=truth_items)
        got_t = extract(after, tbp).raw
        trecs = got_t if isinstance(got_t, list) else [got_t]
        expected_after: Any = [{n: r.get(n) if n in live else None for n in fields} for r in trecs]
        for r in expected_after:
            empty = [n for n in live if not r.get(n)]
            assert not empty, f"{cid}: truth selectors find nothing for {empty} on after.html"
        if not items:
            expected_after = expected_after[0]
        case = {"id": cid, "origin": origin, "kind": "real-template", "items": items,
                "fields": {n: {"selector": s, "attr": a, "type": t} for n, (s, a, t) in fields.items()},
                "expected_before": got_before, "expected_after": expected_after,
                "heal_possible": expect != "negative"}
        old_on_after = _matches(extract(after, bp).raw, expected_after, case)
        if expect == "control":
            assert old_on_after, f"{cid}: a control whose old selectors no longer give the truth"
            case["no_break"] = True
        elif expect == "positive":
            assert not old_on_after, f"{cid}: the old selectors still work (a control, not a positive)"
            self.positives.append(cid)
        else:
            assert len(live) < len(fields), f"{cid}: a negative must lose a field"
        self._write("real-template", case, before, after)
        return case

    def synthetic(self, per_case: int = 4, seed0: int = 0) -> int:
        """Seeded mutations (bench/heal_fuzz.py's, plain and --modern) of this app's positives'
        before pages, PER_CASE per positive, each a different set of changes."""
        sys.path.insert(0, os.path.dirname(HERE))
        import heal_fuzz  # bench/heal_fuzz.py

        n = 0
        for cid in self.positives:
            path = os.path.join(self.root, "real-template", cid)
            with open(os.path.join(path, "case.json"), encoding="utf-8") as fh:
                base_case = json.load(fh)
            before = read(os.path.join(path, "before.html"))
            bases = heal_fuzz.base_cases(path, None)
            if not bases:
                continue
            seen: set[str] = set()
            made = 0
            for k in range(400):
                if made >= per_case:
                    break
                seed = seed0 + 7919 * (abs(hash_id(cid)) % 100_000) + k
                modern = k % 2 == 1
                g = heal_fuzz.generate(bases[0], seed, modern=modern)
                if g is None:
                    continue
                muts = "+".join(g["case"]["mutations"])
                if muts in seen:
                    continue
                seen.add(muts)
                made += 1
                sid = f"syn-{cid}-{muts}"
                note = "; ".join(g["case"]["notes"])
                case = {"id": sid,
                        "origin": f"synthetic mutation of real-template case {cid} (bench/heal_fuzz.py, seed {seed}"
                                  f"{', --modern' if modern else ''}): {note}",
                        "kind": "synthetic", "items": base_case["items"], "fields": base_case["fields"],
                        "expected_before": base_case["expected_before"],
                        "expected_after": g["case"]["expected_after"],
                        "heal_possible": g["case"]["heal_possible"]}
                if g["case"].get("no_break"):
                    case["no_break"] = True
                self._write("synthetic", case, before, g["after"])
                n += 1
        return n

    def _write(self, kind: str, case: dict[str, Any], before: str, after: str) -> None:
        d = os.path.join(self.root, kind, case["id"])
        assert case["id"] not in self.written, f"duplicate case id {case['id']}"
        self.written.append(case["id"])
        write(os.path.join(d, "before.html"), before)
        write(os.path.join(d, "after.html"), after)
        write(os.path.join(d, "case.json"), json.dumps(case, indent=2, ensure_ascii=False) + "\n")


def hash_id(text: str) -> int:
    """A stable number from a string (Python's hash() of a str changes per process)."""
    import hashlib
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


def _matches(raw: Any, expected: Any, case: dict[str, Any]) -> bool:
    sys.path.insert(0, os.path.dirname(HERE))
    import heal as bench  # bench/heal.py: the corpus's comparison rule
    return bool(bench.matches_expected(raw, expected, case))


def clean(app: str) -> None:
    """Remove an application's cases before they are written again."""
    base = os.path.join(CORPUS, part_of(app))
    for kind in ("real-template", "synthetic"):
        d = os.path.join(base, kind)
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            if name.startswith(app + "-") or name.startswith("syn-" + app + "-"):
                shutil.rmtree(os.path.join(d, name))


def main(script: str, app: str, releases: dict[str, tuple[str, list[str]]], make_cases: Any,
         argv: list[str] | None = None) -> int:
    """A generator's entry: render each release in its virtualenv (under a temporary folder),
    then write the application's cases and their seeded mutations."""
    import argparse
    import tempfile

    if os.environ.get("PYTHONHASHSEED") != "0":
        # bench/heal_fuzz.py iterates over sets of class names: fix the string hash so that
        # the seeded mutations are the same on every rebuild
        os.execve(sys.executable, [sys.executable, os.path.abspath(script), *(sys.argv[1:] if argv is None else argv)],
                  {**os.environ, "PYTHONHASHSEED": "0"})
    ap = argparse.ArgumentParser(description=f"Rebuild the {app} cases of tests/data/corpus3")
    ap.add_argument("--keep", help="render into this folder and keep it (default: a temporary folder)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix=f"corpus3-{app}-") as tmp:
        out = args.keep or tmp
        for label, (venv, reqs) in releases.items():
            render_with(os.path.abspath(script), venv, reqs, out, label)
        clean(app)
        w = CaseWriter(app)
        make_cases(w, lambda label, name: read(os.path.join(out, label, name)))
        n = w.synthetic()
    print(f"{app}: {len(w.written) - n} real cases ({len(w.positives)} positive), {n} synthetic -> {w.root}")
    return 0
