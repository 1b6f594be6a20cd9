"""A selector bomb answered by a local healer: the real daemon, a real local site, a real healer server.

The source's page becomes 240 nested `<div>`s holding the data. The healer answers, cycle
after cycle, the two shapes of one attack:

- cycle 1: `div:has(div:has(div:has(div:has(div:has(td)))))` (nested `:has()`): refused by the
  static check before it becomes a candidate (never staged);
- cycle 2: `span div div div tr` (within the static bounds, yet ~0.3 s of lexbor per row on this
  page, so ~30 s for the hundred rows here on a quiet machine, whatever its speed far past the deadline):
  staged, tried in the trial worker, stopped at `[daemon] extraction_timeout` (2 s here),
  recorded as rejected "too slow on this page" before its worker is killed.

`healerctl ping` is asked over and over with a 3 s client timeout throughout, and after a
`kill -9` and a restart, when the healer is asked again and gives the same answers: the slow
one is not staged a second time. Production never moves.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time

from tests.support.daemon import db_rows
from tests.support.external_heal import (
    FIXED,
    add_and_break,
    assert_running,
    healer_calls,
    healer_config,
    production_versions,
)
from tests.support.healer_server import HealerServer, healed
from tests.support.sitepages import ROWS, write_blueprint

BOMB = dict(FIXED, items="div:has(div:has(div:has(div:has(div:has(td)))))")
SLOW = dict(FIXED, items="span div div div tr")
PING_TIMEOUT_S = 3.0
# The slow selector's cost grows with the rows (each `tr` backtracks through C(240, 3) div chains):
# ~0.3 s a row on a quiet machine. A hundred rows keep it ~15x past the 2 s deadline on a fast,
# quiet machine, so it is the deadline that stops it, never the selector finishing first.
SLOW_ROWS = ROWS * 20


def hostile_page(depth: int = 240, rows=ROWS) -> str:
    """The data at the bottom of `depth` nested divs (within max_depth)."""
    body = "".join(f'<tr class="row-player"><td class="player-name">{n}</td><td class="pts">{s}</td></tr>'
                   for n, s in rows)
    return ("<html><head><title>Stats</title></head><body>" + "<div>" * depth +
            f'<table class="league-table">{body}</table>' + "</div>" * depth + "</body></html>")


class Pinger:
    """`healerctl ping` in a loop, each with a client timeout; every miss is kept."""

    def __init__(self, d):
        self.d = d
        self.answers = 0
        self.misses: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            t0 = time.monotonic()
            try:
                r = self.d.ctl("--timeout", str(PING_TIMEOUT_S), "ping", timeout=PING_TIMEOUT_S)
                if r.returncode == 0:
                    self.answers += 1
                else:
                    self.misses.append(f"exit {r.returncode}: {r.stderr.strip()}")
            except subprocess.TimeoutExpired:
                self.misses.append(f"no answer within {PING_TIMEOUT_S}s (after {time.monotonic() - t0:.1f}s)")
            self._stop.wait(0.2)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)


def worker_children(pid: int) -> list[int]:
    """The worker processes the daemon `pid` started (its children running workers_main)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid and b"workers_main" in cmd:
            found.append(int(entry))
    return found


def slow_versions(d):
    """The versions holding the slow answer (its `items` selector), oldest first."""
    return [v for v in db_rows(d, "SELECT version, status, note, body FROM parser_versions WHERE source_name = 'stats' "
                                  "ORDER BY version") if json.loads(v["body"]).get("items") == SLOW["items"]]


def test_a_selector_bomb_from_the_healer_never_freezes_the_daemon(site, daemon_factory, tmp_path):
    def answer(req):
        return healed(BOMB if req["cycle"] == 1 else SLOW, "selectors updated")

    healer = HealerServer(answer)
    try:
        cfg = healer_config(healer.url, timeouts="[5, 5]", cycles=2, attempts=5)
        cfg = cfg.replace("[daemon]\n", '[daemon]\nextraction_timeout = "2s"\n', 1)
        d = daemon_factory(cfg).start()
        with Pinger(d) as pinger:
            add_and_break(d, site, tmp_path, new_page=hostile_page(rows=SLOW_ROWS))
            # The slow answer is staged once, tried, stopped at the deadline, and rejected.
            got = d.wait_for(lambda: [v for v in slow_versions(d) if v["status"] == "rejected"], timeout=90,
                             what="the slow candidate to be rejected")
            assert "too slow on this page" in got[0]["note"] and "extraction too slow" in got[0]["note"], got
            calls = healer_calls(d)
            assert calls[0]["cycle"] == 1 and calls[0]["outcome"] == "refused", calls
            assert "div:has(div:has(div:has(" in calls[0]["reason"] and "nest 5 levels deep" in calls[0]["reason"]
            d.wait_for(lambda: "too slow on this page" in d.log(), what="the one line about it in the log")
        assert pinger.misses == [], pinger.misses
        assert pinger.answers >= 3
        assert production_versions(d) == [1]

        # kill -9 and a restart: the daemon answers at once and the heal goes on.
        d.kill9()
        restarted = time.time()
        d.start()
        asked_before = len(healer.requests)
        with Pinger(d) as pinger:
            d.ctl("heal", "stats", "--json", timeout=120)
            d.wait_for(lambda: len(healer.requests) >= asked_before + 2, timeout=90,
                       what="the healer to be asked again after the restart")
            # Refused as already tried: by the Doctor (the same candidate as a rejected one) or, had
            # it got that far, by the Deployer (the same answer's digest).
            d.wait_for(lambda: any(("not staged again" in (f["reason"] or "") or
                                    "not deployed again" in (f["reason"] or "")) for f in db_rows(
                d, "SELECT reason FROM fix_history WHERE source_name = 'stats' AND created_at > ?", (restarted,))),
                timeout=60, what="the same answer to be refused as already tried")
        assert pinger.misses == [], pinger.misses
        # The same answer was given again, and was not staged again; the bomb never was.
        assert len(slow_versions(d)) == 1, slow_versions(d)
        bodies = [json.loads(v["body"]) for v in db_rows(d, "SELECT body FROM parser_versions "
                                                             "WHERE source_name = 'stats'")]
        assert not any(b.get("items") == BOMB["items"] for b in bodies)
        assert production_versions(d) == [1]
        assert all(r["version"] == 1 for r in d.ctl_json("records", "stats"))
        assert_running(d)
    finally:
        healer.stop()


