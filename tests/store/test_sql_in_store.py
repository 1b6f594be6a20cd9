"""SQL stays in healerd/store: what the import-linter contract cannot see.

The contract "SQL stays in the store" (pyproject.toml) forbids importing apsw and the raw-SQL
helpers (healerd/store/sql.py) outside healerd/store. It sees modules, not names nor strings, so
this test reads every module above the store for the rest: a raw-SQL helper taken from
`healerd.store.db`, a `.execute(...)` call, or a string that is an SQL statement.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import healerd

PACKAGE = Path(healerd.__file__).resolve().parent
SQL_HELPERS = {"row", "rows", "scalar"}
SQL_STATEMENT = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|PRAGMA|BEGIN|COMMIT|ROLLBACK|CREATE|DROP|ALTER)\s")


def sql_outside_store(tree: ast.AST) -> list[str]:
    """What in one module's syntax tree runs SQL itself: each as "line N: what"."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("healerd.store.db", "healerd.store.sql"):
            taken = sorted({a.name for a in node.names} & SQL_HELPERS)
            if taken:
                found.append(f"line {node.lineno}: imports {', '.join(taken)} from {node.module}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("execute", "executemany"):
            found.append(f"line {node.lineno}: calls .{node.func.attr}()")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_STATEMENT.match(node.value):
            found.append(f"line {node.lineno}: an SQL statement {node.value[:40]!r}")
    return found


def test_the_checker_sees_each_kind_of_sql():
    source = ("from healerd.store.db import connect, row\n"
              "def f(conn):\n"
              "    conn.execute('SELECT 1')\n"
              "    conn.executemany('x', [])\n"
              "    return 'a SELECT in prose is not one'\n")
    assert sorted(sql_outside_store(ast.parse(source))) == [
        "line 1: imports row from healerd.store.db",
        "line 3: an SQL statement 'SELECT 1'",
        "line 3: calls .execute()",
        "line 4: calls .executemany()",
    ]


def test_no_module_above_the_store_runs_sql():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("store/"):
            continue
        found = sql_outside_store(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        if found:
            offenders[rel] = found
    assert offenders == {}
