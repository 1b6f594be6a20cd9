"""Daemon life and the scrape path at daemon level: the real `healerd run` subprocess, real signals,
a real NOTIFY_SOCKET datagram socket, real local HTTP servers (site, webhooks, healer), the real healerctl.

What these show:
- sd_notify: READY=1 once serving, WATCHDOG=1 only while the core actors answer, STOPPING=1 last;
- SIGTERM / SIGINT: the process is gone within 10 s, a FIX task and a scrape in flight are
  PENDING / due again afterwards and are picked up by the next start;
- SIGHUP reloads the config and `sources_dir` (files added, changed, removed); `healerctl reload`;
- logs: stderr only, one line per event, level configurable (and reloadable);
- the Alerter: alerts.jsonl + `ALERT` lines, dedupe unless the state changed, a failing webhook
  (500 / hanging / refused) never blocks nor loses a line, secrets masked;
- scrape path: 304 on a conditional request, a 50 MB body cut at max_bytes, a slow or huge page
  beside a good source, records retention per source.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import tomllib
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import apsw
import pytest

from healerd.actors.alerter import AlertDeduper, format_line
from healerd.adapters.sdnotify import notify, watchdog_interval
from tests.support.daemon import FAST_CONFIG, DaemonProc, bin_cmd, db_rows
from tests.support.healer_server import HealerServer, healed
from tests.support.httpfixture import LocalServer, Streamer, send
from tests.support.sitepages import (
    LISTING_BP,
    ROWS,
    listing_empty,
    listing_no_score,
    listing_v1,
    listing_v2,
    write_blueprint,
)

STOP_BOUND_S = 10.0
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: \S")
ALERT_LINE = re.compile(r"^ALERT \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (INFO|WARNING|ERROR) \S+ [A-Z_]+: ")
HOURLY = dict(LISTING_BP, every="1h")
FIXED_BP = dict(LISTING_BP, items="table.league-table tr.row-player",
                fields={"name": {"css": "td.player-name"}, "score": {"css": "td.pts", "type": "int"}})


# -- helpers --------------------------------------------------------------------------------------------


def make_config(**over) -> str:
    """FAST_CONFIG with keys replaced or added: make_config(fetch__timeout="30s", daemon__scrapers=4)."""
    data = tomllib.loads(FAST_CONFIG)
    for key, value in over.items():
        section, name = key.split("__", 1)
        data.setdefault(section, {})[name] = value
    out = []
    for section, table in data.items():
        out.append(f"[{section}]")
        out.extend(f"{k} = {json.dumps(v)}" for k, v in table.items())
    return "\n".join(out) + "\n"



def add(d: DaemonProc, tmp_path, name: str, url: str, bp: dict = LISTING_BP) -> None:
    """Register without the first scrape: these sources are scraped on their schedule, the way the tests
    below watch them (several fail on purpose)."""
    r = d.ctl("add", name, "--blueprint", write_blueprint(tmp_path / f"{name}.bp.json", url, bp), "--no-wait")
    assert r.returncode == 0, r.stderr


def n_records(d: DaemonProc, name: str) -> int:
    return db_rows(d, "SELECT count(*) AS n FROM records WHERE source_name = ?", (name,))[0]["n"]


def fix_tasks(d: DaemonProc, name: str) -> list[dict]:
    return db_rows(d, "SELECT task_id, state, retry_count FROM task_queue WHERE type = 'FIX_SOURCE' AND target = ? "
                      "ORDER BY task_id", (name,))


def exit_within(d: DaemonProc, sig: int, bound: float = STOP_BOUND_S) -> int:
    """Send `sig`; the process must have exited when a `bound`-second wait ends."""
    d.proc.send_signal(sig)
    try:
        return d.proc.wait(bound)
    except subprocess.TimeoutExpired:
        pytest.fail(f"healerd was still running {bound:g} s after {signal.Signals(sig).name}:\n{d.log()[-4000:]}")


def gate_body(gate: threading.Event, html: str):
    """A page body that is sent only once `gate` is set (the request stays in flight until then)."""
    def body():
        gate.wait(120)
        return html.encode()
    return body


def peak_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/<pid>/status")




class NotifySocket:
    """A real AF_UNIX SOCK_DGRAM socket standing in for systemd's NOTIFY_SOCKET; records every datagram."""

    def __init__(self, abstract: bool = False):
        self.dir = tempfile.mkdtemp(prefix="hdn")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract:
            name = f"healerd-test-{uuid.uuid4().hex[:12]}"
            self.sock.bind("\0" + name)
            self.env_value = "@" + name
        else:
            path = os.path.join(self.dir, "notify")
            self.sock.bind(path)
            self.env_value = path
        self.sock.settimeout(0.1)
        self.messages: list[str] = []
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while not self.closed.is_set():
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            with self.lock:
                self.messages.append(data.decode())

    def snapshot(self) -> list[str]:
        with self.lock:
            return list(self.messages)

    def count(self, message: str) -> int:
        return sum(1 for m in self.snapshot() if m == message)

    def close(self) -> None:
        self.closed.set()
        self.thread.join(2)
        self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def notify_socket():
    made: list[NotifySocket] = []

    def make(abstract: bool = False) -> NotifySocket:
        s = NotifySocket(abstract)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


class SplitDaemon(DaemonProc):
    """The daemon with stdout and stderr kept apart (DaemonProc merges them)."""

    def _outputs(self):
        self.stdout_path = self.tmp / "stdout.log"
        self._out = open(self.stdout_path, "ab")
        return self._out, self._log

    def stop(self, sig=signal.SIGTERM, timeout: float = 15.0):
        try:
            return super().stop(sig, timeout)
        finally:
            self._out.close()


