"""Data out, end to end: the real daemon, a real site, a real webhook receiver, real files."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import threading

import pytest

from tests.support.daemon import FAST_CONFIG, bin_cmd
from tests.support.hookserver import Hook
from tests.support.sitepages import LISTING_BP, listing_v1, listing_v2, write_blueprint

PRICES_BP = {**LISTING_BP, "key": "name"}


@pytest.fixture
def hook():
    h = Hook()
    yield h
    h.stop()


def add(d, tmp_path, name, url, bp=LISTING_BP):
    r = d.ctl("add", name, "--blueprint", write_blueprint(tmp_path / f"{name}.json", url, bp))
    assert r.returncode == 0, r.stderr + d.log()[-3000:]


def test_records_follow_json_prints_a_scrape_made_after_it_started(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    d = daemon_factory().start()
    add(d, tmp_path, "stats", site.url("/stats"), {**LISTING_BP, "every": "1h"})
    follow = subprocess.Popen(bin_cmd("healerctl") + ["--socket", d.socket, "records", "stats", "--follow", "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=d.env)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(follow.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        # The scrape `add` made is older than the follower: only later ones are printed. The follower
        # may still be starting: scrape until it has printed one.
        site.page("/stats", listing_v1([("Ada", 99), ("Bob", 1)]))
        d.wait_for(lambda: lines or (follow.poll() is None and d.ctl("run", "stats").returncode == 0 and lines),
                   what="the follower's line")
    finally:
        follow.terminate()
        follow.wait(10)
    got = json.loads(lines[0])
    assert got["data"] == [{"name": "Ada", "score": 99}, {"name": "Bob", "score": 1}]
    assert set(got) >= {"scraped_at", "version", "data"} and got["version"] == 1


def test_a_price_change_is_one_changed_entry_and_a_healed_redesign_is_no_change(site, daemon_factory, tmp_path):
    rows = [("Ada", 31), ("Bob", 12), ("Cy", 7)]
    site.page("/stats", listing_v1(rows))
    out = tmp_path / "feeds"
    cfg = FAST_CONFIG + (f'\n[[feeds]]\nkind = "jsonl"\npath = "{out}/changed.jsonl"\nonly_changes = true\n'
                         f'sources = ["st*"]\n[[feeds]]\nkind = "jsonl"\npath = "{out}/none.jsonl"\n'
                         'sources = ["other*", "x?"]\n')
    d = daemon_factory(cfg).start()
    add(d, tmp_path, "stats", site.url("/stats"), {**PRICES_BP, "every": "1h"})
    d.wait_for(lambda: d.ctl_json("records", "stats"), what="the first scrape")
    site.page("/stats", listing_v1([("Ada", 31), ("Bob", 15), ("Cy", 7)]))
    assert d.ctl_json("run", "stats")["ok"] is True
    newest = d.ctl_json("changes", "stats")[0]
    assert newest["added"] == [] and newest["removed"] == []
    assert newest["changed"] == [{"key": "Bob", "before": {"score": 12}, "after": {"score": 15}}]
    assert set(newest) >= {"scraped_at", "version"}
    before = len(d.ctl_json("changes", "stats", "--limit", "100"))
    # The site is redesigned with the same data: healed, and the healed scrape changes nothing.
    site.page("/stats", listing_v2([("Ada", 31), ("Bob", 15), ("Cy", 7)]))
    d.ctl("run", "stats")
    d.wait_for(lambda: d.ctl_json("status", "stats")["version"] > 1, timeout=60, what="the heal")
    d.wait_for(lambda: d.ctl_json("records", "stats")[0]["version"] > 1, what="a scrape by the healed version")
    assert len(d.ctl_json("changes", "stats", "--limit", "100")) == before
    every = d.ctl_json("changes", "stats", "--all", "--limit", "1")
    assert every[0]["version"] > 1 and every[0]["added"] == every[0]["removed"] == every[0]["changed"] == []
    text = d.ctl("changes", "stats")
    assert text.returncode == 0 and '~ "Bob": score: 12 -> 15' in text.stdout
    # Feeds: with only_changes, the first scrape (all added) and the price change, not the healed scrape.
    d.wait_for(lambda: all(f["backlog"] == 0 for f in d.ctl_json("feeds")), what="the feeds caught up")
    lines = [json.loads(x) for x in (out / "changed.jsonl").read_text().splitlines()]
    assert [len(x["changes"]["added"]) for x in lines] == [3, 0]
    assert lines[1]["changes"]["changed"] == newest["changed"] and lines[1]["records"][1] == {"name": "Bob", "score": 15}
    assert not (out / "none.jsonl").exists(), "a feed whose globs match no source writes nothing"


def _webhook_config(url: str, extra: str = "") -> str:
    return FAST_CONFIG + f'\n[[feeds]]\nkind = "webhook"\nname = "hook"\nurl = "{url}"\nretry_max = "1s"\n' \
        f'headers = {{ Authorization = "Bearer feed-secret-123456" }}\n{extra}'


def test_webhook_outage_and_kill9_lose_nothing_and_keep_order(site, daemon_factory, tmp_path, hook):
    for n in ("a", "b"):
        site.page(f"/{n}", lambda n=n: listing_v1([("Ada", len(site.hits))]).encode())
    hook.set(503)
    d = daemon_factory(_webhook_config(hook.url())).start()
    add(d, tmp_path, "a", site.url("/a"))
    add(d, tmp_path, "b", site.url("/b"))
    d.wait_for(lambda: hook.refused >= 3, what="the webhook refusing")
    d.wait_for(lambda: len(d.ctl_json("records", "a", "--limit", "1000")) >= 4, what="scrapes meanwhile")
    feeds = d.ctl_json("feeds")
    assert feeds[0]["name"] == "hook" and feeds[0]["backlog"] >= 4
    assert "HTTP 503" in feeds[0]["last_error"] and feeds[0]["failing_since"]
    status = d.ctl("status")
    assert "hook" in status.stdout and "HTTP 503" in status.stdout
    listed = d.ctl("feeds")
    assert listed.returncode == 0 and listed.stdout.split()[:2] == ["FEED", "KIND"] and "HTTP 503" in listed.stdout
    assert "feed-secret-123456" not in listed.stdout + json.dumps(feeds)
    d.kill9()
    d.start()
    d.wait_for(lambda: hook.refused >= 6, what="the webhook refused after the restart")
    hook.set(200)
    for n in ("a", "b"):   # paused, then scraped once: a run waits for any scrape of it still in flight
        assert d.ctl("pause", n).returncode == 0 and d.ctl("run", n).returncode == 0
    d.wait_for(lambda: d.ctl_json("feeds")[0]["backlog"] == 0 and delivered_ids(hook) == stored_ids(d),
               what="the backlog delivered")
    d.stop()
    stored = {r["id"]: r for r in d_records(d)}
    assert len(stored) >= 8
    posts = hook.received()
    for n in ("a", "b"):
        ids = [p["id"] for p in posts if p["source"] == n]
        assert ids == sorted(ids), "in order per source"
        assert set(ids) == {i for i, r in stored.items() if r["source"] == n}, f"every scrape of {n}"
    for p in posts:
        assert p["records"] == stored[p["id"]]["data"]
    print(f"{len(posts)} delivered, {len(posts) - len(stored)} duplicate(s)")
    first = hook.received()[0]
    assert set(first) >= {"source", "scraped_at", "version", "records", "changes"}
    assert hook.headers[0]["authorization"] == "Bearer feed-secret-123456"
    outages = [a for a in d.alerts() if a["details"].get("cause") == "feed"]
    # One alert for the outage (the restart during it raises none), one when it ends.
    assert [a["event"] for a in outages] == ["SYSTEMIC_HALT", "RECOVERED"], outages
    assert "feed-secret-123456" not in d.log() and "feed-secret-123456" not in json.dumps(d.alerts())


def d_records(d, name=None):
    from tests.support.daemon import db_rows

    return [{"id": r["id"], "source": r["source_name"], "scraped_at": r["scraped_at"], "data": json.loads(r["data"])}
            for r in db_rows(d, "SELECT id, source_name, scraped_at, data FROM records ORDER BY id DESC")
            if name is None or r["source_name"] == name]


def stored_ids(d):
    return {r["id"] for r in d_records(d)}


def delivered_ids(hook):
    return {p["id"] for p in hook.received()}


def test_jsonl_feed_one_line_per_scrape_private_and_rotated(site, daemon_factory, tmp_path, hook):
    out = tmp_path / "feeds"
    hook.delay = 60   # a webhook that never answers in time holds up its own feed only
    cfg = FAST_CONFIG + f'\n[[feeds]]\nkind = "jsonl"\npath = "{out}/{{source}}.jsonl"\nmax_bytes = 2048\nkeep = 3\n' \
        f'[[feeds]]\nkind = "webhook"\nurl = "{hook.url()}"\ntimeout = "20s"\n'
    site.page("/stats", lambda: listing_v1([("Ada", len(site.hits)), ("Bob", 2)]).encode())
    d = daemon_factory(cfg).start()
    add(d, tmp_path, "stats", site.url("/stats"))
    path = out / "stats.jsonl"
    d.wait_for(lambda: (out / "stats.jsonl.2").exists(), timeout=60, what="two rotations")
    assert d.ctl("pause", "stats").returncode == 0 and d.ctl("run", "stats").returncode == 0
    d.wait_for(lambda: d.ctl_json("feeds")[0]["backlog"] == 0, what="the backlog written")
    assert hook.headers and not hook.received(), "the webhook was tried, and is still waiting for its answer"
    d.stop()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    lines = []
    for p in (out / "stats.jsonl.3", out / "stats.jsonl.2", out / "stats.jsonl.1", path):
        if p.exists():
            assert p.stat().st_size <= 2048
            lines += [json.loads(line) for line in p.read_text().splitlines()]
    assert all(x["source"] == "stats" and x["records"][1] == {"name": "Bob", "score": 2} for x in lines)
    ids = [x["id"] for x in lines]
    assert ids == sorted(set(ids)), "one line per scrape, in order"
    stored = [r["id"] for r in d_records(d, "stats")]
    assert ids[-3:] == stored[:3][::-1], "the newest scrapes are the file's last lines"


def feeds_processes(parent: int | None = None) -> list[int]:
    """Pids of feeds processes (of `parent` when given)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read()
            with open(f"/proc/{pid}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if b"healerd.actors.feeds_process" in cmd and (parent is None or ppid == parent):
            found.append(int(pid))
    return found


def test_the_feeds_process_is_restarted_and_never_outlives_the_daemon(site, daemon_factory, tmp_path):
    out = tmp_path / "feeds"
    cfg = FAST_CONFIG + f'\n[[feeds]]\nkind = "jsonl"\nname = "files"\npath = "{out}/all.jsonl"\n'
    site.page("/stats", listing_v1())
    d = daemon_factory(cfg).start()
    add(d, tmp_path, "stats", site.url("/stats"))
    first = d.wait_for(lambda: feeds_processes(d.proc.pid), what="the feeds process")[0]
    os.kill(first, signal.SIGKILL)
    d.wait_for(lambda: "the feeds process exited" in d.log(), what="the death noticed")
    second = d.wait_for(lambda: [p for p in feeds_processes(d.proc.pid) if p != first], what="a new feeds process")[0]
    def count() -> int:
        return len((out / "all.jsonl").read_text().splitlines()) if (out / "all.jsonl").exists() else 0

    lines = count()
    d.wait_for(lambda: count() > lines + 1, what="delivery again")
    # A stop signal to the whole service is the daemon's to handle: the feeds process ignores it.
    os.kill(second, signal.SIGTERM)
    assert d.ctl("run", "stats").returncode == 0
    assert second in feeds_processes(d.proc.pid) and d.log().count("the feeds process exited") == 1
    d.kill9()
    d.wait_for(lambda: second not in feeds_processes(), what="the orphaned feeds process to exit")


def test_changes_never_reach_the_terminal_raw(site, daemon_factory, tmp_path):
    from tests.support.terminal_kit import PAYLOAD, assert_nothing_raw, on_pty

    site.page("/stats", listing_v1([(f"Ada {PAYLOAD}", 31), ("Bob", 12)]))
    d = daemon_factory().start()
    add(d, tmp_path, "stats", site.url("/stats"), {**PRICES_BP, "every": "1h"})
    d.wait_for(lambda: d.ctl_json("records", "stats"), what="the first scrape")
    site.page("/stats", listing_v1([(f"Ada {PAYLOAD}", 32), ("Bob", 12)]))
    assert d.ctl_json("run", "stats")["ok"] is True
    text = on_pty(d, "changes", "stats")
    assert_nothing_raw(text, "changes")
    assert b"score: 31 -> 32" in text and b"\\u001b]0;pwned" in text
    as_json = on_pty(d, "changes", "stats", "--json")
    assert_nothing_raw(as_json, "changes --json")
    newest = json.loads(as_json.replace(b"\r\n", b"\n"))[0]["changed"][0]
    assert newest["key"].startswith("Ada \x1b]0;pwned\x07") and newest["after"] == {"score": 32}
