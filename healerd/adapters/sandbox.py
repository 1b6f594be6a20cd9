"""Parsers as code: check a `parse(html)` source statically, run it in a confined child process.

A source may carry a Python parser instead of selectors. That code comes from a
human or an external healer, is untrusted, and is never run inside the daemon:

- `check_parser_source` walks the AST, a first and friendlier layer: a top-level
  `parse`, imports from an allow-list only (`from M import X` only where M.X is not
  itself a module outside the list), no dangerous builtin (`open`, `exec`, `eval`,
  `__import__`, ...), no private or dunder attribute, no class pattern naming
  attributes, no `.format()`/`.format_map()` template reaching into attributes or
  items. It ends with `require_confinement`: where the kernel cannot confine a child
  (probed once per process), every code parser is refused with one line.
- `run_parser` starts a fresh interpreter (`python -I -S`, empty environment, a fresh
  temporary directory). Before it reads a byte of the code or the page, the child
  imports all it may use, drops to nobody/nogroup if started by root, sets
  PR_SET_DUMPABLE 0 and PR_SET_PDEATHSIG, sets its resource limits with soft = hard
  (CPU, address space, file size 0, no processes, few descriptors), and loads a
  seccomp allow-list (which sets no_new_privs): any system call outside memory,
  futexes, clocks, its own ids, reading fd 0 and writing fds 1 and 2 fails with EPERM
  -- no files, sockets, processes, threads, signals or privilege changes. It then
  checks that open, socket, kill and setuid are refused and writes that report, with
  the limits it reads back, as its first line. Then it scrubs sys.modules, exposes
  the allowed modules as stripped-down proxies with restricted builtins, runs the
  code and writes one JSON envelope as its second line.
- The parent refuses the result unless the report shows every layer, enforces a
  wall-clock limit (killing the process group) and an output cap.

Anything that goes wrong raises ParserRejected with one clear line. The limits are
applied by the child to itself rather than in a `preexec_fn`, which is unsafe in a
threaded parent such as the daemon.
"""

from __future__ import annotations

import ast
import ctypes.util
import functools
import grp
import importlib
import importlib.util
import json
import logging
import math
import os
import pwd
import signal
import string
import subprocess
import sys
import tempfile
import threading
import time
import types
from dataclasses import dataclass
from typing import Any

from healerd.core.errors import HealerdError

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
# Special methods that only serve pickling, attribute interception or class machinery tricks.
FORBIDDEN_METHODS = frozenset({
    "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__getattribute__", "__getattr__",
    "__init_subclass__", "__set_name__", "__class_getitem__", "__mro_entries__", "__instancecheck__",
    "__subclasscheck__", "__del__", "__match_args__",
})
# Types whose positional class pattern matches the subject itself (no attribute lookup).
SELF_MATCHING = ("bool", "bytearray", "bytes", "dict", "float", "frozenset", "int", "list", "set", "str", "tuple")
# str.format / format_map resolve "{0.attr}" and "{0[key]}" without any attribute node in the code.
FORMAT_METHODS = frozenset({"format", "format_map"})
MAX_SOURCE_CHARS = 200_000
_STDERR_KEEP = 4000
log = logging.getLogger("healerd.sandbox")


class ParserRejected(HealerdError):
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

    literal_formats = _literal_format_calls(tree)
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
                _check_from_import(mod, alias.name, node)
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
            if node.name in FORBIDDEN_METHODS:
                raise ParserRejected(f"parser defines the special method {node.name!r} ({_where(node)})")
        elif isinstance(node, ast.MatchClass):
            if node.kwd_attrs:
                raise ParserRejected(f"parser uses a class pattern that names attributes "
                                     f"({', '.join(node.kwd_attrs)}=...) ({_where(node)})")
            if node.patterns and not (isinstance(node.cls, ast.Name) and node.cls.id in SELF_MATCHING):
                raise ParserRejected(f"parser uses a positional class pattern on something other than "
                                     f"{', '.join(SELF_MATCHING)} ({_where(node)})")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in FORMAT_METHODS and id(node) not in literal_formats:
            raise ParserRejected(f"parser uses .{node.attr}() other than on a string literal; use an f-string "
                                 f"({_where(node)})")
    require_confinement()