class Webhook:
    """A real webhook receiver on 127.0.0.1: mode "ok", "500", or "hang" (holds each POST until released)."""

    def __init__(self, mode: str):
        self.mode = mode
        self.bodies: list[bytes] = []
        self.arrivals: list[float] = []   # time.monotonic() of each POST, as its body is read
        self.release = threading.Event()
        self.lock = threading.Lock()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with hook.lock:
                    hook.bodies.append(raw)
                    hook.arrivals.append(time.monotonic())
                if hook.mode == "hang":
                    hook.release.wait(120)
                status = 500 if hook.mode == "500" else 204
                send(self, status, b"" if status == 204 else b"broken", content_type="text/plain")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def received(self) -> list[dict]:
        with self.lock:
            return [json.loads(b) for b in self.bodies]

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


# -- start-up ------------------------------------------------------------------------------------------------


def test_ca_certificates_that_cannot_be_loaded_stop_the_start_in_one_line(tmp_path):
    """SSL_CERT_FILE naming a missing bundle: every actor that fetches would die as it starts,
    be replaced and die again, under a "ready" daemon. healerd refuses to start instead: one
    CRITICAL line naming the setting, exit 78 (which the systemd unit does not restart)."""
    config = tmp_path / "healerd.toml"
    config.write_text(make_config(), encoding="utf-8")
    env = dict(os.environ, SSL_CERT_FILE=str(tmp_path / "missing-ca.pem"))
    r = subprocess.run(bin_cmd("healerd") + ["run", "--config", str(config), "--state-dir", str(tmp_path / "state")],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 78, r.stderr
    critical = [line for line in r.stderr.splitlines() if " CRITICAL " in line]
    assert len(critical) == 1, r.stderr
    assert "cannot load the CA certificates" in critical[0] and "missing-ca.pem" in critical[0]
    assert "Traceback" not in r.stderr and " ready" not in r.stderr


# -- sd_notify ----------------------------------------------------------------------------------------------


def test_sdnotify_sends_datagrams_to_path_and_abstract_sockets(notify_socket, monkeypatch):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert notify("READY=1") is False          # not under systemd: nothing to do, no error
    for abstract in (False, True):
        ns = notify_socket(abstract)
        monkeypatch.setenv("NOTIFY_SOCKET", ns.env_value)
        assert notify("READY=1") is True
        assert notify("WATCHDOG=1") is True
        deadline = time.time() + 5
        while len(ns.snapshot()) < 2 and time.time() < deadline:
            time.sleep(0.02)
        assert ns.snapshot() == ["READY=1", "WATCHDOG=1"]
    monkeypatch.setenv("NOTIFY_SOCKET", "/nonexistent/healerd-notify")
    assert notify("READY=1") is False          # a vanished socket never raises


def test_watchdog_interval_is_half_of_watchdog_usec_for_this_pid(monkeypatch):
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    assert watchdog_interval() is None
    monkeypatch.setenv("WATCHDOG_USEC", "20000000")
    assert watchdog_interval() == 10.0
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    assert watchdog_interval() == 10.0
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid() + 1))   # meant for another process
    assert watchdog_interval() is None
    monkeypatch.delenv("WATCHDOG_PID")
    monkeypatch.setenv("WATCHDOG_USEC", "not-a-number")
    assert watchdog_interval() is None


@pytest.mark.parametrize("abstract", [False, True], ids=["path", "abstract"])
def test_ready_watchdog_stopping_over_notify_socket(abstract, notify_socket, daemon_factory):
    ns = notify_socket(abstract)
    d = daemon_factory(env={"NOTIFY_SOCKET": ns.env_value, "WATCHDOG_USEC": "1000000"}).start()
    d.wait_for(lambda: ns.count("WATCHDOG=1") >= 3, what="three WATCHDOG=1 pings")
    assert exit_within(d, signal.SIGTERM) == 0
    d.wait_for(lambda: "STOPPING=1" in ns.snapshot(), timeout=5, what="STOPPING=1")
    msgs = ns.snapshot()
    assert msgs[0] == "READY=1", msgs[:3]
    assert msgs.count("READY=1") == 1
    assert any(m.startswith("STATUS=") for m in msgs)
    # STOPPING=1 is the last word: no ping after it.
    assert msgs[-1] == "STOPPING=1", msgs[-3:]
    assert msgs.count("STOPPING=1") == 1


def test_watchdog_pings_stop_while_an_actor_is_stuck_and_resume_after(site, notify_socket, daemon_factory, tmp_path):
    """A write lock held from outside: the StoreWriter waits out its busy timeout on every claim of a FIX task,
    and the Scheduler, which asks for those claims on each tick, stops answering. No WATCHDOG=1 meanwhile."""
    ns = notify_socket()
    site.page("/a", listing_v1())
    d = daemon_factory(env={"NOTIFY_SOCKET": ns.env_value, "WATCHDOG_USEC": "1000000"}).start()
    add(d, tmp_path, "a", site.url("/a"), HOURLY)
    d.wait_for(lambda: ns.count("WATCHDOG=1") >= 2, what="pings while healthy")
    missed = "did not answer a watchdog ping"

    lock = apsw.Connection(str(d.state / "healerd.db"))
    lock.set_busy_timeout(10_000)
    lock.execute("BEGIN IMMEDIATE")              # the one write lock
    try:
        first = d.wait_for(lambda: d.log().count(missed), timeout=60, what="a missed ping")
        seen = len(ns.snapshot())                # pings sent before the miss are already in the buffer
        d.wait_for(lambda: d.log().count(missed) > first, timeout=60, what="a second missed ping")
        during = ns.snapshot()[seen:]
        assert "WATCHDOG=1" not in during, during
    finally:
        lock.execute("COMMIT")
        lock.close()
    after = len(ns.snapshot())
    d.wait_for(lambda: "WATCHDOG=1" in ns.snapshot()[after:], timeout=60, what="pings to resume")
    assert d.ctl_json("run", "a")["ok"] is True
    assert exit_within(d, signal.SIGTERM) == 0
    # Even the writer's failures while stuck were logged one line per event.
    bad = [line for line in d.log().splitlines() if not (LOG_LINE.match(line) or ALERT_LINE.match(line))]
    assert not bad, bad[:5]


