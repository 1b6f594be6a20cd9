"""A real ControlServer's test handler (ping, echo, a request that waits for the test, errors), a log of the real client's exchanges, and running a client as the user nobody."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from healerd.control.protocol import ControlError

RELEASE = threading.Event()


ENTERED = threading.Event()


WAITING: list[int] = []   # one entry per `wait` request a worker has taken


def handler(op, args, peer):
    if op == "ping":
        return {"version": "test", "pid": os.getpid(), "started_at": None}
    if op == "echo":
        return {"args": args, "peer_uid": peer.uid}
    if op == "wait":  # blocks a worker until the test releases it
        WAITING.append(peer.pid)
        ENTERED.set()
        RELEASE.wait(30)
        return "released"
    if op == "boom":
        raise RuntimeError("kaboom at http://user:hunter2@example.com/x\nsecond line token=abc123")
    if op == "missing":
        raise ControlError("not_found", "no source named 'x'", {"name": "x"})
    if op == "notjson":
        return {"x": object()}
    raise ControlError("bad_request", f"unknown op {op!r}")


def wait_until(predicate, limit=10.0):
    """Poll until predicate() holds; fail (not time out silently) after `limit` seconds."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError("condition never became true")


class ExchangeLog:
    """Records each connection the real client makes (its answer, or the error it met)."""

    def __init__(self, monkeypatch):
        from healerd.control import client as client_module

        self.outcomes: list[str] = []
        real = client_module._exchange

        def exchange(*args, **kwargs):
            try:
                answer = real(*args, **kwargs)
            except Exception as exc:
                self.outcomes.append(type(exc).__name__)
                raise
            self.outcomes.append("ok" if answer.get("ok") else answer["error"]["code"])
            return answer

        monkeypatch.setattr(client_module, "_exchange", exchange)


def as_nobody(gid: int = 65534):
    os.setgroups([])
    os.setgid(gid)
    os.setuid(65534)


def python_for_nobody():
    """An interpreter the user nobody can run (the test's own may live under /root)."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if exe and os.path.exists(exe):
            try:
                r = subprocess.run([exe, "-I", "-c", "pass"], cwd="/", preexec_fn=as_nobody,
                                   capture_output=True, timeout=30)
            except OSError:
                continue
            if r.returncode == 0:
                return exe
    return None


@contextmanager
def nobodys_socket_dir() -> Iterator[tuple[str, str]]:
    """(an interpreter the user nobody can run, a fresh folder nobody may pass through to a socket);
    the test is skipped where there is no such interpreter; the folder is removed afterwards."""
    exe = python_for_nobody()
    if exe is None:
        pytest.skip("no Python interpreter the user nobody can run")
    d = tempfile.mkdtemp(prefix="hctl")
    try:
        os.chmod(d, 0o711)
        yield exe, d
    finally:
        shutil.rmtree(d, ignore_errors=True)