def _literal_format_calls(tree: ast.AST) -> set[int]:
    """ids of the `"...".format` attribute nodes whose literal template walks no attribute or index."""
    safe: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in FORMAT_METHODS \
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            try:
                fields = _format_fields(node.value.value)
            except ValueError as exc:
                raise ParserRejected(f"parser formats with an invalid template: {exc} ({_where(node)})") from None
            for field in fields:
                if "." in field or "[" in field:
                    raise ParserRejected(f"parser formats the field {{{field}}}, which reaches into an attribute "
                                         f"or item ({_where(node)})")
            safe.add(id(node))
    return safe


def _format_fields(template: str, depth: int = 0) -> list[str]:
    fields: list[str] = []
    for _text, field, spec, _conv in string.Formatter().parse(template):
        if field is not None:
            fields.append(field)
        if spec and depth < 2:
            fields.extend(_format_fields(spec, depth + 1))
    return fields


def _check_from_import(mod: str, name: str, node: ast.AST) -> None:
    """`from M import X` only where M is allowed and X is a plain attribute of it or an allowed submodule."""
    if _is_allowed_module(f"{mod}.{name}"):
        return
    if not _is_allowed_module(mod):
        raise ParserRejected(f"parser imports {mod!r} ({_where(node)}); allowed: {', '.join(ALLOWED_IMPORTS)}")
    if name.startswith("_") or (mod, name) in BLOCKED_MODULE_ATTRS:
        raise ParserRejected(f"parser imports {name!r} from {mod!r}, which is not allowed ({_where(node)})")
    try:
        value = getattr(importlib.import_module(mod), name, None)
    except ImportError:
        value = None
    if isinstance(value, types.ModuleType):
        raise ParserRejected(f"parser imports the module {mod}.{name} ({_where(node)}); allowed: "
                             f"{', '.join(ALLOWED_IMPORTS)}")


# ---------------------------------------------------------------- the child