# -- SIGTERM / SIGINT ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stop_signal_exits_within_10s_and_requeues_unfinished_work(sig, site, daemon_factory, tmp_path):
    healer = HealerServer(lambda req: healed(FIXED_BP), delay=90.0)     # a heal that will not end by itself
    gate = threading.Event()
    cfg = make_config(fetch__timeout="60s", doctor__ladder=["external"],
                      healer__url=healer.url, healer__timeouts=[90], healer__cycles=1)
    try:
        site.page("/fixme", listing_v1())
        site.page("/slow", listing_v1())
        d = daemon_factory(cfg).start()
        add(d, tmp_path, "fixme", site.url("/fixme"))
        add(d, tmp_path, "slow", site.url("/slow"), HOURLY)
        assert d.ctl_json("run", "fixme")["ok"] is True
        assert d.ctl_json("run", "slow")["ok"] is True
        slow_before = db_rows(d, "SELECT next_run_at FROM sources WHERE name = 'slow'")[0]["next_run_at"]
        assert slow_before > time.time() + 3000          # not due for an hour
        slow_successes = d.ctl_json("status", "slow")["success_count"]

        # A FIX task in flight: the Doctor is waiting on the healer.
        site.page("/fixme", listing_v2())
        d.wait_for(lambda: len(healer.requests) >= 1, what="the Doctor to call the healer")
        (task,) = fix_tasks(d, "fixme")
        assert task["state"] == "IN_PROGRESS"
        # A scrape in flight, with a `healerctl run` waiting for it.
        hits = site.hits.get("/slow", 0)
        site.page("/slow", gate_body(gate, listing_v1()))
        waiting = subprocess.Popen(bin_cmd("healerctl") + ["--socket", d.socket, "run", "slow"], cwd=tmp_path,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=d.env)
        d.wait_for(lambda: site.hits.get("/slow", 0) > hits, what="the slow scrape to be in flight")

        assert exit_within(d, sig) == 0
        # The waiting client was answered (not left hanging) and told why.
        out, err = waiting.communicate(timeout=30)
        assert waiting.returncode != 0, out
        assert "shutting down" in err, err
        # Unfinished work is back in the queue.
        assert fix_tasks(d, "fixme") == [dict(task, state="PENDING")]   # the same task, no retry counted
        slow_after = db_rows(d, "SELECT next_run_at FROM sources WHERE name = 'slow'")[0]["next_run_at"]
        assert slow_after <= time.time(), "the interrupted scrape is due again"
        assert "stopped" in d.log()

        # The next start picks both up by itself: no `run`, no `heal`.
        gate.set()
        healer.delay = 0.0
        d2 = daemon_factory(cfg, sub="d").start()
        d2.wait_for(lambda: d2.ctl_json("status", "slow")["success_count"] > slow_successes,
                    what="the re-queued scrape to run")
        d2.wait_for(lambda: d2.ctl_json("status", "fixme")["version"] > 1, timeout=60, what="the re-queued heal")
        d2.wait_for(lambda: fix_tasks(d2, "fixme")[0] == dict(task, state="COMPLETED"), what="the task completed")
    finally:
        gate.set()
        healer.stop()


def test_a_config_reload_during_a_heal_does_not_heal_the_same_task_twice(site, daemon_factory, tmp_path):
    """The old Doctor outlives the reload's stop budget inside a healer call: its task stays with it
    (not re-queued for the new Doctor), and when the call ends the fix is promoted once."""
    release = threading.Event()
    healer = HealerServer(lambda req: (release.wait(60), healed(FIXED_BP))[1])
    cfg = make_config(doctor__ladder=["external"], healer__url=healer.url, healer__timeouts=[60],
                      healer__cycles=1)
    try:
        site.page("/fixme", listing_v1())
        d = daemon_factory(cfg).start()
        add(d, tmp_path, "fixme", site.url("/fixme"), HOURLY)
        assert d.ctl_json("run", "fixme")["ok"] is True
        site.page("/fixme", listing_v2())
        assert d.ctl_json("run", "fixme")["ok"] is False
        d.wait_for(lambda: len(healer.requests) >= 1, what="the Doctor to call the healer")
        (task,) = fix_tasks(d, "fixme")

        d.config_path.write_text(cfg.replace("[fetch]\n", "[fetch]\nmax_bytes = 5000000\n"))
        d.proc.send_signal(signal.SIGHUP)
        d.wait_for(lambda: "still busy" in d.log(), timeout=30, what="the reload to leave the busy Doctor be")
        assert fix_tasks(d, "fixme") == [dict(task, state="IN_PROGRESS")]
        # A heal request goes through the new Scheduler: had the reload re-queued the task, the new
        # Scheduler would have handed it to the new Doctor at its first tick, and this request would
        # wait behind it. It is declined at once: the task is still the old Doctor's.
        r = d.ctl("heal", "fixme", "--json", timeout=30)
        assert r.returncode == 1, r.stderr   # nothing was promoted
        answer = json.loads(r.stdout)
        assert answer["outcome"] == "declined" and "already in progress" in answer["reason"], answer
        assert fix_tasks(d, "fixme") == [dict(task, state="IN_PROGRESS")]
        assert len(healer.requests) == 1, "the new Doctor took the task the old one is still working on"

        release.set()
        d.wait_for(lambda: d.ctl_json("status", "fixme")["version"] == 2, what="the old Doctor's fix promoted")
        d.wait_for(lambda: fix_tasks(d, "fixme") == [dict(task, state="COMPLETED")], what="the task completed")
        assert len(healer.requests) == 1
        assert [h["outcome"] for h in d.ctl_json("history", "fixme") if h.get("kind") == "fix"] == ["promoted"]
        assert d.proc.poll() is None
    finally:
        release.set()
        healer.stop()


