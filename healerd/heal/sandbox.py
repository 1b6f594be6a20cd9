"""Parsers as code: check a `parse(html)` source statically, run it in a child process.

A source may carry a Python parser instead of selectors. That code comes from a
human or an external healer and is never run inside the daemon:

- `check_parser_source` walks the AST: it must define a top-level `parse`, import
  only an allow-list of modules, and touch no dangerous builtin (`open`, `exec`,
  `eval`, `__import__`, ...) and no private or dunder attribute.
- `run_parser` starts a fresh interpreter (`python -I -S`, empty environment, a
  fresh temporary working directory) that first lowers its own resource limits
  (CPU, address space, file size 0, no new processes, few file descriptors), then
  imports the allowed modules as stripped-down proxies (public, non-module
  attributes only), installs restricted builtins and a restricted `__import__`,
  reads the page on stdin and writes one JSON envelope on stdout. The parent
  enforces a wall-clock limit (killing the whole process group) and an output cap.

Anything that goes wrong raises ParserRejected with one clear line. The limits
are applied by the child to itself before any untrusted byte is read, rather than
in a `preexec_fn`, which is unsafe in a threaded parent such as the daemon.
"""

from __future__ import annotations

import ast
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

ALLOWED_IMPORTS = (
    "re", "json", "datetime", "html", "math", "string", "itertools", "collections", "functools",
    "decimal", "unicodedata", "urllib.parse", "selectolax", "selectolax.lexbor",
)
FORBIDDEN_NAMES = frozenset({
    "open", "exec", "eval", "compile", "__import__", "globals", "locals", "vars", "breakpoint", "input",
    "help", "exit", "quit", "memoryview", "__builtins__", "__loader__", "__spec__",
})
# Attributes that lead from ordinary objects to frames, code and other globals.
FORBIDDEN_ATTRS = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code", "ag_await",
    "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "tb_frame", "tb_next", "func_globals",
})
MAX_SOURCE_CHARS = 200_000
_STDERR_KEEP = 4000