def test_a_crash_while_the_answer_is_tried_does_not_get_it_tried_again(site, daemon_factory, tmp_path):
    """`kill -9` while the slow answer is being tried (a long deadline here): after the restart
    the version is rejected as interrupted, the healer is asked again and gives the same answer,
    and it is not staged again."""
    def answer(req):
        return healed(BOMB if req["cycle"] == 1 else SLOW, "selectors updated")

    healer = HealerServer(answer)
    try:
        cfg = healer_config(healer.url, timeouts="[5, 5]", cycles=2, attempts=5)
        cfg = cfg.replace("[daemon]\n", '[daemon]\nextraction_timeout = "60s"\n', 1)
        d = daemon_factory(cfg).start()
        # A hundred rows: the slow answer needs ~30 s of lexbor, far more than the crash below waits.
        add_and_break(d, site, tmp_path, new_page=hostile_page(rows=SLOW_ROWS))
        d.wait_for(lambda: [v for v in slow_versions(d) if v["status"] == "staging"], timeout=90,
                   what="the slow candidate to be staged")
        with Pinger(d) as pinger:
            time.sleep(1.0)   # its trial is under way in the trial worker
        assert pinger.misses == [] and pinger.answers >= 1, pinger.misses   # the daemon answers meanwhile
        workers = worker_children(d.proc.pid)
        d.kill9()
        for pid in workers:   # a worker busy in one selector call notices its daemon gone only after it
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        asked_before = len(healer.requests)
        d.start()
        with Pinger(d) as pinger:
            assert [v["status"] for v in slow_versions(d)] == ["rejected"]
            assert "interrupted" in slow_versions(d)[0]["note"]
            d.wait_for(lambda: len(healer.requests) >= asked_before + 2, timeout=90,
                       what="the resumed heal to ask the healer again")
            d.wait_for(lambda: any("not staged again" in (f["reason"] or "") for f in db_rows(
                d, "SELECT reason FROM fix_history WHERE source_name = 'stats'")), timeout=60,
                what="the same answer to be refused as already tried")
        assert pinger.misses == [], pinger.misses
        assert len(slow_versions(d)) == 1 and production_versions(d) == [1]
        assert_running(d)
    finally:
        healer.stop()


def test_a_page_that_makes_a_persons_selector_too_slow_is_a_timeout_not_a_freeze(site, daemon_factory, tmp_path):
    """Production scrapes get the same deadline: the page turns hostile to a benign selector a
    person wrote; the scrape fails as TIMEOUT "extraction too slow", its worker is replaced, the
    daemon answers throughout, and a heal asked for by hand is declined, not attempted."""
    person = {"every": "1s", "items": "span div div div tr",
              "fields": {"name": {"css": "td:nth-child(1)"}, "score": {"css": "td:nth-child(2)", "type": "int"}}}
    rows = "".join(f"<tr><td>{n}</td><td>{s}</td></tr>" for n, s in ROWS)
    normal = f"<html><body><span><div><div><div><table>{rows}</table></div></div></div></span></body></html>"
    cfg = healer_config("", attempts=5).replace("[daemon]\n", '[daemon]\nextraction_timeout = "2s"\n', 1)
    d = daemon_factory(cfg).start()
    with Pinger(d) as pinger:
        site.page("/stats", normal)
        r = d.ctl("add", "stats", "--blueprint", write_blueprint(tmp_path / "stats.json", site.url("/stats"), person))
        assert r.returncode == 0, r.stderr
        assert d.ctl_json("run", "stats")["ok"] is True
        site.page("/stats", hostile_page(rows=SLOW_ROWS))
        out = d.ctl_json("run", "stats")
        assert out["ok"] is False and out["error_type"] == "TIMEOUT", out
        assert "extraction too slow" in out["error"]
        d.wait_for(lambda: "extraction worker" in d.log() and "was replaced" in d.log(),
                   what="the worker to be replaced")
        healed_by_hand = d.ctl_json("heal", "stats")
        assert healed_by_hand["outcome"] == "declined", healed_by_hand
        assert "too slow on this page" in healed_by_hand["reason"]
    assert pinger.misses == [], pinger.misses
    assert production_versions(d) == [1]
    assert_running(d)
