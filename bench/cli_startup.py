"""healerctl's start-up: importing its command line, `healerctl status --help`, and `healerctl
status NAME`, `ping` and `records NAME` answered by a real daemon (the common queries, which
start without click), beside the bare interpreter's start.

    python bench/cli_startup.py [--runs N] [--root DIR]

Each figure is over N fresh interpreters (default 15): the median and the best run, which is
the least disturbed by other work on the machine; and the CPU time each took (user + system),
which a busy machine disturbs far less than the wall time. `-X importtime` gives the cumulative import
time of `healerd.cli.healerctl` (click and everything healerd imports under it); the wall
time of `python -m healerd.cli.healerctl status --help` adds the interpreter's own start and
click building the help. The heavy modules a command line must not load at start (lexbor,
httpx, SQLite, the actors) are listed if any is. --root measures another checkout of the
repository (its `healerd` put first on the path), e.g. the main branch's, for a before/after;
the daemon `status NAME` asks is always this checkout's (`healerd run` in a temporary state
directory, one paused source, stopped at the end).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchutil import bin_cmd

from healerd.control import client

HEAVY = ("selectolax", "httpx", "httpcore", "apsw", "pykka", "transitions", "protego", "healerd.store",
         "healerd.actors", "healerd.adapters", "healerd.core.blueprint")


def _env(root: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if root:
        env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def import_ms(env: dict[str, str]) -> tuple[float, float, int, list[str]]:
    """The cumulative import time of healerd.cli.healerctl (ms), its CPU time (ms), the modules it
    loads, the heavy ones."""
    code = ("import sys, time; before = set(sys.modules); cpu = time.process_time(); import healerd.cli.healerctl; "
            "print((time.process_time() - cpu) * 1000); print('\\n'.join(sorted(set(sys.modules) - before)))")
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", code], env=env, capture_output=True,
                       text=True, check=True)
    us = None
    for line in r.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == "healerd.cli.healerctl":
            us = int(parts[1])
    if us is None:
        raise SystemExit("no import time for healerd.cli.healerctl:\n" + r.stderr[-2000:])
    cpu_ms, *loaded = r.stdout.split()
    heavy = sorted(m for m in loaded if m.startswith(HEAVY))
    return us / 1000, float(cpu_ms), len(loaded), heavy


def timed_run(cmd: list[str], env: dict[str, str], cwd: str | None = None) -> tuple[float, float]:
    """One command's wall time and CPU time (user + system of the process), in ms."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} exited with {proc.returncode}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def help_ms(env: dict[str, str]) -> tuple[float, float]:
    return timed_run([sys.executable, "-m", "healerd.cli.healerctl", "status", "--help"], env)


BLUEPRINT = """
url = "http://127.0.0.1:9/item"
every = "1d"
[fields.title]
css = "h1"
"""


def status_name_ms(env: dict[str, str], runs: int) -> dict[str, list[tuple[float, float]]]:
    """Wall and CPU times of `healerctl status shop`, `ping` and `records shop` against a real
    daemon with one paused source."""
    with tempfile.TemporaryDirectory(prefix="healerd-cli-bench-") as tmp:
        tmpd = Path(tmp)
        sock = str(tmpd / "healerd.sock")
        (tmpd / "healerd.toml").write_text('[daemon]\nlog_level = "WARNING"\n')
        (tmpd / "shop.toml").write_text(BLUEPRINT)
        log = open(tmpd / "daemon.log", "wb")
        proc = subprocess.Popen(bin_cmd("healerd") + ["run", "--config", str(tmpd / "healerd.toml"), "--state-dir",
                                                      str(tmpd / "state"), "--socket", sock],
                                cwd=tmp, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    client.call(sock, "ping", timeout=5)
                    break
                except client.DaemonUnreachable:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit("healerd did not start:\n" + (tmpd / "daemon.log").read_text()[-2000:]) from None
                    time.sleep(0.05)
            ctl = [sys.executable, "-m", "healerd.cli.healerctl", "--socket", sock]
            subprocess.run(ctl + ["add", "shop", "--blueprint", str(tmpd / "shop.toml"), "--no-wait"], env=env,
                           cwd=tmp, stdout=subprocess.DEVNULL, check=True)
            subprocess.run(ctl + ["pause", "shop"], env=env, cwd=tmp, stdout=subprocess.DEVNULL, check=True)
            return {what: [timed_run(ctl + args, env, cwd=tmp) for _ in range(runs)]
                    for what, args in (("status NAME", ["status", "shop"]), ("ping", ["ping"]),
                                       ("records NAME", ["records", "shop"]))}
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()


def _figures(wall: list[float], cpu: list[float]) -> str:
    return (f"wall median {statistics.median(wall):.1f} ms, best {min(wall):.1f} ms; "
            f"CPU median {statistics.median(cpu):.1f} ms, best {min(cpu):.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--root", default=None, help="a checkout whose healerd to measure instead")
    args = ap.parse_args()
    env = _env(args.root)
    where = subprocess.run([sys.executable, "-c", "import healerd, os; print(os.path.dirname(healerd.__file__))"],
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    imports = [import_ms(env) for _ in range(args.runs)]
    helps = [help_ms(env) for _ in range(args.runs)]
    status = status_name_ms(env, args.runs)
    print(f"healerd from {where}, {args.runs} runs each (python {sys.version.split()[0]})")
    print(f"import healerd.cli.healerctl ({imports[0][2]} modules loaded): "
          + _figures([i[0] for i in imports], [i[1] for i in imports]))
    print("healerctl status --help: " + _figures([h[0] for h in helps], [h[1] for h in helps]))
    for what, times in status.items():
        print(f"healerctl {what} (a real daemon): " + _figures([t[0] for t in times], [t[1] for t in times]))
    bare = [timed_run([sys.executable, "-c", "pass"], env) for _ in range(args.runs)]
    print("for scale, the interpreter alone (python -c pass): " + _figures([b[0] for b in bare], [b[1] for b in bare]))
    print(f"load average during the runs: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    heavy = imports[0][3]
    print("heavy modules loaded at start: " + (", ".join(heavy) if heavy else "none"))


if __name__ == "__main__":
    main()