class ParserRejected(Exception):
    """A parser that may not run, or that failed when run; `reason` is one clear line."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


# ---------------------------------------------------------------- static check


def _is_allowed_module(name: str) -> bool:
    return name in ALLOWED_IMPORTS


def _where(node: ast.AST) -> str:
    return f"line {getattr(node, 'lineno', '?')}"


def check_parser_source(code: str) -> None:
    """Raise ParserRejected unless `code` is a parser this module agrees to run."""
    if not isinstance(code, str):
        raise ParserRejected("parser source must be text")
    if len(code) > MAX_SOURCE_CHARS:
        raise ParserRejected(f"parser source is too large ({len(code)} characters, limit {MAX_SOURCE_CHARS})")
    try:
        tree = ast.parse(code, filename="parser.py")
    except SyntaxError as exc:
        raise ParserRejected(f"parser does not parse: line {exc.lineno}: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        raise ParserRejected(f"parser does not parse: {type(exc).__name__}: {exc}") from None

    parse_defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "parse"]
    if not parse_defs:
        raise ParserRejected("parser does not define a top-level function parse(html)")
    args = parse_defs[-1].args
    if not (args.posonlyargs or args.args or args.vararg):
        raise ParserRejected("parse() must take the page's HTML as its first argument")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not _is_allowed_module(alias.name):
                    raise ParserRejected(f"parser imports {alias.name!r} ({_where(node)}); allowed: "
                                         f"{', '.join(ALLOWED_IMPORTS)}")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise ParserRejected(f"parser uses a relative import ({_where(node)})")
            mod = node.module or ""
            for alias in node.names:
                if alias.name == "*":
                    raise ParserRejected(f"parser uses 'from {mod} import *' ({_where(node)})")
                if not (_is_allowed_module(mod) or _is_allowed_module(f"{mod}.{alias.name}")):
                    raise ParserRejected(f"parser imports {mod!r} ({_where(node)}); allowed: "
                                         f"{', '.join(ALLOWED_IMPORTS)}")
        elif isinstance(node, ast.Name):
            if node.id in FORBIDDEN_NAMES:
                raise ParserRejected(f"parser uses the forbidden name {node.id!r} ({_where(node)})")
            if node.id.startswith("__") and node.id != "__name__":
                raise ParserRejected(f"parser uses the dunder name {node.id!r} ({_where(node)})")
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise ParserRejected(f"parser accesses the private attribute {node.attr!r} ({_where(node)})")
            if node.attr in FORBIDDEN_ATTRS:
                raise ParserRejected(f"parser accesses the attribute {node.attr!r} ({_where(node)})")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "setattr", "delattr", "hasattr") and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str) \
                    and (name.value.startswith("_") or name.value in FORBIDDEN_ATTRS):
                raise ParserRejected(f"parser calls {node.func.id}() on the attribute {name.value!r} ({_where(node)})")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name in FORBIDDEN_NAMES:
                raise ParserRejected(f"parser redefines the name {node.name!r} ({_where(node)})")


# ---------------------------------------------------------------- the child

# Run as `python -I -S -c RUNNER CONFIG_JSON`; stdin: {"code": ..., "html": ...} as JSON.
# Writes one line of JSON on stdout: {"ok": true, "result": ...} or {"ok": false, "kind", "error"},
# plus "limits": the resource limits the child ran under.
RUNNER = r'''
import sys

def _main():
    import json, resource
    cfg = json.loads(sys.argv[1])

    def limit(which, soft, hard=None):
        try:
            resource.setrlimit(which, (soft, soft if hard is None else hard))
        except (ValueError, OSError):
            pass

    limit(resource.RLIMIT_CPU, cfg["cpu"], cfg["cpu"] + 1)
    limit(resource.RLIMIT_AS, cfg["mem"])
    limit(resource.RLIMIT_FSIZE, 0)
    limit(resource.RLIMIT_CORE, 0)
    if hasattr(resource, "RLIMIT_NPROC"):
        limit(resource.RLIMIT_NPROC, 0)
    sys.path[:0] = cfg["paths"]
    out = sys.stdout.buffer

    def reply(obj):
        obj["limits"] = {k: list(resource.getrlimit(getattr(resource, "RLIMIT_" + k.upper())))
                         for k in ("cpu", "as", "fsize", "nofile", "core")}
        data = json.dumps(obj, ensure_ascii=False, allow_nan=False).encode("utf-8", "replace")
        out.write(data)
        out.write(b"\n")
        out.flush()

    try:
        payload = json.loads(sys.stdin.buffer.read().decode("utf-8", "replace"))
        code, html = payload["code"], payload["html"]
    except Exception as exc:
        reply({"ok": False, "kind": "input", "error": "bad input to the runner: %s" % type(exc).__name__})
        return

    import builtins, types, importlib
    allowed = cfg["allowed"]
    blocked = {tuple(x) for x in cfg["blocked_attrs"]}
    forbidden_attrs = set(cfg["forbidden_attrs"])
    for name in allowed:
        importlib.import_module(name)
    limit(resource.RLIMIT_NOFILE, 8)

    plain = (type, types.FunctionType, types.BuiltinFunctionType, str, int, float, bool, bytes, tuple,
             frozenset, type(None))
    proxies = {}

    def proxy(name):
        if name not in proxies:
            p = types.ModuleType(name)
            mod = sys.modules.get(name) if name in allowed else None
            if mod is not None:
                for key, value in vars(mod).items():
                    if key.startswith("_") or (name, key) in blocked or not isinstance(value, plain):
                        continue
                    setattr(p, key, value)
            proxies[name] = p
        return proxies[name]

    for name in allowed:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            proxy(".".join(parts[:i]))
        for i in range(1, len(parts)):
            setattr(proxy(".".join(parts[:i])), parts[i], proxy(".".join(parts[:i + 1])))

    def safe_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level:
            raise ImportError("relative imports are not allowed")
        if fromlist:
            if name in allowed or (name in proxies and all(name + "." + f in allowed for f in fromlist)):
                return proxies[name]
        elif name in allowed:
            return proxies[name.split(".")[0]]
        raise ImportError("import of %r is not allowed" % name)

    def check_name(name):
        if not isinstance(name, str) or name.startswith("_") or name in forbidden_attrs:
            raise AttributeError("access to attribute %r is not allowed" % (name,))

    _getattr, _setattr, _delattr = getattr, setattr, delattr

    def safe_getattr(obj, name, *default):
        check_name(name)
        return _getattr(obj, name, *default)

    def safe_hasattr(obj, name):
        check_name(name)
        return hasattr(obj, name)

    def safe_setattr(obj, name, value):
        check_name(name)
        return _setattr(obj, name, value)

    def safe_delattr(obj, name):
        check_name(name)
        return _delattr(obj, name)

    safe = {k: getattr(builtins, k) for k in cfg["builtins"] if hasattr(builtins, k)}
    safe.update(getattr=safe_getattr, hasattr=safe_hasattr, setattr=safe_setattr, delattr=safe_delattr,
                __import__=safe_import, __build_class__=builtins.__build_class__)
    env = {"__builtins__": safe, "__name__": "parser"}

    sys.stdout = sys.stderr   # print() in the parser goes to stderr, never into the reply
    try:
        exec(compile(code, "parser.py", "exec"), env)
        fn = env.get("parse")
        if not callable(fn):
            reply({"ok": False, "kind": "no_parse", "error": "parser does not define parse(html)"})
            return
        result = fn(html)
    except MemoryError:
        reply({"ok": False, "kind": "memory", "error": "MemoryError"})
        return
    except RecursionError:
        reply({"ok": False, "kind": "raised", "error": "RecursionError: maximum recursion depth exceeded"})
        return
    except BaseException as exc:
        msg = " ".join(str(exc).split())[:300]
        reply({"ok": False, "kind": "raised", "error": "%s: %s" % (type(exc).__name__, msg) if msg
               else type(exc).__name__})
        return
    try:
        reply({"ok": True, "result": result})
    except MemoryError:
        reply({"ok": False, "kind": "memory", "error": "MemoryError"})
    except (TypeError, ValueError) as exc:
        reply({"ok": False, "kind": "not_json", "error": "%s: %s" % (type(exc).__name__, str(exc)[:200])})

_main()
'''

SAFE_BUILTINS = (
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "classmethod", "dict",
    "dir", "divmod", "enumerate", "filter", "float", "format", "frozenset", "hash", "hex", "id", "int",
    "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next", "object", "oct", "ord", "pow",
    "print", "property", "range", "repr", "reversed", "round", "set", "slice", "sorted", "staticmethod", "str",
    "sum", "super", "tuple", "type", "zip", "None", "True", "False", "NotImplemented", "Ellipsis",
    "ArithmeticError", "AssertionError", "AttributeError", "Exception", "IndexError", "KeyError", "LookupError",
    "NameError", "NotImplementedError", "OverflowError", "RuntimeError", "StopIteration", "TypeError",
    "UnicodeDecodeError", "UnicodeEncodeError", "UnicodeError", "ValueError", "ZeroDivisionError",
)
# Public attributes of allowed modules that still lead somewhere they should not.
BLOCKED_MODULE_ATTRS = (("string", "Formatter"),)


def _import_paths() -> list[str]:
    """The sys.path entries holding the allowed third-party packages (selectolax)."""
    paths: list[str] = []
    try:
        import selectolax

        pkg_dir = os.path.dirname(os.path.abspath(selectolax.__file__))
        paths.append(os.path.dirname(pkg_dir))
    except ImportError:
        pass
    return paths


@dataclass
class ChildResult:
    returncode: int
    stdout: bytes
    stderr: str          # the last few thousand characters
    timed_out: bool
    overflow: bool


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass


def spawn_child(script: str, payload: bytes, argv: list[str], *, wall_seconds: float,
                max_output: int) -> ChildResult:
    """Run `python -I -S -c script *argv` with an empty environment in a fresh temp dir.

    `payload` goes on stdin; stdout is read up to `max_output` bytes (the child's
    process group is killed past it, or after `wall_seconds`).
    """
    with tempfile.TemporaryDirectory(prefix="healerd-parser-") as tmp:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", script, *argv],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={}, cwd=tmp, start_new_session=True, close_fds=True)
        out = bytearray()
        err = bytearray()
        state = {"overflow": False}

        def feed() -> None:
            try:
                proc.stdin.write(payload)
            except (BrokenPipeError, OSError):
                pass
            finally:
                try:
                    proc.stdin.close()
                except OSError:
                    pass

        def read_out() -> None:
            while True:
                chunk = proc.stdout.read1(65536) if hasattr(proc.stdout, "read1") else proc.stdout.read(65536)
                if not chunk:
                    return
                out.extend(chunk)
                if len(out) > max_output:
                    state["overflow"] = True
                    _kill_group(proc)
                    return

        def read_err() -> None:
            while True:
                chunk = proc.stderr.read1(65536) if hasattr(proc.stderr, "read1") else proc.stderr.read(65536)
                if not chunk:
                    return
                err.extend(chunk)
                if len(err) > 2 * _STDERR_KEEP:
                    del err[:-_STDERR_KEEP]

        threads = [threading.Thread(target=f, daemon=True) for f in (feed, read_out, read_err)]
        for t in threads:
            t.start()
        timed_out = False
        try:
            proc.wait(timeout=wall_seconds)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            proc.wait()
        for t in threads:
            t.join(timeout=1)
        if any(t.is_alive() for t in threads):
            # Something the child started still holds the pipes: its process group is alive, kill it.
            _kill_group(proc)
            for t in threads:
                t.join(timeout=5)
        for stream in (proc.stdout, proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
        return ChildResult(proc.returncode, bytes(out), err[-_STDERR_KEEP:].decode("utf-8", "replace"),
                           timed_out, state["overflow"])


def _check_value(result: Any) -> dict | list[dict]:
    def check_record(rec: Any, where: str) -> None:
        if not isinstance(rec, dict):
            raise ParserRejected(f"parser returned {where}a value of type {type(rec).__name__}, expected a dict")
        for k, v in rec.items():
            if not isinstance(v, (str, int, float, bool)) and v is not None:
                raise ParserRejected(f"parser returned {where}field {k!r} of type {type(v).__name__}; "
                                     f"values must be strings, numbers, booleans or null")

    if isinstance(result, list):
        for i, rec in enumerate(result):
            check_record(rec, f"item {i}: ")
        return result
    if isinstance(result, dict):
        check_record(result, "")
        return result
    raise ParserRejected(f"parser returned a value of type {type(result).__name__}, expected a dict or a list "
                         f"of dicts")


def interpret(child: ChildResult, *, cpu_seconds: float, memory_mb: int, wall_seconds: float,
              max_output: int) -> dict | list[dict]:
    """Turn what the child did into the parser's records, or a ParserRejected."""
    if child.overflow:
        raise ParserRejected(f"parser output exceeds {max_output} bytes; the parser was killed")
    if child.timed_out:
        raise ParserRejected(f"parser ran longer than {wall_seconds:g}s (wall clock) and was killed")
    rc = child.returncode
    if rc in (-signal.SIGXCPU, -signal.SIGKILL):
        raise ParserRejected(f"parser used more than {cpu_seconds:g}s of CPU time (or its memory limit) "
                             f"and was killed")
    if "MemoryError" in child.stderr and not child.stdout.strip():
        raise ParserRejected(f"parser ran out of memory (limit {memory_mb} MB)")
    text = child.stdout.strip()
    if not text:
        tail = " ".join(child.stderr.split())[-300:]
        raise ParserRejected(f"parser process exited with status {rc} and no output" + (f": {tail}" if tail else ""))
    try:
        envelope = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ParserRejected(f"parser output is not valid JSON ({exc.__class__.__name__} at byte "
                             f"{getattr(exc, 'pos', getattr(exc, 'start', '?'))})") from None
    if not isinstance(envelope, dict) or "ok" not in envelope:
        raise ParserRejected("parser output is not a result envelope")
    if not envelope["ok"]:
        kind, error = envelope.get("kind"), str(envelope.get("error", "unknown error"))
        if kind == "memory":
            raise ParserRejected(f"parser ran out of memory (limit {memory_mb} MB)")
        if kind == "not_json":
            raise ParserRejected(f"parser returned a value that is not JSON ({error})")
        if kind == "raised":
            raise ParserRejected(f"parser raised {error}")
        raise ParserRejected(error)
    return _check_value(envelope.get("result"))