# Run as `python -I -S -c RUNNER CONFIG_JSON`; stdin: {"code": ..., "html": ...} as JSON.
# Line 1 of stdout, written once the child is confined and before it reads stdin: the confinement
# report {"confined": true, "uid", "gid", "groups", "seccomp", "no_new_privs", "limits", "denied"}
# (or {"confined": false, "error"} and exit). Line 2: {"ok": true, "result": ...} or
# {"ok": false, "kind", "error"}.
RUNNER = r'''
import sys

def _main():
    import json, os, errno, resource
    cfg = json.loads(sys.argv[1])

    def emit(obj):
        data = (json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8", "replace")
        while data:
            data = data[os.write(1, data):]

    def refuse(step, exc):
        emit({"confined": False, "error": "%s: %s" % (step, " ".join(str(exc).split()) or type(exc).__name__)})
        os._exit(3)

    # 1. Load everything the parser may use while files can still be opened.
    try:
        sys.path[:0] = cfg["paths"]
        import builtins, types, importlib, ctypes, ctypes.util
        libs = cfg["libs"]
        ctypes.util.find_library = lambda name: libs.get(name)   # no `ldconfig` child at import
        try:
            import pyseccomp
        except BaseException as exc:
            refuse("seccomp unavailable", exc)
        for name in cfg["allowed"] + cfg["preload"]:
            importlib.import_module(name)
        libc = ctypes.CDLL(libs["c"], use_errno=True)
    except BaseException as exc:
        refuse("start-up", exc)

    def prctl(op, arg=0):
        res = libc.prctl(op, arg, 0, 0, 0)
        if res < 0:
            raise OSError(ctypes.get_errno(), "prctl(%d) failed" % op)
        return res

    # 2. Never run user code as root; die with the parent; no ptrace by the new uid's other processes.
    try:
        if os.geteuid() == 0 or os.getuid() == 0:
            os.setgroups([])
            os.setresgid(cfg["gid"], cfg["gid"], cfg["gid"])
            os.setresuid(cfg["uid"], cfg["uid"], cfg["uid"])
        prctl(4, 0)          # PR_SET_DUMPABLE 0
        prctl(1, 9)          # PR_SET_PDEATHSIG SIGKILL (after the uid change, which clears it)
        if os.getppid() != cfg["ppid"]:
            os._exit(4)      # the parent is already gone
    except BaseException as exc:
        refuse("dropping privileges", exc)

    # 3. Resource limits, soft = hard so the parser cannot raise them.
    try:
        for name, soft, hard in cfg["limits"]:
            resource.setrlimit(getattr(resource, "RLIMIT_" + name.upper()), (soft, hard))
        limits = {name: list(resource.getrlimit(getattr(resource, "RLIMIT_" + name.upper())))
                  for name, _, _ in cfg["limits"]}
    except BaseException as exc:
        refuse("resource limits", exc)

    # 4. seccomp: an allow-list; any other system call fails with EPERM. Loading it sets no_new_privs.
    try:
        S = pyseccomp
        flt = S.SyscallFilter(S.ERRNO(errno.EPERM))
        for name in cfg["syscalls"]:
            flt.add_rule(S.ALLOW, name)
        flt.add_rule(S.ALLOW, "read", S.Arg(0, S.EQ, 0))
        for fd in (1, 2):
            flt.add_rule(S.ALLOW, "write", S.Arg(0, S.EQ, fd))
        for op in (3, 21, 39):   # PR_GET_DUMPABLE, PR_GET_SECCOMP, PR_GET_NO_NEW_PRIVS
            flt.add_rule(S.ALLOW, "prctl", S.Arg(0, S.EQ, op))
        flt.add_rule(S.ALLOW, "prlimit64", S.Arg(0, S.EQ, 0), S.Arg(2, S.EQ, 0))   # getrlimit only
        flt.load()
    except BaseException as exc:
        refuse("seccomp", exc)

    # 5. Prove it, before any untrusted byte is read: line 1 of the output.
    def denied(call):
        try:
            res = call()
        except PermissionError:
            return True
        except BaseException:
            return False
        if res == -1:
            return ctypes.get_errno() == errno.EPERM
        return False

    try:
        report = {
            "confined": True, "uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(),
            "egid": os.getegid(), "groups": os.getgroups(), "seccomp": prctl(21), "no_new_privs": prctl(39),
            "dumpable": prctl(3), "limits": limits,
            "denied": {"open": denied(lambda: os.open("/", os.O_RDONLY)),
                       "socket": denied(lambda: libc.socket(1, 1, 0)),
                       "kill": denied(lambda: libc.kill(os.getppid(), 0)),
                       "setuid": denied(lambda: libc.setuid(0))},
        }
    except BaseException as exc:
        refuse("checking the confinement", exc)
    emit(report)
    if report["seccomp"] != 2 or report["no_new_privs"] != 1 or not all(report["denied"].values()):
        os._exit(3)   # not confined: never read the parser (the parent refuses on the report)

    def reply(obj):
        try:
            emit(obj)
        except MemoryError:
            emit({"ok": False, "kind": "memory", "error": "MemoryError"})
        except (TypeError, ValueError) as exc:
            emit({"ok": False, "kind": "not_json", "error": "%s: %s" % (type(exc).__name__, str(exc)[:200])})
        os._exit(0)

    # 6. The page and the code.
    try:
        chunks = []
        while True:
            chunk = os.read(0, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        payload = json.loads(b"".join(chunks).decode("utf-8", "replace"))
        code, html = payload["code"], payload["html"]
        del chunks, payload
    except BaseException as exc:
        reply({"ok": False, "kind": "input", "error": "bad input to the runner: %s" % type(exc).__name__})

    _getattr, _setattr, _delattr, _hasattr = getattr, setattr, delattr, hasattr
    allowed = cfg["allowed"]
    blocked = {tuple(x) for x in cfg["blocked_attrs"]}
    forbidden_attrs = set(cfg["forbidden_attrs"]) | {"format", "format_map"}
    plain = (type, types.FunctionType, types.BuiltinFunctionType, str, int, float, bool, bytes, tuple,
             frozenset, type(None))
    proxies = {}

    def proxy(name):
        if name not in proxies:
            p = types.ModuleType("<sandboxed %s>" % name)   # no `sys.modules` fallback for `from M import X`
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

    # Only the modules the parser may name (and what they import lazily) stay in sys.modules.
    keep = set(allowed) | set(cfg["preload"]) | set(cfg["keep_modules"])
    for key in list(sys.modules):
        if key not in keep and not key.startswith("encodings."):
            del sys.modules[key]

    # datetime.strptime imports _strptime through the caller's __import__: hand it only the entry points.
    lazy = {}
    for name, attrs in cfg["lazy"].items():
        lazy[name] = types.ModuleType("<sandboxed %s>" % name)
        for attr in attrs:
            setattr(lazy[name], attr, _getattr(sys.modules[name], attr))

    def safe_import(name, globals=None, locals=None, fromlist=(), level=0):
        if name in lazy and not level:
            return lazy[name]
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

    def safe_getattr(obj, name, *default):
        check_name(name)
        return _getattr(obj, name, *default)

    def safe_hasattr(obj, name):
        check_name(name)
        return _hasattr(obj, name)

    def safe_setattr(obj, name, value):
        check_name(name)
        return _setattr(obj, name, value)

    def safe_delattr(obj, name):
        check_name(name)
        return _delattr(obj, name)

    safe = {k: _getattr(builtins, k) for k in cfg["builtins"] if _hasattr(builtins, k)}
    safe.update(getattr=safe_getattr, hasattr=safe_hasattr, setattr=safe_setattr, delattr=safe_delattr,
                __import__=safe_import, __build_class__=builtins.__build_class__)
    env = {"__builtins__": safe, "__name__": "parser"}
    sys.stdout = sys.stderr   # print() in the parser goes to stderr, never into the reply
    try:
        exec(compile(code, "parser.py", "exec"), env)
        fn = env.get("parse")
        if not callable(fn):
            reply({"ok": False, "kind": "no_parse", "error": "parser does not define parse(html)"})
        result = fn(html)
    except MemoryError:
        reply({"ok": False, "kind": "memory", "error": "MemoryError"})
    except RecursionError:
        reply({"ok": False, "kind": "raised", "error": "RecursionError: maximum recursion depth exceeded"})
    except BaseException as exc:
        msg = " ".join(str(exc).split())[:300]
        reply({"ok": False, "kind": "raised", "error": "%s: %s" % (type(exc).__name__, msg) if msg
               else type(exc).__name__})
    reply({"ok": True, "result": result})

_main()
'''