def test_stop_within_10s_with_a_hanging_webhook_and_trickling_page(site, daemon_factory, tmp_path):
    hook = Webhook("hang")
    server = LocalServer()
    stop_stream = threading.Event()
    trickle = Streamer(50_000_000, chunk=16_384, delay=0.05, stop=stop_stream)
    server.route("/trickle", trickle)
    try:
        cfg = make_config(fetch__timeout="60s", fetch__max_bytes=100_000_000,
                          alerts__webhook=f"http://127.0.0.1:{hook.port}/hook")
        site.page("/bad", "oops", status=500)
        d = daemon_factory(cfg).start()
        add(d, tmp_path, "bad", site.url("/bad"), HOURLY)
        add(d, tmp_path, "trickle", server.url("/trickle"), HOURLY)
        d.wait_for(lambda: len(hook.bodies) >= 1, what="the webhook to be called (and hang)")
        d.wait_for(lambda: trickle.sent > 0, what="the trickling page to be in flight")
        assert exit_within(d, signal.SIGTERM) == 0
        assert not trickle.done.is_set() or trickle.closed_early
        assert any(a["event"] == "DEGRADED" and a["source"] == "bad" for a in d.alerts())
    finally:
        stop_stream.set()
        hook.stop()
        server.stop()


# -- SIGHUP and healerctl reload -----------------------------------------------------------------------------


def _write_source(folder, name: str, url: str, every: str = "1h", suffix: str = "json") -> None:
    bp = dict(LISTING_BP, every=every, url=url)
    if suffix == "json":
        (folder / f"{name}.json").write_text(json.dumps(bp))
    else:
        (folder / f"{name}.toml").write_text(
            f'url = "{url}"\nevery = "{every}"\nitems = "table.stats tr.player"\n'
            '[fields.name]\ncss = "td.name"\n[fields.score]\ncss = "td.score"\ntype = "int"\n')


def _names(d: DaemonProc) -> set[str]:
    return {s["name"] for s in d.ctl_json("status")}


def test_sighup_and_reload_sync_the_sources_dir(site, daemon_factory, tmp_path):
    src = tmp_path / "sources.d"
    src.mkdir()
    for p in ("/a", "/a2", "/b", "/c", "/d", "/cli"):
        site.page(p, listing_v1())
    _write_source(src, "a", site.url("/a"))
    _write_source(src, "b", site.url("/b"), suffix="toml")
    d = daemon_factory(make_config(daemon__sources_dir=str(src))).start()
    assert _names(d) == {"a", "b"}                       # read at start
    add(d, tmp_path, "cli", site.url("/cli"), HOURLY)    # not from the directory: reload leaves it alone

    _write_source(src, "a", site.url("/a2"))             # changed
    (src / "b.toml").unlink()                            # removed
    _write_source(src, "c", site.url("/c"), suffix="toml")   # added
    (src / "broken.toml").write_text('url = "http://127.0.0.1:9/x"\n[fields.price]\ncss = "td..price"\n')
    (src / "notes.txt").write_text("not a blueprint")
    d.proc.send_signal(signal.SIGHUP)
    d.wait_for(lambda: _names(d) == {"a", "c", "cli"}, what="SIGHUP to sync the directory")
    d.wait_for(lambda: d.ctl_json("status", "a")["url"] == site.url("/a2"), what="a's new blueprint")
    assert "broken.toml" in d.log() and "fields.price.css" in d.log()   # one bad file named, the rest applied
    d.wait_for(lambda: d.ctl_json("status", "c")["success_count"] >= 1, what="the added source to be scraped")
    assert d.ctl_json("run", "a")["ok"] is True
    assert site.hits.get("/a2", 0) >= 1

    _write_source(src, "d", site.url("/d"))
    (src / "broken.toml").unlink()
    r = d.ctl("reload")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "reloaded: added d; changed none; removed none"
    (src / "c.toml").unlink()
    assert d.ctl("reload").stdout.strip() == "reloaded: added none; changed none; removed c"
    assert _names(d) == {"a", "d", "cli"}
    assert d.proc.poll() is None
    assert exit_within(d, signal.SIGTERM) == 0