def run_parser(code: str, html: str, *, cpu_seconds: float = 5, memory_mb: int = 256,
               wall_seconds: float = 10, max_output: int = 5_000_000) -> dict | list[dict]:
    """Check `code`, run its parse(html) in a limited child process, return its records."""
    check_parser_source(code)
    if isinstance(html, bytes):
        html = html.decode("utf-8", errors="replace")
    return run_unchecked(code, html, cpu_seconds=cpu_seconds, memory_mb=memory_mb, wall_seconds=wall_seconds,
                         max_output=max_output)


def runner_argv(cpu_seconds: float, memory_mb: int) -> list[str]:
    """The runner's command-line configuration: limits, import paths, allow-lists."""
    cfg = {
        "cpu": max(1, math.ceil(cpu_seconds)),
        "mem": int(memory_mb) * 1024 * 1024,
        "paths": _import_paths(),
        "allowed": list(ALLOWED_IMPORTS),
        "blocked_attrs": [list(x) for x in BLOCKED_MODULE_ATTRS],
        "forbidden_attrs": sorted(FORBIDDEN_ATTRS),
        "builtins": list(SAFE_BUILTINS),
    }
    return [json.dumps(cfg)]


def run_unchecked(code: str, html: str, *, cpu_seconds: float = 5, memory_mb: int = 256,
                  wall_seconds: float = 10, max_output: int = 5_000_000) -> dict | list[dict]:
    """run_parser without the static check: only the runtime defences (used to test them)."""
    payload = json.dumps({"code": code, "html": html}, ensure_ascii=False).encode("utf-8", "replace")
    try:
        child = spawn_child(RUNNER, payload, runner_argv(cpu_seconds, memory_mb), wall_seconds=wall_seconds,
                            max_output=max_output)
    except OSError as exc:
        raise ParserRejected(f"cannot start the parser process: {exc.strerror or exc}") from None
    return interpret(child, cpu_seconds=cpu_seconds, memory_mb=memory_mb, wall_seconds=wall_seconds,
                     max_output=max_output)