# System calls a confined child may make once the parser's code can run: memory, futexes, signal
# return and masks, clocks, randomness, its own ids, exit. (read is allowed on fd 0 only, write on
# fds 1 and 2 only, prctl for three read-only queries, prlimit64 for reading its own limits.)
# Everything else -- open*, stat of paths, socket/connect/bind, fork/clone/execve, kill/tgkill,
# ptrace, process_vm_*, setuid-family, mount, ioctl, ... -- fails with EPERM.
ALLOWED_SYSCALLS = (
    "brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "futex", "rt_sigreturn", "rt_sigprocmask",
    "sigaltstack", "restart_syscall", "clock_gettime", "clock_getres", "gettimeofday", "time", "getrandom",
    "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getgroups", "sched_yield",
    "close", "exit", "exit_group",
)
# Modules imported before the filter because the allowed ones import them lazily at call time.
PRELOAD_MODULES = (
    "_strptime", "encodings.idna", "encodings.punycode", "encodings.latin_1", "encodings.cp1252", "encodings.utf_16",
    "encodings.utf_32", "encodings.ascii", "encodings.unicode_escape", "encodings.raw_unicode_escape",
)
# What the allowed modules' C code imports through the parser's own __import__, and the only
# attributes it uses there.
LAZY_IMPORTS = {"_strptime": ("_strptime_datetime", "_strptime_time")}
# Interpreter internals left in sys.modules (everything else not allowed is removed).
KEEP_MODULES = ("builtins", "sys", "_frozen_importlib", "_frozen_importlib_external", "_imp", "_warnings",
                "_io", "_codecs", "codecs", "encodings", "_weakref")

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


NOFILE_LIMIT = 8
FALLBACK_UNPRIVILEGED = 65534   # nobody / nogroup


