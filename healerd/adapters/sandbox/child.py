"""The confined child that runs one parse: its script, and what it is told to allow.

`RUNNER` is run as `python -I -S -c RUNNER CONFIG_JSON` (`runner_argv` builds the config) in a
fresh interpreter with an empty environment. Before it reads a byte of the code or the page,
it imports all it may use, drops to nobody/nogroup if started by root, sets PR_SET_DUMPABLE 0
and PR_SET_PDEATHSIG, sets its resource limits with soft = hard (CPU, address space, file size
0, no processes, few descriptors), and loads a seccomp allow-list (which sets no_new_privs):
any system call outside memory, futexes, clocks, its own ids, reading fd 0 and writing fds 1
and 2 fails with EPERM -- no files, sockets, processes, threads, signals or privilege changes.
It checks that open, socket, kill and setuid are refused and writes that report, with the
limits it reads back, as its first line. Then it scrubs sys.modules, exposes the allowed
modules as stripped-down proxies with restricted built-ins (getattr and its kin refuse private
and frame attributes, `type` takes one argument, a class statement takes no keywords and no
metaclass base), runs the code and writes one JSON envelope as its second line. The parent (`parent.py`) checks both lines.

The limits are applied by the child to itself rather than in a `preexec_fn`, which is unsafe in
a threaded parent such as the daemon.
"""

from __future__ import annotations

import ctypes.util
import functools
import grp
import importlib.util
import json
import math
import os
import pwd

from healerd.adapters.sandbox.policy import (
    ALLOWED_IMPORTS,
    BLOCKED_MODULE_ATTRS,
    FORBIDDEN_ATTR_PREFIXES,
    FORBIDDEN_ATTRS,
    SAFE_BUILTINS,
)

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
    forbidden_prefixes = tuple(cfg["forbidden_prefixes"])
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
        if not isinstance(name, str) or name.startswith("_") or name in forbidden_attrs \
                or name.startswith(forbidden_prefixes):
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

    # type(x) only, and no class made by a metaclass: what the static check allows, again here.
    _type, _build_class = type, builtins.__build_class__

    def safe_type(*args):
        if len(args) != 1:
            raise TypeError("type() takes one argument in a parser (no new classes)")
        found = _type(args[0])
        return safe_type if found is _type else found

    def safe_build_class(func, name, *bases, **keywords):
        if keywords:
            raise TypeError("class keywords (metaclass=...) are not allowed in a parser")
        for base in bases:
            if base is safe_type or (isinstance(base, _type) and issubclass(base, _type)):
                raise TypeError("metaclasses are not allowed in a parser")
        return _build_class(func, name, *bases)

    safe = {k: _getattr(builtins, k) for k in cfg["builtins"] if _hasattr(builtins, k)}
    safe.update(getattr=safe_getattr, hasattr=safe_hasattr, setattr=safe_setattr, delattr=safe_delattr,
                __import__=safe_import, __build_class__=safe_build_class, type=safe_type)
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
        "forbidden_prefixes": list(FORBIDDEN_ATTR_PREFIXES),
        "builtins": list(SAFE_BUILTINS),
    }
    return [json.dumps(cfg)]
