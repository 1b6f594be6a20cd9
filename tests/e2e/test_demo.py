"""`healerd demo`, the first thing a new user runs: the installed console script, for real.

The demo must tell its whole story by itself — the products source healed and
promoted, the stats source refused and quarantined with a deferred report — and
exit 0. With --keep-running it stays up, prints healerctl commands that work
against it, and stops cleanly (daemon child included) on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.support.daemon import bin_cmd

# A safety net for a hung demo, not a speed requirement (bench/ measures speed).
DEMO_LIMIT_S = 240


def demo_env() -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("HEALERD_SOCKET", "CODE_HEALER_URL", "CODE_HEALER_TOKEN", "NOTIFY_SOCKET")}
    env["NO_COLOR"] = "1"
    return env


def processes_mentioning(text: str) -> list[tuple[int, str]]:
    """Live processes whose command line contains `text` (the demo's daemon names its state dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if text in cmdline and stat.rsplit(")", 1)[-1].split()[0] != "Z":
            found.append((int(entry.name), cmdline))
    return found


def assert_story_told(out: str) -> None:
    # 1-2: three sources registered and scraped
    for name in ("stats", "products", "article"):
        assert re.search(rf"^\s+\+ {name}\s+http://127\.0\.0\.1:\d+/{name}", out, re.M), f"{name} not registered:\n{out}"
        assert re.search(rf"^\s+{name}\s+v1: \d+ records?, first \{{", out, re.M), f"{name} never scraped:\n{out}"
    # 3-4: the redesign of /products is healed and promoted
    assert re.search(r"^\s+ALERT DEGRADED products: PARSE_ERROR", out, re.M), out
    assert re.search(r"^\s+ALERT HEALED products: builtin fix promoted as version 2", out, re.M), out
    assert "products now runs parser version 2 (origin builtin)" in out, out
    assert re.search(r"records flow again: v2: 8 records", out), out
    # 5: the score column really disappeared: refused, then quarantined with a deferred report
    assert re.search(r"^\s+ALERT HEAL_FAILED stats: ", out, re.M), out
    assert re.search(r"^\s+ALERT HEAL_FAILED stats: refused \(builtin\): the data for score is gone", out, re.M), out
    assert re.search(r"^\s+ALERT QUARANTINED stats: 3 fix attempts in 10m found the data for score gone", out, re.M), out
    m = re.search(r"stats is QUARANTINED until (\S+); the deferred report says:\n\s+last error: (.+)\n((?:\s+option: .+\n)+)",
                  out)
    assert m, f"no deferred report in the demo's output:\n{out}"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", m.group(1)), m.group(1)
    assert "score" in m.group(2), m.group(2)
    # What works when the data is gone: the update with the field optional, or remove; not unquarantine.
    assert "`healerctl update stats --blueprint stats.toml`" in m.group(3), m.group(3)
    assert "`healerctl remove stats`" in m.group(3) and "unquarantine" not in m.group(3), m.group(3)
    assert re.search(r"the demo saved that blueprint as \S+stats\.toml", out), out
    # 7: the products fix passes its probation
    assert "version 2: probation passed" in out, out
    # the summary reads as the success it is: the heal worked, the refusals were right
    assert "Done: 3 sources, states {'ACTIVE': 2, 'QUARANTINED': 1}" in out, out
    assert re.search(r"fix success rate 100 % \(1 fix passed its probation, 0 failed attempts\); "
                     r"3 refusals found the data gone", out), out
    assert "false positive rate 0 %" in out and "the healing targets are met" in out, out
    assert "fix success rate 0.25" not in out and "targets missed" not in out, out


def read_alerts(state_dir: Path) -> list[dict]:
    path = state_dir / "alerts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_demo_heals_quarantines_and_exits_0(tmp_path):
    # A relative --state-dir, as a person would type it.
    r = subprocess.run(bin_cmd("healerd") + ["demo", "--state-dir", "demo"], cwd=tmp_path, env=demo_env(),
                       capture_output=True, text=True, timeout=DEMO_LIMIT_S)
    base = tmp_path / "demo"
    daemon_log = (base / "daemon.log").read_text(errors="replace") if (base / "daemon.log").exists() else ""
    assert r.returncode == 0, f"demo exited {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}\nlog:\n{daemon_log[-3000:]}"
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stdout.startswith(f"healerd demo: state in {base}"), r.stdout[:300]
    assert_story_told(r.stdout)

    # What the demo narrated is what the daemon recorded.
    alerts = read_alerts(base / "state")
    healed = [a for a in alerts if a["event"] == "HEALED"]
    assert [a["source"] for a in healed] == ["products"], alerts
    quarantined = [a for a in alerts if a["event"] == "QUARANTINED"]
    assert [a["source"] for a in quarantined] == ["stats"], alerts
    report = quarantined[0]["details"]["deferred_report"]
    assert report["source"] == "stats" and "score" in report["last_error"], report
    assert len(report["attempts"]) == 3 and report["options"], report
    assert not any(a["source"] == "article" for a in alerts), alerts

    # It stopped its daemon cleanly: the socket was removed, no process is left behind.
    assert not (base / "healerd.sock").exists()
    assert processes_mentioning(str(base / "healerd.toml")) == []

    # Told again with the same --state-dir, it replaces its earlier state and tells the story again.
    again = subprocess.run(bin_cmd("healerd") + ["demo", "--state-dir", "demo"], cwd=tmp_path, env=demo_env(),
                           capture_output=True, text=True, timeout=DEMO_LIMIT_S)
    assert again.returncode == 0, f"stdout:\n{again.stdout}\nstderr:\n{again.stderr}"
    assert "replacing the earlier demo's state" in again.stdout and "Traceback" not in again.stderr
    assert_story_told(again.stdout)


def test_demo_refuses_a_state_dir_that_is_not_its_own(tmp_path):
    other = tmp_path / "mine"
    (other / "state").mkdir(parents=True)
    (other / "state" / "healerd.db").write_bytes(b"not the demo's")
    r = subprocess.run(bin_cmd("healerd") + ["demo", "--state-dir", str(other)], cwd=tmp_path, env=demo_env(),
                       capture_output=True, text=True, timeout=DEMO_LIMIT_S)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "is not an earlier demo's state" in lines[0], r.stderr
    assert (other / "state" / "healerd.db").read_bytes() == b"not the demo's"   # nothing of it deleted


class LineReader:
    """Collects a process's stdout lines on a thread so the test can wait for one."""

    def __init__(self, stream):
        self.lines: list[str] = []
        self.q: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self.thread.start()

    def _pump(self, stream):
        for line in stream:
            self.q.put(line)
        self.q.put(None)

    def wait_for(self, predicate, limit: float, what: str) -> str:
        deadline = time.time() + limit
        while time.time() < deadline:
            try:
                line = self.q.get(timeout=0.5)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"the demo ended before {what}:\n{self.text()}")
            self.lines.append(line)
            if predicate(line):
                return line
        raise AssertionError(f"gave up waiting for {what}:\n{self.text()}")

    def rest(self, limit: float = 10.0) -> str:
        self.thread.join(limit)
        while True:
            try:
                line = self.q.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                self.lines.append(line)
        return self.text()

    def text(self) -> str:
        return "".join(self.lines)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_demo_keep_running_serves_healerctl_and_stops_cleanly(tmp_path, sig):
    base = tmp_path / "demo"
    proc = subprocess.Popen(bin_cmd("healerd") + ["demo", "--keep-running", "--state-dir", str(base)],
                            cwd=tmp_path, env=demo_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reader = LineReader(proc.stdout)
    try:
        reader.wait_for(lambda ln: ln.startswith("Ctrl-C stops the demo."), DEMO_LIMIT_S, "the demo to finish its story")
        out = reader.text()
        assert_story_told(out)
        assert proc.poll() is None, "--keep-running exited after the story"

        sock = str(base / "healerd.sock")
        suggested = re.findall(r"^   (healerctl --socket \S+ .+)$", out, re.M)
        assert len(suggested) >= 5, out
        assert all(shlex.split(c)[2] == sock for c in suggested), suggested
        # Every command the demo suggests works against it, in the order printed.
        ran = {}
        for line in suggested:
            argv = shlex.split(line)
            r = subprocess.run(bin_cmd("healerctl") + argv[1:], cwd=tmp_path, env=demo_env(), capture_output=True,
                               text=True, timeout=120)
            assert r.returncode == 0, f"`{line}` exited {r.returncode}: {r.stderr}"
            assert r.stdout.strip(), f"`{line}` printed nothing"
            ran[" ".join(argv[3:])] = r.stdout
        update = [k for k in ran if k.startswith("update stats --blueprint ")]
        assert "status products" in ran and "stats" in ran and update, list(ran)
        assert "stats: ok, 6 record(s)" in ran[update[0]], ran[update[0]]
        assert re.search(r"fix success rate\s+100\.0 %", ran["stats"]), ran["stats"]
        assert re.search(r"state:\s+ACTIVE", ran["status products"]), ran["status products"]
        assert re.search(r"version:\s+2\b", ran["status products"]), ran["status products"]
        # The daemon really acted on them, and the still-running demo narrates it.
        reader.wait_for(lambda ln: "ALERT RECOVERED stats" in ln, 60, "the demo to show the RECOVERED alert")
        assert proc.poll() is None

        proc.send_signal(sig)
        code = proc.wait(60)
    finally:
        if proc.poll() is None:  # the test failed midway: stop the demo and its daemon anyway
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            for pid, _ in processes_mentioning(str(base / "healerd.toml")):
                os.kill(pid, signal.SIGTERM)
    stderr = proc.stderr.read()
    proc.stderr.close()
    reader.rest()
    assert code == 0, f"demo exited {code} on {sig.name}:\n{stderr}"
    assert "Traceback" not in stderr, stderr
    # The daemon child was stopped with it (a clean stop removes the socket), not orphaned.
    assert not (base / "healerd.sock").exists()
    assert processes_mentioning(str(base / "healerd.toml")) == []