@functools.lru_cache(maxsize=1)
def _import_paths() -> tuple[str, ...]:
    """The sys.path entries holding the third-party packages the child imports (selectolax, pyseccomp)."""
    paths: list[str] = []
    for name in ("selectolax", "pyseccomp"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError, RuntimeError):
            continue
        if spec is None or not spec.origin:
            continue
        origin = os.path.abspath(spec.origin)
        root = os.path.dirname(os.path.dirname(origin)) if spec.submodule_search_locations \
            else os.path.dirname(origin)
        if root not in paths:
            paths.append(root)
    return tuple(paths)


@functools.lru_cache(maxsize=1)
def _libraries() -> dict[str, str | None]:
    """The C libraries the child loads, resolved once here so the child needs no `ldconfig`.

    HEALERD_LIBSECCOMP names libseccomp where the loader does not find it; a wrong path can only
    make confinement fail, and then code parsers are refused."""
    return {"c": ctypes.util.find_library("c"),
            "seccomp": os.environ.get("HEALERD_LIBSECCOMP") or ctypes.util.find_library("seccomp")}


@functools.lru_cache(maxsize=1)
def unprivileged_ids() -> tuple[int, int]:
    """The uid and gid a child started by root runs as (nobody / nogroup)."""
    try:
        pw = pwd.getpwnam("nobody")
        uid, gid = pw.pw_uid, pw.pw_gid
    except KeyError:
        uid, gid = FALLBACK_UNPRIVILEGED, FALLBACK_UNPRIVILEGED
    try:
        gid = grp.getgrnam("nogroup").gr_gid
    except KeyError:
        pass
    return uid, gid


def _limits(cpu_seconds: float, memory_mb: int) -> list[list]:
    cpu = max(1, math.ceil(cpu_seconds))
    mem = int(memory_mb) * 1024 * 1024
    return [["cpu", cpu, cpu + 1], ["as", mem, mem], ["fsize", 0, 0], ["core", 0, 0], ["nproc", 0, 0],
            ["nofile", NOFILE_LIMIT, NOFILE_LIMIT]]


def verify_confinement(report: Any, limits: list[list], *, parent_is_root: bool) -> None:
    """Raise ParserRejected unless the child's report shows every layer in force.

    The report is the child's first line, written after it confined itself and before it read
    any byte of the parser or the page, so the parser cannot have forged it."""
    if not isinstance(report, dict):
        raise ParserRejected("the parser process sent no confinement report; refused")
    if report.get("confined") is not True:
        raise ParserRejected(f"the parser process could not confine itself: {report.get('error', 'no reason')}")
    missing = []
    if report.get("seccomp") != 2:
        missing.append("seccomp filter")
    if report.get("no_new_privs") != 1:
        missing.append("no_new_privs")
    if report.get("dumpable") != 0:
        missing.append("non-dumpable")
    denied = report.get("denied") or {}
    for what in ("open", "socket", "kill", "setuid"):
        if denied.get(what) is not True:
            missing.append(f"{what} denied")
    ids = [report.get(k) for k in ("uid", "euid", "gid", "egid")]
    if parent_is_root and (0 in ids or None in ids or report.get("groups") != []):
        missing.append("unprivileged uid/gid")
    got = report.get("limits") or {}
    for name, soft, hard in limits:
        if got.get(name) != [soft, hard]:
            missing.append(f"{name} limit {soft}/{hard} (got {got.get(name)})")
    if missing:
        raise ParserRejected(f"the parser process is not fully confined (missing: {', '.join(missing)}); refused")


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
    return StartedChild(script, argv).finish(payload, wall_seconds=wall_seconds, max_output=max_output)