def test_sighup_reloads_the_config(site, daemon_factory, tmp_path):
    """A new max_bytes takes effect, a broken config is refused, and a new sources_dir replaces the old one."""
    src1, src2 = tmp_path / "one", tmp_path / "two"
    src1.mkdir()
    src2.mkdir()
    site.page("/big", listing_v1([(f"player{i}", i) for i in range(2000)]))   # about 150 KB
    site.page("/x", listing_v1())
    site.page("/y", listing_v1())
    _write_source(src1, "x", site.url("/x"))
    _write_source(src2, "y", site.url("/y"))
    d = daemon_factory(make_config(daemon__sources_dir=str(src1))).start()
    add(d, tmp_path, "big", site.url("/big"), HOURLY)
    assert d.ctl_json("run", "big")["ok"] is True
    assert _names(d) == {"x", "big"}

    d.config_path.write_text(make_config(daemon__sources_dir=str(src2), fetch__max_bytes=50_000))
    d.proc.send_signal(signal.SIGHUP)
    d.wait_for(lambda: _names(d) == {"y", "big"}, what="the new sources_dir")
    assert "config changed" in d.log()
    # `healerctl reload` answers once the main loop has reloaded: here nothing more has changed.
    assert d.ctl("reload").stdout.strip() == "reloaded: added none; changed none; removed none"
    assert d.log().count("config changed") == 1
    out = d.ctl_json("run", "big")
    assert out["ok"] is False and out["error_type"] == "TOO_LARGE" and "max_bytes" in out["error"], out

    log_len = len(d.log())
    d.config_path.write_text("[daemon]\nscrapers = 'many'\n")
    d.proc.send_signal(signal.SIGHUP)
    d.wait_for(lambda: "config reload failed" in d.log()[log_len:], what="the broken config to be refused")
    assert "[daemon] scrapers" in d.log()[log_len:]
    assert d.proc.poll() is None
    out = d.ctl_json("run", "big")                        # still the last good config
    assert out["ok"] is False and "max_bytes" in out["error"]
    assert _names(d) == {"y", "big"}

    # `healerctl reload` re-reads the config too, like SIGHUP.
    d.config_path.write_text(make_config(daemon__sources_dir=str(src1)))
    r = d.ctl("reload")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "reloaded: added x; changed none; removed y"
    assert d.ctl_json("run", "big")["ok"] is True
    assert exit_within(d, signal.SIGTERM) == 0


# -- logs -------------------------------------------------------------------------------------------------------


@pytest.fixture
def split_daemon(tmp_path):
    made: list[SplitDaemon] = []

    def make(config: str, sub: str = "s") -> SplitDaemon:
        d = SplitDaemon(tmp_path / sub, config)
        made.append(d)
        return d

    yield make
    for d in made:
        d.stop()


def _lines(d: SplitDaemon) -> list[str]:
    return d.log().splitlines()


def test_logs_go_to_stderr_one_line_per_event_at_the_configured_level(site, split_daemon, tmp_path):
    site.page("/bad", "oops", status=500)
    d = split_daemon(make_config(daemon__log_level="WARNING"), sub="warn").start()
    add(d, tmp_path, "bad", site.url("/bad"), HOURLY)
    d.wait_for(lambda: any(a["event"] == "DEGRADED" for a in d.alerts()), what="an alert")
    assert exit_within(d, signal.SIGTERM) == 0
    lines = _lines(d)
    assert lines and all(LOG_LINE.match(x) or ALERT_LINE.match(x) for x in lines), lines
    assert not [x for x in lines if " INFO " in x and not x.startswith("ALERT")], lines   # below the level
    assert any(x.startswith("ALERT ") and " DEGRADED: " in x for x in lines)              # alerts always show
    assert d.stdout_path.read_bytes() == b""

    d = split_daemon(make_config(daemon__log_level="INFO"), sub="info").start()
    add(d, tmp_path, "bad", site.url("/bad"), HOURLY)
    d.wait_for(lambda: any(a["event"] == "DEGRADED" for a in d.alerts()), what="an alert")
    # The level is part of the config SIGHUP reloads.
    d.config_path.write_text(make_config(daemon__log_level="WARNING"))
    d.proc.send_signal(signal.SIGHUP)
    d.wait_for(lambda: "config changed" in d.log(), what="the config reload")
    assert d.ctl("reload").returncode == 0               # answered once the reload is over
    assert d.ctl_json("run", "bad")["ok"] is False      # the restarted actors answer
    assert exit_within(d, signal.SIGTERM) == 0
    lines = _lines(d)
    assert all(LOG_LINE.match(x) or ALERT_LINE.match(x) for x in lines), lines
    assert any(" INFO healerd: healerd " in x and " ready" in x for x in lines)
    after = lines[next(i for i, x in enumerate(lines) if "config changed" in x) + 1:]
    assert not [x for x in after if " INFO " in x and not x.startswith("ALERT")], after
    assert d.stdout_path.read_bytes() == b""


# -- the Alerter -------------------------------------------------------------------------------------------------


def test_alert_deduper_window_and_state_changes():
    dd = AlertDeduper(3600)
    t = 1_000_000.0
    assert dd.should_send("s", "HEAL_FAILED", "DEGRADED", t)
    assert not dd.should_send("s", "HEAL_FAILED", "DEGRADED", t + 10)          # repeat within the hour
    assert dd.should_send("other", "HEAL_FAILED", "DEGRADED", t + 10)          # another source
    assert dd.should_send("s", "QUARANTINED", "QUARANTINED", t + 20)           # another event
    assert dd.should_send("s", "HEAL_FAILED", "DEGRADED", t + 30)              # the state changed in between
    assert not dd.should_send("s", "HEAL_FAILED", "DEGRADED", t + 40)
    assert dd.should_send("s", "HEAL_FAILED", "DEGRADED", t + 30 + 3600)       # the hour is over
    assert dd.should_send(None, "SYSTEMIC_HALT", None, t)
    assert not dd.should_send(None, "SYSTEMIC_HALT", None, t + 60)
    line = format_line({"ts": "2026-11-22T10:00:00Z", "level": "warning", "source": None, "event": "SYSTEMIC_HALT",
                        "message": "m"})
    assert line == "ALERT 2026-11-22T10:00:00Z WARNING - SYSTEMIC_HALT: m"


