"""Paths another local user (nobody) can shape, against the real daemon running as root.

JSON Lines feeds under a world-writable directory: a directory replaced by a symlink, a feed
file pre-created by that user, a FIFO in its place. Each such feed is refused with one line
naming the path and the owner (its error in `healerctl feeds`, one alert); nothing is written
through them; the other feeds and the sources carry on, and a feed file the daemon made itself
is appended to again after a restart. The sources directory: a FIFO, a 1 GB file, links and
files of nobody's. The browser worker's directory, without a mount namespace.
"""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from healerd.adapters.browser import find_executable
from tests.support.daemon import FAST_CONFIG, DaemonProc
from tests.support.other_user import NOBODY, as_other_user, needs_root, shared_dir
from tests.support.sitepages import LISTING_BP, listing_v1, write_blueprint

pytestmark = needs_root


def _feed(name: str, path: str) -> str:
    return f'\n[[feeds]]\nname = "{name}"\nkind = "jsonl"\npath = "{path}"\n'


def _lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_feeds_refuse_paths_another_user_shaped_and_the_others_carry_on(site, daemon_factory, tmp_path):
    shared = shared_dir(tmp_path / "shared")              # like /tmp: anyone may add names
    root_only = tmp_path / "root-only"
    root_only.mkdir(mode=0o700)
    as_other_user(f"ln -s {root_only} {shared}/linked && touch {shared}/pre.jsonl && chmod 666 {shared}/pre.jsonl "
                  f"&& mkfifo -m 666 {shared}/fifo.jsonl")
    good = tmp_path / "good"
    cfg = (FAST_CONFIG + _feed("linked", f"{shared}/linked/{{source}}.jsonl") + _feed("pre", f"{shared}/pre.jsonl")
           + _feed("fifo", f"{shared}/fifo.jsonl") + _feed("good", f"{good}/{{source}}.jsonl")
           + _feed("mine", f"{shared}/mine/{{source}}.jsonl"))
    site.page("/stats", listing_v1())
    d = daemon_factory(cfg).start()
    bp = write_blueprint(tmp_path / "s.json", site.url("/stats"), {**LISTING_BP, "every": "1h"})
    assert d.ctl("add", "scores", "--blueprint", bp).returncode == 0
    bad = {"linked": f"{shared}/linked", "pre": f"{shared}/pre.jsonl", "fifo": f"{shared}/fifo.jsonl"}

    def settled():
        feeds = {f["name"]: f for f in d.ctl_json("feeds")}
        return feeds if all(feeds[n]["last_error"] for n in bad) and feeds["good"]["backlog"] == 0 \
            and feeds["mine"]["backlog"] == 0 else None

    feeds = d.wait_for(settled, timeout=60, what="the bad feeds refused, the good ones delivered")
    for name, path in bad.items():
        error = feeds[name]["last_error"]
        assert "\n" not in error and error.startswith("refusing the feed file ") and path in error, error
        assert "nobody (uid 65534)" in error, error
        assert feeds[name]["backlog"] >= 1
    assert os.listdir(root_only) == []                                  # nothing written through the link
    assert (tmp_path / "shared" / "pre.jsonl").read_text() == ""        # nor appended to their file
    assert stat.S_ISFIFO(os.lstat(tmp_path / "shared" / "fifo.jsonl").st_mode)
    written = {x["id"] for x in _lines(good / "scores.jsonl")}
    mine = tmp_path / "shared" / "mine"          # made by the daemon in the shared directory: its own
    assert written and {x["id"] for x in _lines(mine / "scores.jsonl")} == written
    assert os.stat(mine).st_uid == 0 and os.stat(mine / "scores.jsonl").st_uid == 0
    alerts = [a for a in d.alerts() if (a.get("details") or {}).get("cause") == "feed"]
    assert sorted(a["details"]["feed"] for a in alerts) == sorted(bad)   # one each
    assert d.state_of("scores") == "ACTIVE"
    # The files it made are its own: appended to again after a restart.
    d.stop()
    d.start()
    assert d.ctl("run", "scores").returncode == 0
    d.wait_for(lambda: len(_lines(good / "scores.jsonl")) > len(written)
               and len(_lines(mine / "scores.jsonl")) > len(written),
               timeout=60, what="one more line in each of the daemon's own feed files")
    assert [x["source"] for x in _lines(mine / "scores.jsonl")] == ["scores"] * len(_lines(mine / "scores.jsonl"))
    assert all(f["last_error"] is None for f in d.ctl_json("feeds") if f["name"] in ("good", "mine"))
    assert os.lstat(tmp_path / "shared" / "pre.jsonl").st_uid == NOBODY


def _peak_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))


