"""The suite's own layout: test modules sit in the folder of the part they test, fixtures come
from conftest.py by name, and what tests share is imported from the tests.support package.

A test that imports conftest or another test module runs that module's fixtures and tests
again under a second name, and breaks when either file moves; these checks read the source
of every module under tests/ (not by importing it) and name each offending line."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import TESTS


def python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "data" not in p.relative_to(TESTS).parts)


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) for each import in the file, at any depth (imports inside functions too);
    `from . import x` and `from pkg import x` give both the package and pkg.x."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{alias.name}".replace("..", ".")) for alias in node.names]
    return out


def offending_imports(path: Path) -> list[str]:
    """'file:line: imports module' for each import of conftest or of a test module."""
    shown = path.relative_to(TESTS.parent) if path.is_relative_to(TESTS) else path.name
    bad = []
    for line, module in imported_modules(path):
        parts = [p for p in module.split(".") if p]
        if any(p == "conftest" or p.startswith("test_") for p in parts):
            bad.append(f"{shown}:{line}: imports {module}")
    return bad


def test_no_module_imports_conftest_or_a_test_module():
    bad = [line for path in python_files() for line in offending_imports(path)]
    assert not bad, "import it from tests.support instead:\n" + "\n".join(bad)


def test_the_check_names_each_kind_of_offending_import(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text("from conftest import FAST_CONFIG\nimport test_ledger\n"
                      "def f():\n    from tests.store.test_ledger import add\n"
                      "from tests.store import test_ledger as tl\n"
                      "from tests.support.ledger_kit import add\nimport testing_tools\n")
    found = sorted(b.split(": ", 1)[0].split(":")[1] + " " + b.split(": imports ")[1] for b in offending_imports(sample))
    assert found == ["1 conftest", "1 conftest.FAST_CONFIG", "2 test_ledger", "4 tests.store.test_ledger",
                     "4 tests.store.test_ledger.add", "5 tests.store.test_ledger"]


def test_test_modules_live_in_a_folder_not_at_the_top_of_tests():
    top = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert top == [], f"move these into the folder of the part they test (core/, store/, e2e/, ...): {top}"


def test_test_module_names_are_unique_across_the_tree():
    seen: dict[str, list[str]] = {}
    for p in TESTS.rglob("test_*.py"):
        seen.setdefault(p.name, []).append(str(p.relative_to(TESTS)))
    twice = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not twice, twice
