"""`healerd demo`: the story of a site that changes and a daemon that copes.

Starts the demo site and a real `healerd run` on a temporary state dir, registers
three sources over the control socket, then changes the site under them and
narrates what the daemon does: the failure, the diff, the heal promoted, records
flowing again; then a field that really disappeared, refused and quarantined with
an alert. Exits 0 when every step happened.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from healerd.control.client import DaemonUnreachable, call
from healerd.control.protocol import ControlError
from healerd.core.errors import HealerdError
from healerd.demo.site import BLUEPRINTS, DemoSite

CONFIG = """
[daemon]
scrapers = 2
tick = "0.05s"
politeness_delay = 0
jitter = 0
[fetch]
timeout = "5s"
respect_robots = true
per_host_concurrency = 4
[doctor]
max_fix_attempts = 3
attempt_window = "10m"
quarantine_for = "1h"
"""


class StoryFailed(HealerdError):
    pass


class Narrator:
    def __init__(self, sock: str, out=sys.stdout):
        self.sock = sock
        self.out = out
        self.color = out.isatty() and not os.environ.get("NO_COLOR")
        self.alert_id = 0
        self.seen: list[tuple[str, str | None]] = []   # (event, source) of every alert shown
        self.t0 = time.time()
        self.blueprint_file = Path(tempfile.gettempdir()) / "stats.toml"   # set by run_demo to its state dir
        self.keeps_files = True   # False when run_demo removes its directory at the end

    def _c(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def step(self, n: int, text: str) -> None:
        self.say()
        self.say(self._c(f"[{time.time() - self.t0:5.1f}s] {n}. {text}", "1"))

    def call(self, op: str, **args):
        return call(self.sock, op, args, timeout=120)

    def show_alerts(self) -> list[dict]:
        new = self.call("alerts", after_id=self.alert_id, limit=100)
        for a in new:
            self.alert_id = max(self.alert_id, a["id"])
            self.seen.append((a["event"], a["source"]))
            colour = {"info": "32", "warning": "33", "error": "31"}.get(a["level"], "0")
            self.say("   " + self._c(f"ALERT {a['event']}", colour) + f" {a['source'] or '-'}: {a['message']}")
        return new

    def wait(self, what: str, predicate, timeout: float = 45.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.show_alerts()
            got = predicate()
            if got:
                return got
            time.sleep(0.2)
        raise StoryFailed(f"gave up waiting for {what} after {timeout:.0f}s")


def _records_line(rec: dict) -> str:
    data = rec["data"]
    first = data[0] if isinstance(data, list) and data else data
    n = f"{len(data)} records" if isinstance(data, list) else "1 record"
    return f"v{rec['version']}: {n}, first {json.dumps(first, ensure_ascii=False)}"


def story(n: Narrator, site: DemoSite) -> None:
    n.step(1, f"A demo site is up at {site.url('/')} with three pages; registering three sources.")
    for name, bp in BLUEPRINTS.items():
        n.call("add", name=name, blueprint=bp, url=site.url(f"/{name}"))
        fields = ", ".join(bp["fields"])
        n.say(f"   + {name:9s} {site.url('/' + name)}  fields: {fields}  every {bp['every']}")

    n.step(2, "healerd scrapes them on schedule and validates every result.")
    for name in BLUEPRINTS:
        n.wait(f"{name} to scrape", lambda name=name: n.call("records", name=name, limit=1000))
        n.say(f"   {name:9s} " + _records_line(n.call("records", name=name, limit=1000)[0]))

    n.step(3, "The shop is redesigned: new class names, a wrapper around every product card.")
    site.set_layout("/products", 2)
    def products_noticed():
        s = n.call("status", name="products")
        return s if s["state"] != "ACTIVE" or s["version"] != 1 else None

    n.wait("the products source to notice", products_noticed)
    n.say("   its lifecycle so far (every transition is audited in the same transaction):")
    for ev in reversed(n.call("status", name="products").get("events") or []):
        if ev["from"] is None:
            continue
        n.say(f"     {ev['from']:>8s} -> {ev['to']:<8s} {ev['trigger']}: {(ev['reason'] or '')[:80]}")
    diff = n.wait("the Doctor's diagnosis", lambda: n.call("diff", name="products")["diff"])
    n.say("   the Doctor diagnosed it from the structural diff of the last good page and the new one:")
    changed = [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    shown = [ln for ln in changed if ln[0] == "-"][:5] + [ln for ln in changed if ln[0] == "+"][:6]
    for line in shown:
        n.say("     " + line[:110])
    n.say(f"     ... {len(changed) - len(shown)} more changed lines (`healerctl diff products`)")

    n.step(4, "The Doctor repairs the selectors, the Deployer proves them on the live page and promotes them.")
    def products_healed():
        s = n.call("status", name="products")
        return s if s["state"] == "ACTIVE" and s["version"] > 1 else None

    st = n.wait("the heal to be promoted", products_healed)
    detail = n.call("status", name="products")
    fields = detail["blueprint"]["fields"]
    n.say(f"   products now runs parser version {st['version']} (origin builtin):")
    if detail["blueprint"].get("items"):
        n.say(f"     items    = {detail['blueprint']['items']}")
    for fname, f in fields.items():
        n.say(f"     {fname:8s} = {f['css']}")
    def healed_records():
        r = n.call("records", name="products", limit=1000)
        return r if r and r[0]["version"] == st["version"] else None

    n.wait("records from the healed parser", healed_records)
    n.say("   records flow again: " + _records_line(n.call("records", name="products", limit=1000)[0]))

    n.step(5, "The stats page drops its score column: that data is really gone.")
    site.set_layout("/stats", 2)
    n.wait("stats to fail", lambda: n.call("status", name="stats")["state"] != "ACTIVE")
    n.say("   the built-in healer must refuse rather than invent a score; after max_fix_attempts (3) "
          "it stops and quarantines")
    def stats_quarantined():
        s = n.call("status", name="stats")
        return s if s["state"] == "QUARANTINED" else None

    st = n.wait("stats to be quarantined", stats_quarantined, timeout=60)
    # The state is committed a moment before its alert is written: wait for the alert too, or the
    # story would move on (or end) without showing it.
    n.wait("the QUARANTINED alert", lambda: ("QUARANTINED", "stats") in n.seen, timeout=30)
    report = st.get("deferred_report") or {}
    n.say(f"   stats is QUARANTINED until {st['quarantine_until']}; the deferred report says:")
    n.say(f"     last error: {report.get('last_error', '-')}")
    for opt in report.get("options", [])[:3]:
        n.say(f"     option: {opt}")
    if report.get("blueprint_toml") and n.keeps_files:
        n.blueprint_file.write_text(report["blueprint_toml"])
        n.say(f"     (the demo saved that blueprint as {n.blueprint_file})")
    elif report.get("blueprint_toml"):   # its directory is removed at the end: say how to keep it
        n.say("     (with --state-dir DIR the demo saves that blueprint as DIR/stats.toml)")

    n.step(6, "Meanwhile the article never broke.")
    n.say("   article   " + _records_line(n.call("records", name="article", limit=1000)[0]))

    n.step(7, "The products fix proves itself in production: its probation scrapes pass.")

    def probation_over():
        fixes = [h for h in n.call("history", name="products") if h["kind"] == "fix" and h["outcome"] == "promoted"]
        return fixes if fixes and all(f.get("production") for f in fixes) else None

    fixes = n.wait("the products fix's probation", probation_over, timeout=60)
    n.say(f"   version {fixes[0]['version']}: probation {fixes[0]['production']}")
    n.show_alerts()
    stats = n.call("stats", window_s=86400.0)
    summary = n.call("status")["summary"]
    n.say()
    n.say(n._c("Done:", "1") + f" {summary['sources']} sources, states {summary['by_state']}.")
    n.say(f"   fix success rate {_pct(stats['fix_success_rate'])} ({stats['fixes_passed']} fix passed its probation, "
          f"{stats['failed_attempts']} failed attempts); {stats['data_gone_refusals']} refusals found the data gone "
          f"(right answers, not failures)")
    n.say(f"   false positive rate {_pct(stats['false_positive_rate'])}, median recovery "
          f"{stats['median_recovery_s']}s, automatic rollbacks {stats['rollbacks']}")
    healing = ("fix_success_rate", "false_positive_rate", "median_recovery_s", "p90_recovery_s")
    missed = [k for k in healing if stats["targets"][k]["met"] is False]
    n.say("   the healing targets are met" if not missed else f"   healing targets missed: {', '.join(missed)}")
    q = [name for name in BLUEPRINTS if n.call("status", name=name)["state"] == "QUARANTINED"]
    if q:
        n.say(f"   quarantined: {', '.join(q)}, as it should be: its data is gone, and the deferred report "
              f"tells a person what works")


def _pct(rate) -> str:
    return "-" if rate is None else f"{rate * 100:.0f} %"


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def run_demo(state_dir: str | None = None, port: int = 0, keep_running: bool = False) -> int:
    # absolute: the daemon runs with cwd=base, so a relative --state-dir would point elsewhere for it
    base = Path(state_dir).resolve() if state_dir else Path(tempfile.mkdtemp(prefix="healerd-demo-"))
    base.mkdir(parents=True, exist_ok=True)
    state = base / "state"
    sock = str(base / "healerd.sock")
    cfg = base / "healerd.toml"
    if state.exists() and any(state.iterdir()):
        # The story registers its sources afresh: an earlier demo's state is replaced; anything
        # else there is not the demo's to delete.
        if cfg.is_file() and cfg.read_text() == CONFIG:
            shutil.rmtree(state)
            print(f"healerd demo: replacing the earlier demo's state in {state}", flush=True)
        else:
            print(f"healerd demo: {state} exists and is not an earlier demo's state; "
                  "choose another --state-dir", file=sys.stderr)
            return 1
    cfg.write_text(CONFIG)
    log_path = base / "daemon.log"
    site = DemoSite(port).start()
    print(f"healerd demo: state in {base} (daemon log: {log_path})", flush=True)
    env = {k: v for k, v in os.environ.items() if k not in ("CODE_HEALER_URL", "CODE_HEALER_TOKEN", "HEALERD_SOCKET",
                                                              "NOTIFY_SOCKET")}
    with open(log_path, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "healerd", "run", "--config", str(cfg), "--state-dir",
                                 str(state), "--socket", sock], cwd=str(base), env=env, stdout=log, stderr=log)
    narrator = Narrator(sock)
    narrator.blueprint_file = base / "stats.toml"
    narrator.keeps_files = state_dir is not None or keep_running   # else the directory goes at the end
    code = 0
    # SIGTERM ends the demo like Ctrl-C does, so the daemon child is stopped rather than orphaned
    previous_term = signal.signal(signal.SIGTERM, _interrupt)
    try:
        deadline = time.time() + 20
        while True:
            if proc.poll() is not None:
                raise StoryFailed(f"the daemon exited with {proc.returncode}; see {log_path}")
            try:
                narrator.call("ping")
                break
            except Exception:
                if time.time() > deadline:
                    raise StoryFailed(f"the daemon did not come up; see {log_path}") from None
                time.sleep(0.1)
        story(narrator, site)
        if keep_running:
            narrator.say()
            narrator.say("The site and the daemon keep running. Try, in another terminal:")
            commands = ["status", "status products", "history products", "diff stats", "records products --limit 2",
                        "alerts", "stats"]
            if narrator.blueprint_file.exists():   # the deferred report's own advice: score made optional
                commands.append(f"update stats --blueprint {shlex.quote(str(narrator.blueprint_file))}")
            for c in commands:
                narrator.say(f"   healerctl --socket {sock} {c}")
            narrator.say("Ctrl-C stops the demo.")
            try:
                while proc.poll() is None:
                    time.sleep(0.5)
                    narrator.show_alerts()
            except KeyboardInterrupt:
                pass
    except StoryFailed as exc:
        print(f"healerd demo: {exc}", file=sys.stderr)
        code = 1
    except (ControlError, DaemonUnreachable) as exc:
        print(f"healerd demo: the daemon did not answer as the story expects: {exc}; see {log_path}",
              file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        code = 130
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        site.stop()
        signal.signal(signal.SIGTERM, previous_term)
        if state_dir is None and code == 0 and not keep_running:
            shutil.rmtree(base, ignore_errors=True)
            print("healerd demo: temporary state removed (--state-dir DIR keeps it)", flush=True)
    return code