def test_sources_dir_reads_regular_files_only_capped_and_never_waits(site, daemon_factory, tmp_path):
    """A FIFO, a 1 GB sparse file, nobody's link to a root-only file and nobody's broken file in
    sources_dir: the daemon gets ready, each is one line in `reload`'s answer (no key name of
    the root-only file, nor of nobody's), the good source is scraped, the memory stays small."""
    site.page("/stats", listing_v1())
    folder = shared_dir(tmp_path / "sources.d")
    secret = tmp_path / "root-only.toml"
    secret.write_text('api_token_of_root = "x"\n')
    os.chmod(secret, 0o600)
    write_blueprint(tmp_path / "good.json", site.url("/stats"), LISTING_BP)
    os.rename(tmp_path / "good.json", f"{folder}/good.json")
    with open(f"{folder}/huge.json", "wb") as fh:
        fh.truncate(1 << 30)
    as_other_user(f"cd {folder} && mkfifo -m 666 fifo.toml && ln -s {secret} stolen.toml "
                  f"&& printf 'url = \"http://x/\"\\nnobodys_key_name = 1\\n' > theirs.toml")
    d = daemon_factory(FAST_CONFIG.replace("[daemon]", f'[daemon]\nsources_dir = "{folder}"')).start()
    d.wait_for(lambda: " ready: " in d.log(), what="readiness with a FIFO in sources_dir")
    d.wait_for(lambda: d.ctl_json("status", "good")["state"] == "ACTIVE", what="the good source scraped")
    r = d.ctl("reload")
    assert r.returncode == 1 and "reloaded: added none; changed none; removed none" in r.stdout, r.stdout + r.stderr
    lines = {line.split(": ")[2]: line for line in r.stderr.splitlines()}
    assert sorted(lines) == ["fifo.toml", "huge.json", "stolen.toml", "theirs.toml"], r.stderr
    assert "FIFO (named pipe) owned by nobody (uid 65534)" in lines["fifo.toml"]
    assert "1,073,741,824 bytes, over the limit of 1,000,000 (sources_max_bytes)" in lines["huge.json"]
    assert "symbolic link owned by nobody (uid 65534)" in lines["stolen.toml"]
    assert "details withheld" in lines["theirs.toml"]
    for text in (r.stderr, d.log()):
        assert "api_token_of_root" not in text and "nobodys_key_name" not in text
    assert _peak_rss_kb(d.proc.pid) < 400_000       # the 1 GB file was never read
    assert ": ok" in d.ctl("run", "good").stdout      # scraping goes on
    assert [s["name"] for s in d.ctl_json("status")] == ["good"]


NO_MOUNT_NS = ("import ctypes, os, sys; ctypes.CDLL(None).prctl(24, 21, 0, 0, 0); "   # PR_CAPBSET_DROP CAP_SYS_ADMIN
               "os.execv(sys.argv[1], sys.argv[1:])")


class NoMountNamespaceDaemon(DaemonProc):
    """The daemon as root in a container without CAP_SYS_ADMIN: its browser worker gets no mount namespace."""

    def start(self, wait: float = 20.0):
        from tests.support import daemon as support_daemon

        real = support_daemon.bin_cmd
        support_daemon.bin_cmd = lambda name: ([sys.executable, "-c", NO_MOUNT_NS] + real(name) if name == "healerd"
                                               else real(name))
        try:
            return super().start(wait)
        finally:
            support_daemon.bin_cmd = real


@pytest.mark.skipif(find_executable() is None, reason="no Chromium here")
def test_the_browser_work_directory_race_changes_nothing_outside(site, tmp_path):
    """nobody plants links to a directory of root's at every /tmp name the old fallback would
    have used next: the daemon's browser source is scraped, nothing planted changes owner or
    mode, and after a clean stop the worker left no directory anywhere."""
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    start = os.getpid()
    planted = [f"/tmp/healerd-browser-{pid}" for pid in range(start, start + 600)
               if not os.path.lexists(f"/tmp/healerd-browser-{pid}")]
    as_other_user(f"for p in {' '.join(planted)}; do ln -s {victim} $p; done")
    before = (os.stat(victim).st_uid, os.stat(victim).st_mode)
    ours_before = {n for n in os.listdir("/tmp") if n.startswith("healerd-browser-")}
    site.page("/stats", listing_v1())
    d = NoMountNamespaceDaemon(tmp_path / "d")
    try:
        d.start()
        bp = write_blueprint(tmp_path / "b.json", site.url("/stats"), dict(LISTING_BP, fetch="browser",
                                                                          wait_for="tr"))
        r = d.ctl("add", "js", "--blueprint", bp)
        assert r.returncode == 0, r.stderr + d.log()[-3000:]
        assert d.ctl_json("status", "js")["state"] == "ACTIVE"
        made = {n for n in os.listdir("/tmp") if n.startswith("healerd-browser-")} - ours_before
        assert len(made) == 1 and f"/tmp/{made.pop()}" not in planted   # a fresh name, not a planted one
        assert d.stop() == 0
        assert [n for n in os.listdir("/tmp") if n.startswith("healerd-browser-")
                and n not in ours_before] == []
        assert os.listdir(d.state / "browser") == []
        assert (os.stat(victim).st_uid, os.stat(victim).st_mode) == before and os.listdir(victim) == []
        for link in planted:
            assert os.readlink(link) == str(victim) and os.lstat(link).st_uid == NOBODY
    finally:
        d.stop()
        for link in planted:
            if os.path.islink(link):
                os.unlink(link)
