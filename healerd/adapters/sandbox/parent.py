"""The daemon's side of a code parse: start the confined child, verify it, read its answer.

- `check_parser_source`: the static check (`static_check.py`), then `require_confinement`:
  where the kernel cannot confine a child (probed once per process), every code parser is
  refused with one line.
- `run_parser` starts a fresh child (`child.py`) and refuses the result unless the child's
  first line reports every layer of its confinement in force; it enforces a wall-clock limit
  (killing the process group) and an output cap, and checks the records' shape.

Anything that goes wrong raises ParserRejected with one clear line.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from healerd.adapters.sandbox.child import RUNNER, _limits, runner_argv, unprivileged_ids
from healerd.adapters.sandbox.policy import ParserRejected
from healerd.adapters.sandbox.static_check import check_static

_STDERR_KEEP = 4000
log = logging.getLogger("healerd.sandbox")


def check_parser_source(code: str) -> None:
    """Raise ParserRejected unless `code` is a parser this daemon agrees to run here.

    The static check first (one line naming the construct and its line), then whether this
    system can confine a code parser at all."""
    check_static(code)
    require_confinement()


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
        stdin, stdout, stderr = proc.stdin, proc.stdout, proc.stderr
        assert stdin is not None and stdout is not None and stderr is not None   # all three are pipes
        out = bytearray()
        err = bytearray()
        state = {"overflow": False}

        def feed() -> None:
            try:
                stdin.write(payload)
            except (BrokenPipeError, OSError):
                pass
            finally:
                try:
                    stdin.close()
                except OSError:
                    pass

        def read_out() -> None:
            while True:
                chunk = stdout.read1(65536) if hasattr(stdout, "read1") else stdout.read(65536)
                if not chunk:
                    return
                out.extend(chunk)
                if len(out) > max_output:
                    state["overflow"] = True
                    _kill_group(proc)
                    return

        def read_err() -> None:
            while True:
                chunk = stderr.read1(65536) if hasattr(stderr, "read1") else stderr.read(65536)
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
        for stream in (stdout, stderr):
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
    """Check `code`, run its parse(html) in a confined child process, return its records."""
    check_parser_source(code)
    if isinstance(html, bytes):
        html = html.decode("utf-8", errors="replace")
    return run_unchecked(code, html, cpu_seconds=cpu_seconds, memory_mb=memory_mb, wall_seconds=wall_seconds,
                         max_output=max_output)


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
