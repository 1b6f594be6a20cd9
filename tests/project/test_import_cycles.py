"""The `acyclic_modules` import-linter contract (contrib/import_cycles.py): an import circle
between modules, of any length, breaks `lint-imports`; the broken contract names the circle
and the lines that close it. Run with the real `lint-imports` on a small package written here."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import grimp

from contrib.import_cycles import module_cycles  # the checkout is on sys.path: tests/ is a package in it
from tests.support.paths import ROOT

CONFIG = """\
[tool.importlinter]
root_package = "pkgx"
contract_types = ["acyclic_modules: contrib.import_cycles.AcyclicModulesContract"]

[[tool.importlinter.contracts]]
name = "No import circles between modules"
type = "acyclic_modules"
{extra}
"""


def _package(tmp_path: Path, modules: dict[str, str], extra: str = "") -> Path:
    pkg = tmp_path / "pkgx"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, body in modules.items():
        (pkg / f"{name}.py").write_text(textwrap.dedent(body))
    (tmp_path / "pyproject.toml").write_text(CONFIG.format(extra=extra))
    return tmp_path


def _lint(where: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(where), str(ROOT)]), "COLUMNS": "300",
           "NO_COLOR": "1"}
    lint = Path(sys.executable).parent / "lint-imports"
    return subprocess.run([str(lint), "--no-cache"], cwd=where, env=env, capture_output=True, text=True,
                          timeout=120)


CIRCLE = {
    "a": "from pkgx import b\n",
    "b": """\
        def later():
            from pkgx.c import thing
            return thing
        """,
    "c": """\
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from pkgx.a import b
        thing = 1
        """,
    "d": "import pkgx.a\n",   # imports the circle, is not in it
}


def test_a_circle_of_three_modules_breaks_the_contract_and_is_named(tmp_path):
    r = _lint(_package(tmp_path, CIRCLE))
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "No import circles between modules BROKEN" in out
    assert "Import circle between pkgx.a, pkgx.b, pkgx.c:" in out
    # Each import that closes it, with its line: the one inside a function and the annotation-only one too.
    assert "pkgx.a -> pkgx.b (l.1: from pkgx import b)" in out
    assert "pkgx.b -> pkgx.c (l.2: from pkgx.c import thing)" in out
    assert "pkgx.c -> pkgx.a (l.3: from pkgx.a import b)" in out
    assert "pkgx.d" not in out.split("Broken contracts")[-1]


def test_without_the_circle_the_contract_is_kept(tmp_path):
    modules = {**CIRCLE, "c": "thing = 1\n"}
    r = _lint(_package(tmp_path, modules))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "No import circles between modules KEPT" in r.stdout


def test_an_ignored_import_opens_the_circle(tmp_path):
    r = _lint(_package(tmp_path, CIRCLE, extra='ignore_imports = ["pkgx.c -> pkgx.a"]'))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "KEPT (1 ignored import)" in r.stdout


def test_module_cycles_finds_each_circle_once_and_nothing_else():
    g = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.b", "p.a"),                    # a pair
                               ("p.c", "p.d"), ("p.d", "p.e"), ("p.e", "p.c"),    # a triangle
                               ("p.e", "p.f"), ("p.f", "p.g"), ("p.h", "p.a")]:   # chains into them, out of them
        g.add_import(importer=importer, imported=imported)
    assert module_cycles(g) == [["p.a", "p.b"], ["p.c", "p.d", "p.e"]]
    g.remove_import(importer="p.e", imported="p.c")
    assert module_cycles(g) == [["p.a", "p.b"]]