def test_alert_log_lines_and_dedupe_unless_the_state_changed(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    d = daemon_factory().start()
    add(d, tmp_path, "stats", site.url("/stats"))
    assert d.ctl_json("run", "stats")["ok"] is True
    site.page("/stats", listing_no_score())               # the field is gone: every fix attempt is refused
    d.wait_for(lambda: d.state_of("stats") == "QUARANTINED", timeout=60, what="QUARANTINED")
    assert d.ctl("unquarantine", "stats", "--reason", "try again").returncode == 0
    d.wait_for(lambda: sum(a["event"] == "QUARANTINED" for a in d.alerts()) == 2, timeout=60,
               what="the second quarantine")
    fixes = [h for h in d.ctl_json("history", "stats") if h["kind"] == "fix"]
    assert len(fixes) == 6                                  # 2 x 3 failed attempts ...
    events = [a["event"] for a in d.alerts() if a["source"] == "stats"]
    # ... but HEAL_FAILED only once per state episode: attempt 2/3 repeats 1/3 within the hour, same state.
    assert events == ["DEGRADED", "HEAL_FAILED", "QUARANTINED", "UNQUARANTINED", "HEAL_FAILED", "QUARANTINED"], events
    jsonl = d.alerts()
    for a in jsonl:
        assert set(a) == {"ts", "level", "source", "event", "message", "details"}
        assert a["ts"].endswith("Z")
    # Each logged alert is also one ALERT line on stderr, in the same order.
    alert_lines = [x for x in d.log().splitlines() if x.startswith("ALERT ")]
    assert alert_lines == [format_line(a) for a in jsonl]
    # And the alerts table (healerctl alerts) holds the same, no more.
    d.wait_for(lambda: len(d.ctl_json("alerts")) == len(jsonl), what="the alerts table")
    assert sorted(a["event"] for a in d.ctl_json("alerts")) == sorted(a["event"] for a in jsonl)


def test_the_dedupe_window_survives_a_restart(site, daemon_factory, tmp_path):
    cfg = make_config(doctor__max_fix_attempts=6)
    site.page("/stats", listing_v1())
    d = daemon_factory(cfg).start()
    add(d, tmp_path, "stats", site.url("/stats"), HOURLY)
    assert d.ctl_json("run", "stats")["ok"] is True
    site.page("/stats", listing_no_score())               # every fix attempt is refused
    assert d.ctl_json("run", "stats")["ok"] is False
    heal_failed = lambda dd: sum(a["event"] == "HEAL_FAILED" for a in dd.alerts())  # noqa: E731
    fix_rows = lambda dd: db_rows(dd, "SELECT count(*) AS n FROM fix_history")[0]["n"]  # noqa: E731
    d.wait_for(lambda: heal_failed(d) == 1 and fix_rows(d) == 1, timeout=60, what="the first failed attempt")
    d.wait_for(lambda: len(d.ctl_json("alerts")) == len(d.alerts()), what="the alerts table")
    assert exit_within(d, signal.SIGTERM) == 0
    log_before = len(d.log())

    d2 = daemon_factory(cfg).start()                      # the same state dir (and log file)
    assert d2.ctl_json("run", "stats")["ok"] is False     # still DEGRADED: the next attempt fails the same way
    d2.wait_for(lambda: fix_rows(d2) == 2, timeout=60, what="the second failed attempt")
    assert d2.state_of("stats") == "DEGRADED"             # committed with the attempt
    # The Alerter takes alerts in the order they were committed: once the recovery's alert is
    # out, the second attempt's HEAL_FAILED has been dealt with (and must have been held back).
    site.page("/stats", listing_v1())
    assert d2.ctl_json("run", "stats")["ok"] is True
    d2.wait_for(lambda: any(a["event"] == "RECOVERED" for a in d2.alerts()), what="the RECOVERED alert")
    assert heal_failed(d2) == 1, [a["event"] for a in d2.alerts()]   # within the hour, same state: not repeated
    assert "HEAL_FAILED" not in "".join(x for x in d2.log()[log_before:].splitlines() if x.startswith("ALERT "))


@pytest.mark.parametrize("mode", ["500", "hang", "refused"])
def test_a_failing_webhook_never_blocks_nor_loses_the_log_line(mode, site, daemon_factory, tmp_path):
    from tests.support.ports import refusing_socket

    hook = Webhook(mode) if mode != "refused" else None
    refusing = refusing_socket() if mode == "refused" else None
    url = f"http://127.0.0.1:{hook.port if hook else refusing.getsockname()[1]}/hook"
    try:
        d = daemon_factory(make_config(alerts__webhook=url, doctor__enabled=False)).start()
        site.page("/flip", listing_v1())
        add(d, tmp_path, "flip", site.url("/flip"), HOURLY)
        d.wait_for(lambda: d.ctl_json("status", "flip")["success_count"] >= 1, what="the first scrape")
        # Six state changes, six alerts: every `run` returns while the webhook fails (or hangs on the first POST).
        started = time.monotonic()
        for _ in range(3):
            site.page("/flip", listing_empty())
            assert d.ctl_json("run", "flip")["ok"] is False
            site.page("/flip", listing_v1())
            assert d.ctl_json("run", "flip")["ok"] is True
        flips = lambda: [a for a in d.alerts() if a["source"] == "flip"]  # noqa: E731
        d.wait_for(lambda: len(flips()) == 6, what="six alert lines")
        assert [a["event"] for a in flips()] == ["DEGRADED", "RECOVERED"] * 3
        assert len([x for x in d.log().splitlines() if x.startswith("ALERT ") and " flip " in x]) == 6
        if mode == "hang":
            # The Alerter gives a POST 5 s: done sooner, it is still held on the first one; on a
            # machine slow enough to take longer it tries the first one again, never a later one
            # (in order), and never a POST while the one before was still held.
            held = time.monotonic() - started < 4.5
            assert not hook.release.is_set() and (len(hook.bodies) == 1 if held else len(hook.bodies) >= 1)
            gaps = [b - a for a, b in zip(hook.arrivals, hook.arrivals[1:])]
            assert all(gap >= 4.5 for gap in gaps), f"a POST sent while the one before was held: {gaps}"
            assert all(b == flips()[0] for b in hook.received())
        if mode in ("500", "refused"):
            # The outage is one SYSTEMIC_HALT alert and one log line, not one per alert or per retry;
            # the first alert is tried again (with backoff), the later ones wait behind it.
            def outage() -> list[dict]:
                return [a for a in d.alerts() if a["event"] == "SYSTEMIC_HALT"]
            d.wait_for(outage, what="the webhook's outage alert")
            if mode == "500":
                d.wait_for(lambda: len(hook.received()) >= 2, what="the first alert tried again")
                assert all(b == flips()[0] for b in hook.received()), hook.received()
            assert len(outage()) == 1 and outage()[0]["details"] == {"cause": "webhook"}
            assert "HTTP 500" in outage()[0]["message"] if mode == "500" else "refused" in outage()[0]["message"]
            assert len([x for x in d.log().splitlines() if "healerd.alerter: alert webhook:" in x]) == 1
        assert exit_within(d, signal.SIGTERM) == 0
    finally:
        if hook:
            hook.stop()
        if refusing:
            refusing.close()


def test_no_secret_reaches_an_alert_the_log_or_the_webhook(site, daemon_factory, tmp_path):
    hook = Webhook("500")
    secrets = ["pw-Hunter2-url", "key-Q9x8-query", "hookpass-77", "hooktoken-88"]
    try:
        cfg = make_config(alerts__webhook=f"http://hookuser:{secrets[2]}@127.0.0.1:{hook.port}/hook"
                                          f"?token={secrets[3]}")
        d = daemon_factory(cfg).start()
        site.page("/private", "down", status=500)
        url = f"http://scraper:{secrets[0]}@127.0.0.1:{site.port}/private?api_key={secrets[1]}"
        add(d, tmp_path, "private", url, HOURLY)
        d.wait_for(lambda: any(a["event"] == "DEGRADED" for a in d.alerts()), what="the DEGRADED alert")
        d.wait_for(lambda: len(hook.received()) >= 1, what="the webhook POST")
        degraded = [a for a in d.alerts() if a["event"] == "DEGRADED"][0]
        # The alert does talk about the URL, with the credentials masked.
        assert "/private" in degraded["message"] and "***" in degraded["message"], degraded
        assert exit_within(d, signal.SIGTERM) == 0
        texts = {"alerts.jsonl": (d.state / "alerts.jsonl").read_text(), "log": d.log(),
                 "webhook": json.dumps(hook.received())}
        for where, text in texts.items():
            for s in secrets:
                assert s not in text, f"{s} leaked into {where}"
    finally:
        hook.stop()


# -- the scrape path ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("validator", ["etag", "last-modified"])
def test_304_is_a_good_scrape_without_a_parse(validator, daemon_factory, tmp_path):
    server = LocalServer()
    version = {"tag": '"v1"', "date": "Sat, 21 Nov 2026 10:00:00 GMT", "html": listing_v1()}

    def conditional(h):
        if validator == "etag":
            fresh, header = h.headers.get("If-None-Match") == version["tag"], {"ETag": version["tag"]}
        else:
            fresh, header = h.headers.get("If-Modified-Since") == version["date"], {"Last-Modified": version["date"]}
        if fresh:
            send(h, 304, b"", header, content_type=None)
        else:
            send(h, 200, version["html"].encode(), header)

    server.route("/cond", conditional)
    try:
        d = daemon_factory().start()
        add(d, tmp_path, "cond", server.url("/cond"), HOURLY)
        d.wait_for(lambda: d.ctl_json("status", "cond")["success_count"] >= 1, what="the first scrape")
        first = d.ctl_json("records", "cond")
        before = d.ctl_json("status", "cond")
        assert len(first) == 1 and before["failure_count"] == 0

        out = d.ctl_json("run", "cond")
        assert out["ok"] is True and out["not_modified"] is True, out
        sent = server.seen("/cond")[-1]
        if validator == "etag":
            assert sent.get("if-none-match") == '"v1"'
        else:
            assert sent.get("if-modified-since") == version["date"]
        after = d.ctl_json("status", "cond")
        assert d.ctl_json("records", "cond") == first                     # records unchanged
        assert after["success_count"] == before["success_count"] + 1      # success counted
        assert after["state"] == "ACTIVE" and after["failure_count"] == 0 and after["last_error"] is None
        assert after["last_success_at"] >= before["last_success_at"]
        assert "not modified" in d.ctl("run", "cond").stdout

        # The page changes: a full answer, parsed and recorded, with the new validator remembered.
        version.update(tag='"v2"', date="Sun, 22 Nov 2026 10:00:00 GMT",
                       html=listing_v1([("Ada", 99)] + list(ROWS[1:])))
        out = d.ctl_json("run", "cond")
        assert out["ok"] is True and out["not_modified"] is False, out
        recs = d.ctl_json("records", "cond")
        assert len(recs) == 2 and recs[0]["data"][0] == {"name": "Ada", "score": 99}
        assert d.ctl_json("run", "cond")["not_modified"] is True
    finally:
        server.stop()


def test_a_50mb_body_is_cut_at_max_bytes_without_the_daemon_growing(daemon_factory, tmp_path):
    server = LocalServer()
    streams: dict[str, list[Streamer]] = {"/huge": [], "/declared": []}

    def fifty_mb(path: str, **kw):
        def answer(h):
            s = Streamer(50_000_000, **kw)       # a fresh 50 MB body per request, generated chunk by chunk
            streams[path].append(s)
            s(h)
        return answer

    server.route("/huge", fifty_mb("/huge"))                                # no Content-Length: read to the cap
    server.route("/declared", fifty_mb("/declared", content_length=True))   # refused before reading
    server.route("/fine", lambda h: send(h, 200, listing_v1().encode()))
    try:
        d = daemon_factory(make_config(fetch__max_bytes=1_000_000)).start()
        add(d, tmp_path, "fine", server.url("/fine"), HOURLY)
        d.wait_for(lambda: d.ctl_json("status", "fine")["success_count"] >= 1, what="a normal scrape")
        base = peak_rss_kb(d.proc.pid)                      # before any big body
        add(d, tmp_path, "huge", server.url("/huge"), HOURLY)
        add(d, tmp_path, "declared", server.url("/declared"), HOURLY)
        d.wait_for(lambda: all(d.ctl_json("status", n)["last_failure_at"] for n in ("huge", "declared")),
                   what="the first scrapes of the big pages")
        for _ in range(2):
            for name in ("huge", "declared"):
                out = d.ctl_json("run", name)
                assert out["ok"] is False and out["error_type"] == "TOO_LARGE", out
                assert "max_bytes" in out["error"], out
        grown_mb = (peak_rss_kb(d.proc.pid) - base) / 1024
        assert grown_mb < 25, f"peak RSS grew {grown_mb:.0f} MB reading 50 MB bodies capped at 1 MB"
        assert len(streams["/huge"]) == len(streams["/declared"]) == 3
        for s in streams["/huge"] + streams["/declared"]:
            assert s.done.wait(30)
            assert s.closed_early and s.sent < 25_000_000, s.sent    # the daemon hung up early
        for name in ("huge", "declared"):
            st = d.ctl_json("status", name)
            assert st["state"] == "DEGRADED" and st["last_error_type"] == "TOO_LARGE"
            assert fix_tasks(d, name) == []                  # nothing a selector fix could change
            assert n_records(d, name) == 0
        assert d.ctl_json("run", "fine")["ok"] is True       # and the daemon carries on
        server.route("/huge", lambda h: send(h, 200, listing_v1().encode()))
        assert d.ctl_json("run", "huge")["ok"] is True
        assert d.state_of("huge") == "ACTIVE"
    finally:
        server.stop()


def test_a_slow_or_huge_page_does_not_delay_a_good_source(site, daemon_factory, tmp_path):
    server = LocalServer()
    gate = threading.Event()
    stop_stream = threading.Event()
    trickle = Streamer(50_000_000, chunk=16_384, delay=0.05, stop=stop_stream)   # minutes, unless stopped
    server.route("/huge", trickle)
    site.page("/good", listing_v1())
    try:
        cfg = make_config(daemon__scrapers=4, fetch__timeout="60s", fetch__max_bytes=100_000_000)
        d = daemon_factory(cfg).start()
        add(d, tmp_path, "good", site.url("/good"), HOURLY)
        site.page("/slow", listing_v1())
        add(d, tmp_path, "slow", site.url("/slow"), HOURLY)
        add(d, tmp_path, "huge", server.url("/huge"), HOURLY)
        d.wait_for(lambda: d.ctl_json("status", "slow")["success_count"] >= 1, what="slow's first scrape")
        d.wait_for(lambda: trickle.sent > 0, what="the huge page to be in flight")
        hits = site.hits.get("/slow", 0)
        site.page("/slow", gate_body(gate, listing_v1()))
        assert d.ctl("run", "slow", "--no-wait").returncode == 0
        d.wait_for(lambda: site.hits.get("/slow", 0) > hits, what="the slow page to be in flight")

        for _ in range(3):
            out = d.ctl_json("run", "good")
            assert out["ok"] is True, out
        # All three good scrapes completed while the slow and the huge page were still in flight.
        assert not gate.is_set() and not trickle.done.is_set()
        assert d.ctl_json("status", "slow")["success_count"] == 1
        assert d.ctl_json("status", "good")["success_count"] >= 4

        gate.set()
        stop_stream.set()
        d.wait_for(lambda: d.ctl_json("status", "slow")["success_count"] == 2, what="the slow scrape to finish")
        d.wait_for(lambda: d.ctl_json("status", "huge")["last_failure_at"] is not None
                   or d.ctl_json("status", "huge")["success_count"] >= 1, what="the huge scrape to finish")
    finally:
        gate.set()
        stop_stream.set()
        server.stop()


def test_records_retention_keeps_the_table_bounded_per_source(site, daemon_factory, tmp_path):
    d = daemon_factory(make_config(daemon__records_retention=3)).start()
    site.page("/keep", listing_v1())
    site.page("/other", listing_v1())
    add(d, tmp_path, "keep", site.url("/keep"), HOURLY)
    add(d, tmp_path, "other", site.url("/other"), HOURLY)
    d.wait_for(lambda: d.ctl_json("status", "keep")["success_count"] >= 1, what="the first scrape")
    for i in range(1, 9):
        site.page("/keep", listing_v1([("Ada", 100 + i)] + ROWS[1:]))
        assert d.ctl_json("run", "keep")["ok"] is True
    assert d.ctl_json("status", "keep")["success_count"] >= 9
    assert n_records(d, "keep") == 3
    assert [r["data"][0]["score"] for r in d.ctl_json("records", "keep", "--limit", "100")] == [108, 107, 106]
    # Retention is per source: the other source's records are not touched.
    other = d.ctl_json("status", "other")["success_count"]
    assert n_records(d, "other") == other <= 3

    # The limit is config, and SIGHUP applies a new one on the next write.
    d.config_path.write_text(make_config(daemon__records_retention=2))
    d.proc.send_signal(signal.SIGHUP)
    d.wait_for(lambda: "config changed" in d.log(), what="the config reload")
    assert d.ctl("reload").returncode == 0               # answered once the reload is over
    site.page("/keep", listing_v1([("Ada", 200)] + ROWS[1:]))
    assert d.ctl_json("run", "keep")["ok"] is True
    assert n_records(d, "keep") == 2
    assert [r["data"][0]["score"] for r in d.ctl_json("records", "keep")] == [200, 108]
    assert exit_within(d, signal.SIGTERM) == 0
