"""contrib/systemd/healerd.service: systemd accepts it, and it keeps its hardening."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

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
    "RestartPreventExitStatus": "78",
    "MemoryMax": "1G",
    "TasksMax": "256",
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
    assert keys["ExecStart"] == ["/opt/healerd/bin/healerd run --config %E/healerd/healerd.toml"]   # the venv
    assert keys["SupplementaryGroups"] == ["healerctl"]
    assert "g healerctl" in SYSUSERS.read_text()


def _runnable_copy(tmp_path: Path) -> Path:
    """The unit with ExecStart pointed at this interpreter, so it names a binary that exists."""
    text = UNIT.read_text().replace("ExecStart=/opt/healerd/bin/healerd", f"ExecStart={sys.executable} -m healerd")
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


def _syscalls_in(name: str, cache: dict[str, set[str]]) -> set[str]:
    """The system calls a SystemCallFilter item stands for: a call, or an @group expanded by systemd."""
    if not name.startswith("@"):
        return {name}
    if name not in cache:
        cache[name] = set()  # guards against a group that names itself
        r = subprocess.run(["systemd-analyze", "syscall-filter", name], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        calls: set[str] = set()
        for line in r.stdout.splitlines()[1:]:  # the first line repeats the group's name
            item = line.strip()
            if item and not item.startswith("#"):
                calls |= _syscalls_in(item, cache)
        cache[name] = calls
    return cache[name]


def allowed_syscalls(filters: list[str]) -> tuple[bool, set[str]]:
    """(is an allow list, its calls) after systemd merges the SystemCallFilter= lines in order.

    The first line decides the kind of list; each later line of the same kind adds its calls,
    and one of the other kind takes them out (systemd.exec(5)). For a deny list the set
    returned is the denied calls.
    """
    cache: dict[str, set[str]] = {}
    allow_list: bool | None = None
    calls: set[str] = set()
    for value in filters:
        if value == "":
            allow_list, calls = None, set()
            continue
        deny = value.startswith("~")
        names = set()
        for item in value.lstrip("~").split():
            names |= _syscalls_in(item.split(":")[0], cache)
        if allow_list is None:
            allow_list, calls = not deny, names
        elif deny == (not allow_list):
            calls |= names
        else:
            calls -= names
    return bool(allow_list), calls


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_system_call_filter_lets_the_daemon_chown_its_socket():
    """With [daemon] socket_group the daemon chown()s its socket; a filter denying that kills it.

    @privileged includes @chown on systemd >= 247, so denying @privileged alone makes
    socket_group unusable under the unit.
    """
    config = (ROOT / "healerd" / "config.py").read_text()
    assert "socket_group" in config  # the feature that needs chown is still there
    allow_list, calls = allowed_syscalls(parse_unit(UNIT.read_text())["SystemCallFilter"])
    chown_calls = {"chown", "fchown", "fchownat"}
    if allow_list:
        missing = chown_calls - calls
        assert not missing, f"SystemCallFilter= does not allow {sorted(missing)}"
    else:
        denied = chown_calls & calls
        assert not denied, f"SystemCallFilter= denies {sorted(denied)}"
    # The rest of @privileged stays denied.
    assert ("setuid" in calls) == (not allow_list)


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
import healerd.core.blueprint, healerd.core.extract
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


# -- the install recipe ------------------------------------------------------------------------------

def test_sysusers_path_is_one_and_the_same_everywhere():
    readme = (ROOT / "README.md").read_text()
    for text in (readme, UNIT.read_text(), SYSUSERS.read_text(), (ROOT / "contrib" / "install.sh").read_text()):
        assert "/usr/lib/sysusers.d" not in text
    assert "/etc/sysusers.d/healerd.conf" in UNIT.read_text() and "/etc/sysusers.d/healerd.conf" in SYSUSERS.read_text()
    assert "contrib/install.sh" in readme and "venv" in readme and "PEP 668" in readme


def test_contrib_config_has_every_key_with_its_default():
    import dataclasses
    import re

    from healerd.config import Config, load

    text = (ROOT / "contrib" / "healerd.toml").read_text()
    assert load(str(ROOT / "contrib" / "healerd.toml")) == Config()   # the values shown are the defaults
    sections = re.split(r"^\[(\w+)\]", text, flags=re.M)
    by_section = {sections[i]: sections[i + 1] for i in range(1, len(sections), 2)}
    for section in dataclasses.fields(Config):
        if section.name == "feeds":   # an array of tables, none by default: shown as a commented example
            from healerd.config import FeedSection

            example = text.split("# [[feeds]]", 1)[1]
            for key in dataclasses.fields(FeedSection):
                assert re.search(rf"^# {key.name} = ", example, re.M), f"[[feeds]] {key.name} is not documented"
            continue
        if section.name == "notify":   # the same, for the [[notify]] tables
            from healerd.config import NotifySection

            example = text.split("# [[notify]]", 1)[1]
            for key in dataclasses.fields(NotifySection):
                assert re.search(rf"^# {key.name} = ", example, re.M), f"[[notify]] {key.name} is not documented"
            continue
        body = by_section.get(section.name)
        assert body is not None, f"[{section.name}] missing from contrib/healerd.toml"
        for key in dataclasses.fields(section.type if isinstance(section.type, type) else
                                      type(getattr(Config(), section.name))):
            assert re.search(rf"^#? ?{key.name} = ", body, re.M), f"[{section.name}] {key.name} is not documented"


def test_install_recipe_puts_a_working_venv_and_the_unit_pointing_at_it(tmp_path):
    prefix = tmp_path / "opt" / "healerd"
    dest = tmp_path / "root"
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    env.update(PREFIX=str(prefix), DESTDIR=str(dest), PYTHON=sys.executable)
    r = subprocess.run(["sh", str(ROOT / "contrib" / "install.sh")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    version = subprocess.run([str(prefix / "bin" / "healerd"), "--version"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("healerd")
    assert (prefix / "bin" / "healerctl").exists()
    unit = (dest / "etc" / "systemd" / "system" / "healerd.service").read_text()
    assert parse_unit(unit)["ExecStart"] == [f"{prefix}/bin/healerd run --config %E/healerd/healerd.toml"]
    assert (dest / "etc" / "sysusers.d" / "healerd.conf").read_text() == SYSUSERS.read_text()
    assert (dest / "etc" / "healerd" / "healerd.toml").read_text() == (ROOT / "contrib" / "healerd.toml").read_text()
    # the installed daemon runs the installed config
    state = tmp_path / "state"
    check = subprocess.run([str(prefix / "bin" / "python"), "-c",
                            "import sys; from healerd.config import load; load(sys.argv[1]); print('ok')",
                            str(dest / "etc" / "healerd" / "healerd.toml")], capture_output=True, text=True,
                           timeout=60, cwd=tmp_path)
    assert check.stdout.strip() == "ok", check.stderr
    assert not state.exists()
