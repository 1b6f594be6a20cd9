"""Parsers as code: check a `parse(html)` source statically, run it in a confined child process.

A source may carry a Python parser instead of selectors. That code comes from a human or an
external healer, is untrusted, and is never run inside the daemon. Three modules, three layers:

- `static_check.py`: an allow-list of Python (syntax nodes, imports, built-ins), no built-in
  name rebound, no dunder name anywhere (strings included), no class patterns, metaclasses or
  `type()` with more than one argument; refused in one line naming the construct and its line.
- `child.py`: a fresh interpreter per parse that confines itself before it reads anything
  (nobody uid when started by root, no_new_privs, rlimits with soft = hard, a seccomp
  allow-list: no files, sockets, processes, threads or signals), reports it, and runs the
  parser with only the allowed built-ins and stripped-down copies of the allowed modules.
- `parent.py`: refuses a result without every layer in the child's report, kills it past
  wall-clock/output limits; `probe_confinement` (once per process) refuses code parsers where
  the kernel cannot confine them.

`policy.py` holds the lists both sides read and `ParserRejected`. Everything is re-exported
here, so `from healerd.adapters.sandbox import run_parser` keeps working.
"""

from healerd.adapters.sandbox.child import (
    ALLOWED_SYSCALLS,
    FALLBACK_UNPRIVILEGED,
    KEEP_MODULES,
    LAZY_IMPORTS,
    NOFILE_LIMIT,
    PRELOAD_MODULES,
    RUNNER,
    _import_paths,
    _libraries,
    _limits,
    runner_argv,
    unprivileged_ids,
)
from healerd.adapters.sandbox.parent import (
    PROBE_CODE,
    PROBE_RETRY_SECONDS,
    ChildResult,
    Confinement,
    StartedChild,
    check_parser_source,
    interpret,
    log_confinement,
    probe_confinement,
    require_confinement,
    run_parser,
    run_unchecked,
    spawn_child,
    verify_confinement,
)
from healerd.adapters.sandbox.policy import (
    ALLOWED_IMPORTS,
    ATTRIBUTE_BUILTINS,
    BLOCKED_MODULE_ATTRS,
    FORBIDDEN_ATTRS,
    FORMAT_METHODS,
    MAX_SOURCE_CHARS,
    SAFE_BUILTINS,
    ParserRejected,
)
from healerd.adapters.sandbox.static_check import ALLOWED_NODES, check_static

__all__ = [
    "ALLOWED_IMPORTS", "ALLOWED_NODES", "ALLOWED_SYSCALLS", "ATTRIBUTE_BUILTINS", "BLOCKED_MODULE_ATTRS",
    "FALLBACK_UNPRIVILEGED", "FORBIDDEN_ATTRS", "FORMAT_METHODS", "KEEP_MODULES", "LAZY_IMPORTS",
    "MAX_SOURCE_CHARS", "NOFILE_LIMIT", "PRELOAD_MODULES", "PROBE_CODE", "PROBE_RETRY_SECONDS", "RUNNER",
    "SAFE_BUILTINS", "ChildResult", "Confinement", "ParserRejected", "StartedChild", "_import_paths",
    "_libraries", "_limits", "check_parser_source", "check_static", "interpret", "log_confinement",
    "probe_confinement", "require_confinement", "run_parser", "run_unchecked", "runner_argv", "spawn_child",
    "unprivileged_ids", "verify_confinement",
]