class StartedChild:
    """A child process started ahead of its payload (the runner confines itself, then waits on stdin).

    It holds nothing of any source until `finish` hands it one payload; it is used exactly once."""

    def __init__(self, script: str, argv: list[str]):
        self._tmp = tempfile.TemporaryDirectory(prefix="healerd-parser-")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", script, *argv],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env={}, cwd=self._tmp.name, start_new_session=True, close_fds=True)
        except BaseException:
            self._tmp.cleanup()
            raise

    def finish(self, payload: bytes, *, wall_seconds: float, max_output: int) -> ChildResult:
        try:
            return self._finish(payload, wall_seconds, max_output)
        finally:
            self._tmp.cleanup()

    def _finish(self, payload: bytes, wall_seconds: float, max_output: int) -> ChildResult:
        proc = self.proc
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
              max_output: int, limits: list[list] | None = None) -> dict | list[dict]:
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
    first, _, rest = child.stdout.partition(b"\n")
    if not first.strip():
        tail = " ".join(child.stderr.split())[-300:]
        raise ParserRejected(f"parser process exited with status {rc} and no output" + (f": {tail}" if tail else ""))
    try:
        report = json.loads(first.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        report = None
    verify_confinement(report, limits if limits is not None else _limits(cpu_seconds, memory_mb),
                       parent_is_root=os.geteuid() == 0)
    text = rest.strip()
    if not text:
        tail = " ".join(child.stderr.split())[-300:]
        raise ParserRejected(f"parser process exited with status {rc} and no result" + (f": {tail}" if tail else ""))
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
    """The runner's command-line configuration: limits, ids, import paths, allow-lists."""
    uid, gid = unprivileged_ids()
    cfg = {
        "limits": _limits(cpu_seconds, memory_mb),
        "uid": uid, "gid": gid, "ppid": os.getpid(),
        "paths": list(_import_paths()),
        "libs": _libraries(),
        "allowed": list(ALLOWED_IMPORTS),
        "preload": list(PRELOAD_MODULES),
        "lazy": {k: list(v) for k, v in LAZY_IMPORTS.items()},
        "keep_modules": list(KEEP_MODULES),
        "syscalls": list(ALLOWED_SYSCALLS),
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


# ---------------------------------------------------------------- can this system confine a parser?


@dataclass(frozen=True)
class Confinement:
    ok: bool
    layers: tuple[str, ...]
    reason: str = ""

    def describe(self) -> str:
        if self.ok:
            return "parsers as code run confined: " + ", ".join(self.layers)
        return f"parsers as code are refused: this system cannot confine them ({self.reason}); " \
               f"selector blueprints are unaffected"


_probe_lock = threading.Lock()
_probe: tuple[Confinement, float] | None = None
PROBE_CODE = "def parse(html):\n    return {'ok': html}\n"
PROBE_RETRY_SECONDS = 300.0


def probe_confinement() -> Confinement:
    """Start one confined child and check every layer took hold in it.

    A success holds for the life of the process; a failure is probed again after
    PROBE_RETRY_SECONDS (it may have been a passing shortage, e.g. no free process slot)."""
    global _probe
    with _probe_lock:
        now = time.monotonic()
        if _probe is None or (not _probe[0].ok and now - _probe[1] > PROBE_RETRY_SECONDS):
            _probe = (_run_probe(), now)
        return _probe[0]


def _run_probe() -> Confinement:
    try:
        result = run_unchecked(PROBE_CODE, "probe", cpu_seconds=5, memory_mb=256, wall_seconds=30)
    except ParserRejected as exc:
        return Confinement(False, (), exc.reason)
    if result != {"ok": "probe"}:
        return Confinement(False, (), f"the probe parser returned {result!r}")
    layers = ["static check", "seccomp allow-list (no files, sockets, processes, threads or signals)",
              "no_new_privs"]
    if os.geteuid() == 0:
        uid, gid = unprivileged_ids()
        layers.append(f"uid {uid}/gid {gid}")
    layers += ["CPU, memory, file and process limits", "wall-clock and output limits"]
    return Confinement(True, tuple(layers))


def require_confinement() -> None:
    """Raise ParserRejected (one line) when this system cannot confine a code parser."""
    state = probe_confinement()
    if not state.ok:
        raise ParserRejected(f"code parsers are refused here: this system cannot confine them ({state.reason})")


def log_confinement(logger: logging.Logger | None = None) -> Confinement:
    """Log, once at start-up, which layers confine code parsers (or that they are refused)."""
    state = probe_confinement()
    (logger or log).log(logging.INFO if state.ok else logging.WARNING, "%s", state.describe())
    return state
