"""contrib/systemd/healerd.service: systemd accepts it, and it keeps its hardening."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
UNIT = ROOT / "contrib" / "systemd" / "healerd.service"
SYSUSERS = ROOT / "contrib" / "systemd" / "healerd.sysusers"

REQUIRED = {
    "Type": "notify",
    "NotifyAccess": "main",
    "WatchdogSec": "30",
    "Restart": "on-failure",
    "DynamicUser": "yes",
    "StateDirectory": "healerd",
    "RuntimeDirectory": "healerd",
    "LogsDirectory": "healerd",
    "ConfigurationDirectory": "healerd",
    "ExecReload": "/bin/kill -HUP $MAINPID",
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes",
    "ProtectControlGroups": "yes",
    "ProtectClock": "yes",
    "ProtectHostname": "yes",
    "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
    "RestrictNamespaces": "yes",
    "RestrictRealtime": "yes",
    "RestrictSUIDSGID": "yes",
    "LockPersonality": "yes",
    "MemoryDenyWriteExecute": "yes",
    "SystemCallArchitectures": "native",
    "CapabilityBoundingSet": "",
    "AmbientCapabilities": "",
    "UMask": "0007",
}


def parse_unit(text: str) -> dict[str, list[str]]:
    """key -> every value it is given (systemd keys may repeat), comments skipped."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, _, value = line.partition("=")
        out.setdefault(key.strip(), []).append(value.strip())
    return out


def test_hardening_keys_present():
    keys = parse_unit(UNIT.read_text())
    for key, value in REQUIRED.items():
        assert key in keys, key
        assert value in keys[key], (key, keys[key])
    assert "@system-service" in keys["SystemCallFilter"]
    assert any("healerd run" in v and "--config" in v for v in keys["ExecStart"])
    assert keys["SupplementaryGroups"] == ["healerctl"]
    assert "g healerctl" in SYSUSERS.read_text()


def _runnable_copy(tmp_path: Path) -> Path:
    """The unit with ExecStart pointed at this interpreter, so it names a binary that exists."""
    text = UNIT.read_text().replace("ExecStart=/usr/bin/env healerd", f"ExecStart={sys.executable} -m healerd")
    assert f"ExecStart={sys.executable} -m healerd run" in text
    copy = tmp_path / "healerd.service"
    copy.write_text(text)
    return copy


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verify(tmp_path):
    unit = _runnable_copy(tmp_path)
    r = subprocess.run(["systemd-analyze", "verify", str(unit)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    complaints = [line for line in r.stderr.splitlines() if "healerd.service" in line]
    assert r.returncode == 0 and not complaints, r.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_security(tmp_path):
    unit = _runnable_copy(tmp_path)
    r = subprocess.run(["systemd-analyze", "security", "--offline=yes", str(unit)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0 and "offline" in r.stderr.lower() and "unrecognized" in r.stderr.lower():
        pytest.skip("this systemd-analyze has no --offline")
    Path("/tmp/systemd-security.txt").write_text(r.stdout + r.stderr)
    assert r.returncode == 0, r.stderr
    assert "Overall exposure level" in r.stdout
    # Below 2.0 is what systemd calls OK; a lost hardening key pushes the unit above it.
    level = float(r.stdout.split("Overall exposure level for")[1].split(":")[1].split()[0])
    assert level < 2.0, r.stdout[-400:]


MDWE_CHILD = r"""
import ctypes, mmap
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(66, 0, 0, 0, 0) == 1          # PR_GET_MDWE: refusing W+X
try:
    mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    raise SystemExit("W+X memory was allowed")
except PermissionError:
    pass
import apsw, click, httpx, pykka, transitions
import healerd.blueprint, healerd.extract
from healerd.control import client, protocol, server
from selectolax.lexbor import LexborHTMLParser
assert LexborHTMLParser("<p class=a> hi </p>").css_first("p.a").text(strip=True) == "hi"
assert apsw.Connection(":memory:").execute("select 1").fetchall() == [(1,)]
httpx.Client().close()
print("ok")
"""


def test_python_runs_with_memory_deny_write_execute(tmp_path):
    """MemoryDenyWriteExecute=yes: the interpreter and healerd's native deps need no W+X pages."""
    libc = ctypes.CDLL(None, use_errno=True)

    def refuse_wx():
        if libc.prctl(65, 1, 0, 0, 0) != 0:  # PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN
            raise OSError(ctypes.get_errno(), "PR_SET_MDWE")

    probe = subprocess.run([sys.executable, "-c", "pass"], preexec_fn=refuse_wx, capture_output=True)
    if probe.returncode != 0:
        pytest.skip("this kernel has no PR_SET_MDWE (Linux >= 6.3)")
    r = subprocess.run([sys.executable, "-c", MDWE_CHILD], preexec_fn=refuse_wx, cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
