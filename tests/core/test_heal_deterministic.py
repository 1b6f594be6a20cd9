"""The healer's answers do not depend on the process that computes them.

Two processes whose string hashing differs (PYTHONHASHSEED: a set of strings iterates in another
order in each) heal the three development corpora and generated cases, and every answer (the
whole HealResult: the promoted selectors, the reason, the confidence, the details, the refusal's
best guess) is alike byte for byte. `bench/heal_answers.py --hash-seeds` runs the same comparison
on thousands of generated cases.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "heal_answers.py"
CORPORA = [ROOT / "tests" / "data" / "corpus", ROOT / "tests" / "data" / "corpus2", ROOT / "tests" / "data" / "corpus3" / "dev"]
GENERATED = 120


def _cases(root: Path) -> int:
    return sum("case.json" in files for _d, _s, files in os.walk(root))


def test_two_processes_hashing_strings_otherwise_give_every_heal_answer_alike():
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, str(SCRIPT), *map(str, CORPORA), "--generated", str(GENERATED), "--modern",
                           "--hash-seeds", "1", "2"], capture_output=True, text=True, env=env, timeout=1800)
    assert proc.returncode in (0, 1), proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["answers"] == sum(_cases(c) for c in CORPORA) + GENERATED
    assert result["inputs_differ"] == 0, proc.stdout   # the generator itself is the same in both
    assert result["differ"] == 0, proc.stdout
    assert proc.returncode == 0


def _compare():
    spec = importlib.util.spec_from_file_location("bench_heal_answers", SCRIPT)
    assert spec is not None and spec.loader is not None
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(SCRIPT.parent))
    return mod.compare


def test_the_comparison_names_each_case_whose_answer_differs():
    compare = _compare()
    a = [json.dumps({"id": "x", "ok": True, "reason": "r"}), json.dumps({"id": "y", "ok": False, "reason": "s"})]
    b = [a[0], json.dumps({"id": "y", "ok": False, "reason": "t"})]
    assert compare(a, b) == {"answers": 2, "differ": 1, "inputs_differ": 0, "ids": ["y"]}
    assert compare(a, a)["differ"] == 0
