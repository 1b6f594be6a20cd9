"""The real daemon for a test: `healerd run` as a subprocess on a temp state dir and a real Unix
socket (DaemonProc, made by the `daemon_factory` fixture), the real `healerctl` against it, and
read-only queries on its database beside it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path


def bin_cmd(name: str) -> list[str]:
    """The installed console script, or the module when only the package is importable."""
    script = Path(sys.executable).parent / name
    if script.exists():
        return [str(script)]
    found = shutil.which(name)
    if found:
        return [found]
    return [sys.executable, "-m", "healerd" if name == "healerd" else "healerd.cli.healerctl"]


FAST_CONFIG = """
[daemon]
scrapers = 2
tick = "0.05s"
politeness_delay = 0
jitter = 0
log_level = "INFO"
[fetch]
timeout = "3s"
connect_timeout = "2s"
respect_robots = false
per_host_concurrency = 4
[doctor]
max_fix_attempts = 3
attempt_window = "1h"
quarantine_for = "1h"
[alerts]
dedupe_window = "1h"
"""


class DaemonProc:
    def __init__(self, tmp: Path, config: str = FAST_CONFIG, env: dict | None = None):
        self.tmp = tmp
        tmp.mkdir(parents=True, exist_ok=True)
        self.state = tmp / "state"
        self.socket = str(tmp / "healerd.sock")
        self.config_path = tmp / "healerd.toml"
        self.config_path.write_text(config)
        self.env = {**os.environ, **(env or {})}
        self.env.pop("HEALERD_SOCKET", None)
        self.proc: subprocess.Popen | None = None
        self.log_path = tmp / "daemon.log"
        self._log = None

    def _outputs(self):
        """(stdout, stderr) for the daemon: both into daemon.log."""
        return self._log, subprocess.STDOUT

    def start(self, wait: float = 20.0) -> DaemonProc:
        self._log = open(self.log_path, "ab")
        stdout, stderr = self._outputs()
        self.proc = subprocess.Popen(
            bin_cmd("healerd") + ["run", "--config", str(self.config_path), "--state-dir", str(self.state),
                                  "--socket", self.socket],
            cwd=self.tmp, env=self.env, stdout=stdout, stderr=stderr)
        deadline = time.time() + wait
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"healerd exited with {self.proc.returncode}:\n{self.log()}")
            if os.path.exists(self.socket) and self.ctl("status", "--json").returncode == 0:
                return self
            time.sleep(0.1)
        raise RuntimeError(f"healerd did not come up:\n{self.log()}")

    def ctl(self, *args: str, timeout: float = 120.0, input: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(bin_cmd("healerctl") + ["--socket", self.socket, *args], cwd=self.tmp,
                              capture_output=True, text=True, timeout=timeout, env=self.env, input=input)

    def ctl_json(self, *args: str):
        """The JSON answer; `run` and `heal` exit 1 on a failed scrape / no promotion but still print it."""
        r = self.ctl(*args, "--json")
        answered = args and args[0] in ("run", "heal") and r.returncode == 1 and r.stdout.strip()
        assert r.returncode == 0 or answered, f"healerctl {' '.join(args)} failed: {r.stderr}\n{self.log()[-3000:]}"
        return json.loads(r.stdout)

    def wait_for(self, predicate, timeout: float = 30.0, what: str = "condition"):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            last = predicate()
            if last:
                return last
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; last: {last!r}\n{self.log()[-4000:]}")

    def state_of(self, name: str) -> str:
        return self.ctl_json("status", name)["state"]

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def alerts(self) -> list[dict]:
        p = self.state / "alerts.jsonl"
        if not p.exists():
            return []
        return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]

    def stop(self, sig=signal.SIGTERM, timeout: float = 15.0) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            if self._log:
                self._log.close()

    def kill9(self) -> None:
        self.proc.kill()
        self.proc.wait()
        if self._log:
            self._log.close()


def db_rows(d: DaemonProc, sql: str, params=()) -> list[dict]:
    """Rows of a query on a daemon's database, read-only, beside the running daemon."""
    import apsw

    conn = apsw.Connection(str(d.state / "healerd.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        cur = conn.execute(sql, params)
        desc, out = None, []
        for r in cur:
            desc = desc or [x[0] for x in cur.getdescription()]
            out.append(dict(zip(desc, r)))
        return out
    finally:
        conn.close()
