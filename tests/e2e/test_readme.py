"""Every command in the README is exercised by a test.

README.md's fenced code blocks are parsed (sh, console, toml) and every command line
in them is run here, in README order, for real: `healerd run` as a background
process exactly as written (so the default socket `./healerd-state/healerd.sock` is
what healerctl finds, as the README says), the README's blueprint served by a local
site, and each `healerctl` line with its exit code and output checked. Between two
README lines the test changes the site (a redesign, a page whose data is gone) so that
every line has something true to show. The only substitution is the site's address
for the README's http://127.0.0.1:8080.

Lines that cannot run here (pip into the shared interpreter, the whole test suite,
sudo/systemd) are listed in NOT_RUN with the reason and a real check instead. A README
command line that is in neither table fails the test, so a new README example cannot
go unexercised; a table entry whose line left the README fails it too.
"""

from __future__ import annotations

import grp
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import textwrap
import threading
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import click

from healerd.config import load as load_config
from healerd.control.client import call
from healerd.core.blueprint import load_file
from tests.support.daemon import FAST_CONFIG, bin_cmd
from tests.support.paths import ROOT
from tests.support.site import Site

README = ROOT / "README.md"
README_HOST = "http://127.0.0.1:8080"
COMMAND_LANGS = ("sh", "console")
WAIT_S = 60.0  # a safety net for a wedged daemon, not a speed requirement


# -- parsing the README ---------------------------------------------------------------------


@dataclass
class Block:
    lang: str
    body: str
    line: int


@dataclass
class Command:
    argv: list[str]
    background: bool
    line: int
    output: list[str] = field(default_factory=list)  # console blocks: the lines shown after `$ cmd`

    @property
    def key(self) -> str:
        return shlex.join(self.argv) + (" &" if self.background else "")


def readme_blocks(text: str) -> list[Block]:
    out = []
    for m in re.finditer(r"^([ \t]*)```(\w*)[ \t]*\n(.*?)^\1```[ \t]*$", text, re.M | re.S):
        out.append(Block(m.group(2), textwrap.dedent(m.group(3)), text.count("\n", 0, m.start()) + 2))
    return out


def split_commands(line: str, lineno: int) -> list[Command]:
    """One shell line -> its simple commands (split on && and ;, a trailing & = background)."""
    lex = shlex.shlex(line, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    lex.commenters = "#"
    cmds, cur = [], []
    for tok in lex:
        if tok in ("&&", ";", "&"):
            if cur:
                cmds.append(Command(cur, tok == "&", lineno))
            cur = []
        elif tok in ("|", "||", ">", ">>", "<", "(", ")"):
            raise AssertionError(f"README line {lineno}: `{line}` uses {tok!r}; this test only knows && ; and &")
        else:
            cur.append(tok)
    if cur:
        cmds.append(Command(cur, False, lineno))
    return cmds


def readme_commands(text: str) -> list[Command]:
    cmds: list[Command] = []
    for block in readme_blocks(text):
        if block.lang not in COMMAND_LANGS:
            continue
        lines = block.body.splitlines()
        for i, raw in enumerate(lines):
            lineno = block.line + i
            if block.lang == "console":
                if raw.startswith("$ "):
                    cmds.extend(split_commands(raw[2:], lineno))
                elif raw.strip():
                    assert cmds, f"README line {lineno}: console output before any `$ ` command"
                    cmds[-1].output.append(raw)
            elif raw.strip():
                assert not raw.rstrip().endswith("\\"), f"README line {lineno}: continuation lines are not supported"
                cmds.extend(split_commands(raw, lineno))
    return cmds


def test_readme_parser_understands_the_shell_used_there():
    assert [c.key for c in split_commands('a x && b "y z"   # c && d', 1)] == ["a x", "b 'y z'"]
    assert [c.key for c in split_commands("healerd run --state-dir ./s &", 1)] == ["healerd run --state-dir ./s &"]
    text = "x\n```console\n$ healerctl add a\nhealerctl: no\n```\n  ```sh\n  p q\n  ```\n"
    cmds = readme_commands(text)
    assert [(c.key, c.output) for c in cmds] == [("healerctl add a", ["healerctl: no"]), ("p q", [])]


# -- the README's toml blocks -----------------------------------------------------------------


def test_readme_toml_blocks_are_a_valid_blueprint_or_config(tmp_path):
    blocks = [b for b in readme_blocks(README.read_text()) if b.lang == "toml"]
    assert blocks
    kinds = []
    for i, b in enumerate(blocks):
        path = tmp_path / f"block{i}.toml"
        path.write_text(b.body)
        tomllib.loads(b.body)
        if "[fields." in b.body:
            bp = load_file(str(path), require_url=True)
            assert bp.fields, b.body
            kinds.append("blueprint")
        else:
            load_config(str(path))  # unknown keys or bad values raise
            kinds.append("config")
    assert kinds.count("blueprint") == 1, kinds


# -- the run ------------------------------------------------------------------------------------


def stats_page(rows, layout: str = "v1") -> str:
    """A page for the README's blueprint (table.stats tr.player, td.name with a link, td.score)."""
    if layout == "v1":
        body = "".join(f'<tr class="player"><td class="name"><a href="/p/{n.lower()}">{n}</a></td>'
                       f'<td class="score">{s}</td></tr>' for n, s in rows)
        return (f'<html><head><title>Stats</title></head><body><table class="stats">'
                f'<tr><th>Name</th><th>Score</th></tr>{body}</table></body></html>')
    if layout == "redesign":  # classes renamed, the table wrapped: healable
        body = "".join(f'<tr class="row-player"><td class="player-name"><a href="/p/{n.lower()}">{n}</a></td>'
                       f'<td class="pts">{s}</td></tr>' for n, s in rows)
        return (f'<html><head><title>Stats</title></head><body><div class="wrap"><table class="league">'
                f'<tr><th>Name</th><th>Score</th></tr>{body}</table></div></body></html>')
    # the table is gone: nothing to heal
    return ('<html><head><title>Stats</title></head><body><div class="wrap"><p class="notice">The season table '
            'is being recalculated. Check back later.</p></div></body></html>')


ROWS = [("Ada", 31), ("Grace", 27), ("Linus", 24), ("Margaret", 22), ("Ken", 19)]


class Run:
    """The state a README walk-through builds up: a work dir, the site, the daemon."""

    def __init__(self, tmp: Path, site: Site):
        self.tmp = tmp  # short: Unix socket paths live under it (the demo's temp dir included)
        self.work = tmp / "work"
        self.work.mkdir()
        self.site = site
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("HEALERD_SOCKET", "HEALERD_STATE_DIR", "STATE_DIRECTORY", "RUNTIME_DIRECTORY",
                                 "LOGS_DIRECTORY", "CODE_HEALER_URL", "CODE_HEALER_TOKEN", "NOTIFY_SOCKET")}
        self.env["NO_COLOR"] = "1"
        self.daemon: subprocess.Popen | None = None
        self.daemon_log = self.work / "healerd.log"
        self.socket = self.work / "healerd-state" / "healerd.sock"
        self.done: list[str] = []

    # running README lines
    def argv(self, cmd: Command) -> list[str]:
        args = [a.replace(README_HOST, f"http://127.0.0.1:{self.site.port}") for a in cmd.argv]
        assert args[0] in ("healerd", "healerctl"), args
        return bin_cmd(args[0]) + args[1:]

    def run(self, cmd: Command, expect: int = 0, timeout: float = 300) -> subprocess.CompletedProcess:
        r = subprocess.run(self.argv(cmd), cwd=self.work, env=self.env, capture_output=True, text=True,
                           timeout=timeout)
        assert r.returncode == expect, (f"README line {cmd.line}: `{cmd.key}` exited {r.returncode}, expected "
                                        f"{expect}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}\n{self.log()[-3000:]}")
        return r

    # the test's own hands (not README lines): talking to the daemon directly
    def call(self, op: str, **args):
        return call(str(self.socket), op, args, timeout=120)

    def wait_for(self, what: str, predicate: Callable, nudge: Callable | None = None):
        deadline = time.time() + WAIT_S
        last = None
        while time.time() < deadline:
            last = predicate()
            if last:
                return last
            if nudge:
                nudge()
            time.sleep(0.1)
        raise AssertionError(f"gave up waiting for {what}; last {last!r}\n{self.log()[-4000:]}")

    def status(self) -> dict:
        return self.call("status", name="scores")

    def log(self) -> str:
        return self.daemon_log.read_text(errors="replace") if self.daemon_log.exists() else ""

    def stop(self) -> int | None:
        if self.daemon is None or self.daemon.poll() is not None:
            return None if self.daemon is None else self.daemon.returncode
        self.daemon.send_signal(signal.SIGTERM)
        try:
            return self.daemon.wait(30)
        except subprocess.TimeoutExpired:
            self.daemon.kill()
            return self.daemon.wait()


HANDLERS: dict[str, Callable[[Run, Command], None]] = {}


def handles(key: str):
    def deco(fn):
        assert key not in HANDLERS, key
        HANDLERS[key] = fn
        return fn
    return deco


@handles("healerd demo")
def _demo(run: Run, cmd: Command) -> None:
    # Verbatim; its temp state dir goes under this test's tmp dir instead of /tmp.
    tmpdir = run.tmp / "demo-tmp"
    tmpdir.mkdir()
    r = subprocess.run(run.argv(cmd), cwd=run.work, env={**run.env, "TMPDIR": str(tmpdir)}, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, f"`healerd demo` exited {r.returncode}\n{r.stdout}\n{r.stderr}"
    assert "ALERT HEALED products" in r.stdout and "ALERT QUARANTINED stats" in r.stdout, r.stdout
    assert "Done: 3 sources" in r.stdout, r.stdout
    assert r.stdout.startswith(f"healerd demo: state in {tmpdir}/healerd-demo-"), r.stdout[:200]


@handles("healerctl add shop --blueprint bad.toml")
def _add_bad(run: Run, cmd: Command) -> None:
    # The blueprint the README's error message is about: a selector selectolax rejects.
    (run.work / "bad.toml").write_text(f'url = "{run.site.url("/shop")}"\n[fields.name]\ncss = "h2.title"\n'
                                       '[fields.price]\ncss = "td..price"\ntype = "float"\n')
    # Checked by healerctl itself: no daemon is running yet at this point of the README.
    assert not run.socket.exists()
    r = run.run(cmd, expect=1)
    assert r.stdout == ""
    shown = cmd.output
    assert len(shown) == 1, shown
    pattern = re.escape(shown[0]).replace(re.escape("(...)"), r"\(.+\)")
    assert re.fullmatch(pattern, r.stderr.strip()), f"README shows {shown[0]!r}, healerctl said {r.stderr.strip()!r}"


@handles("healerd run --config healerd.toml --state-dir ./healerd-state &")
def _daemon(run: Run, cmd: Command) -> None:
    assert cmd.background
    group = grp.getgrgid(os.getgid()).gr_name
    # A quick test configuration; review_changes = 1 so that a second automatic change of the
    # parser waits for `healerctl approve`, as the README's approve line needs.
    config = FAST_CONFIG.replace("[doctor]\n", "[doctor]\nreview_changes = 1\n").replace(
        "[daemon]\n", f'[daemon]\nsocket_group = "{group}"\n')
    (run.work / "healerd.toml").write_text(config)
    run.site.page("/stats", stats_page(ROWS))
    with open(run.daemon_log, "ab") as log:
        run.daemon = subprocess.Popen(run.argv(cmd), cwd=run.work, env=run.env, stdout=log, stderr=subprocess.STDOUT)

    def up():
        if run.daemon.poll() is not None:
            raise AssertionError(f"healerd run exited {run.daemon.returncode}:\n{run.log()}")
        try:
            return run.call("ping")
        except Exception:
            return None

    run.wait_for("the daemon to answer on ./healerd-state/healerd.sock", up)
    st = os.stat(run.socket)  # where the README says the socket is by default
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == os.getgid()
    assert (run.work / "healerd-state" / "healerd.db").exists()


@handles(f"healerctl add scores --blueprint stats.toml --url {README_HOST}/stats")
def _add(run: Run, cmd: Command) -> None:
    blocks = [b for b in readme_blocks(README.read_text()) if b.lang == "toml" and "[fields." in b.body]
    body = blocks[0].body
    assert f'"{README_HOST}/stats"' in body
    (run.work / "stats.toml").write_text(body.replace(README_HOST, f"http://127.0.0.1:{run.site.port}"))
    r = run.run(cmd)
    assert r.stdout.startswith(f"added scores: {run.site.url('/stats')}, every 15m, state ACTIVE"), r.stdout
    run.wait_for("the first scrape", lambda: run.call("records", name="scores", limit=1))


@handles("healerctl status")
def _status_all(run: Run, cmd: Command) -> None:
    r = run.run(cmd)
    assert re.search(r"^scores\s.*ACTIVE", r.stdout, re.M), r.stdout
    assert "1 source" in r.stdout, r.stdout  # the summary footer


@handles("healerctl status scores")
def _status_one(run: Run, cmd: Command) -> None:
    r = run.run(cmd)
    assert re.search(r"state:\s+ACTIVE", r.stdout) and re.search(r"version:\s+1\b", r.stdout), r.stdout
    assert "NEW -> ACTIVE" in r.stdout, r.stdout  # the lifecycle history


@handles("healerctl run scores")
def _run(run: Run, cmd: Command) -> None:
    r = run.run(cmd)
    assert re.match(r"scores: ok, 5 record\(s\), 5 item\(s\) \(version 1, ", r.stdout), r.stdout


@handles("healerctl records scores --limit 5")
def _records(run: Run, cmd: Command) -> None:
    r = run.run(cmd)
    for text in ("Ada", "/p/ada", "31", "Ken", "/p/ken", "19"):
        assert text in r.stdout, r.stdout
    data = run.call("records", name="scores", limit=5)
    assert 1 <= len(data) <= 5 and data[0]["data"][0] == {"name": "Ada", "profile": "/p/ada", "score": 31}


@handles("healerctl history scores")
def _history(run: Run, cmd: Command) -> None:
    r = run.run(cmd)
    assert re.search(r"version\s+v1 \(human\)\s+production", r.stdout), r.stdout
    # Then the site is redesigned; a scrape (the scheduler's, or this nudge) breaks and the Doctor heals it.
    run.site.page("/stats", stats_page(ROWS, "redesign"))
    assert run.call("run", name="scores")["ok"] is False
    run.wait_for("the heal to be promoted", lambda: (s := run.status())["state"] == "ACTIVE" and s["version"] == 2)


@handles("healerctl diff scores")
def _diff(run: Run, cmd: Command) -> None:
    r = run.run(cmd)
    lines = r.stdout.splitlines()
    assert "-table.stats > tbody > tr.player > td.score: 31" in lines, r.stdout
    assert "+div.wrap > table.league > tbody > tr.row-player > td.pts: 31" in lines, r.stdout


@handles("healerctl heal scores")
def _heal(run: Run, cmd: Command) -> None:
    r = run.run(cmd, expect=1)   # nothing was promoted: exit 1
    assert r.stdout.startswith("scores: unchanged; state ACTIVE"), r.stdout
    assert "nothing to heal" in r.stdout, r.stdout


@handles("healerctl rollback scores")
def _rollback(run: Run, cmd: Command) -> None:
    # A rollback is tried on the live page first: version 1 does not read the redesign, so it is
    # refused (exit 1) and version 2 stays; once the site is back on its old layout it goes through.
    refused = run.run(cmd, expect=1)
    assert "version 1 fails the current page" in refused.stderr and "--force" in refused.stderr, refused.stderr
    assert run.status()["version"] == 2
    run.site.page("/stats", stats_page(ROWS))
    r = run.run(cmd)
    assert r.stdout.strip() == "scores: version 1 is in production (was 2)", r.stdout
    # The redesign comes back: version 1 breaks on it again; the known fix comes back as version 3,
    # but the parser already changed automatically once (review_changes = 1): it waits for a person.
    run.site.page("/stats", stats_page(ROWS, "redesign"))
    assert run.call("run", name="scores")["ok"] is False
    def staged():
        return [e for e in run.call("history", name="scores") if e["kind"] == "version" and e["status"] == "staging"]

    got = run.wait_for("a staged candidate", staged)
    assert [e["version"] for e in got] == [3], got


@handles("healerctl stats --window 7d")
def _stats(run: Run, cmd: Command) -> None:
    r = run.run(cmd)
    assert r.stdout.startswith("fleet metrics over the last 7d"), r.stdout
    for line in ("fix success rate", "false positive rate", "quarantine rate", "median recovery", "p90 recovery",
                 "heals by rung:", "external healer calls:"):
        assert line in r.stdout, r.stdout
    assert ">= 80.0 %" in r.stdout and "< 5.0 %" in r.stdout and "< 10.0 %" in r.stdout, r.stdout
    got = run.call("stats", window_s=7 * 86400)
    assert got["window_s"] == 7 * 86400 and got["fixes_promoted"] >= 1 and got["heals_by_rung"]["builtin"] >= 1


@handles("healerctl approve scores 3")
def _approve(run: Run, cmd: Command) -> None:
    r = run.run(cmd)
    assert r.stdout.strip() == "scores: version 3 approved and in production", r.stdout
    run.wait_for("version 3 to scrape", lambda: (s := run.status())["state"] == "ACTIVE" and s["version"] == 3)
    # Then the table disappears from the page: nothing to heal, so the source ends up quarantined.
    run.site.page("/stats", stats_page(ROWS, "gone"))
    run.call("run", name="scores")
    nudged = [time.time()]

    def nudge():  # should the Doctor not come back by itself soon, run it (each run is one attempt)
        if time.time() - nudged[0] > 5 and run.status()["state"] == "DEGRADED":
            run.call("heal", name="scores")
            nudged[0] = time.time()

    run.wait_for("quarantine", lambda: run.status()["state"] == "QUARANTINED", nudge)


@handles("healerctl unquarantine scores --reason 'site fixed'")
def _unquarantine(run: Run, cmd: Command) -> None:
    run.site.page("/stats", stats_page(ROWS, "redesign"))  # the site is fixed
    r = run.run(cmd)
    assert r.stdout.startswith("scores: now DEGRADED with a fresh attempt budget"), r.stdout


@handles("healerctl alerts --follow")
def _alerts_follow(run: Run, cmd: Command) -> None:
    p = subprocess.Popen(run.argv(cmd), cwd=run.work, env=run.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    events: list[str] = []
    done = threading.Event()

    def pump():
        for line in p.stdout:
            parts = line.split()
            events.append(parts[3] if len(parts) > 3 else line)
            if "UNQUARANTINED" in events and events[-1] == "RECOVERED" and events.index("UNQUARANTINED") < len(events) - 1:
                done.set()

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    try:
        assert done.wait(WAIT_S), f"alerts --follow never showed the recovery after unquarantine: {events}"
        assert p.poll() is None, "alerts --follow exited by itself"
    finally:
        p.send_signal(signal.SIGINT)  # Ctrl-C
        code = p.wait(30)
        t.join(10)
    assert code == 0, p.stderr.read()
    p.stderr.close()
    expected = ["DEGRADED", "HEALED", "RECOVERED", "DEGRADED", "FLAGGED_FOR_REVIEW", "RECOVERED", "DEGRADED",
                "QUARANTINED", "UNQUARANTINED", "RECOVERED"]
    it = iter(events)
    assert all(e in it for e in expected), f"alert sequence {events} does not contain {expected} in order"


@handles("healerctl update scores --blueprint stats.toml")
def _update(run: Run, cmd: Command) -> None:
    # The site went back to its first layout; the person puts the first blueprint back.
    run.site.page("/stats", stats_page(ROWS))
    before = run.status()["version"]
    r = run.run(cmd)
    assert f"blueprint promoted as version {before + 1} (human)" in r.stdout, r.stdout
    assert re.search(r"scores: ok, 5 record\(s\)", r.stdout), r.stdout
    st = run.status()
    assert st["version"] == before + 1 and st["state"] == "ACTIVE" and st["fix_attempts_24h"] == 0
    assert st["url"] == run.site.url("/stats")


@handles("healerctl pause scores")
def _pause(run: Run, cmd: Command) -> None:
    r = run.run(cmd)
    assert r.stdout.strip(), "pause printed nothing"
    assert run.status()["paused"] is True


@handles("healerctl resume scores")
def _resume(run: Run, cmd: Command) -> None:
    assert run.done[-1] == "healerctl pause scores", "`pause && resume`: resume runs only after pause succeeded"
    run.run(cmd)
    assert run.status()["paused"] is False


@handles("healerctl remove scores")
def _remove(run: Run, cmd: Command) -> None:
    run.run(cmd)
    assert run.call("status")["sources"] == []


# -- lines that cannot run here: why, and what is checked instead -----------------------------------


def _check_pip_install(run: Run, cmd: Command) -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["build-system"]["build-backend"] == "setuptools.build_meta"
    from healerd.cli.healerctl import cli
    from healerd.cli.healerd_cmd import main

    assert meta["project"]["scripts"] == {"healerd": "healerd.cli.healerd_cmd:main",
                                          "healerctl": "healerd.cli.healerctl:main"}
    assert isinstance(main, click.Group) and isinstance(cli, click.Group)
    # the console scripts this test runs are the installed ones
    assert Path(bin_cmd("healerd")[0]).name == "healerd" and Path(bin_cmd("healerctl")[0]).name == "healerctl"


def _check_pip_install_test(run: Run, cmd: Command) -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extra = {re.split(r"[<>=!~ ;]", d, maxsplit=1)[0] for d in meta["project"]["optional-dependencies"]["test"]}
    assert {"pytest", "build"} <= extra, extra
    import importlib.util

    assert importlib.util.find_spec("build") is not None  # the extra is what this environment runs on


def _check_pip_install_browser(run: Run, cmd: Command) -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = meta["project"]["optional-dependencies"]
    names = {name: {re.split(r"[<>=!~ ;]", d, maxsplit=1)[0] for d in extras[name]} for name in ("browser", "test")}
    assert "playwright" in names["browser"], names
    assert names["browser"] <= names["test"], names   # the tests run the browser, in CI too
    import importlib.util

    assert importlib.util.find_spec("playwright") is not None


def _check_apt_chromium(run: Run, cmd: Command) -> None:
    from healerd.adapters.browser import find_executable

    assert cmd.argv[-1] == "chromium"
    assert find_executable("") is not None   # what the daemon looks for on PATH is installed here


def _check_pytest(run: Run, cmd: Command) -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["tool"]["pytest"]["ini_options"]["testpaths"] == ["tests"]
    assert (ROOT / "tests" / "conftest.py").is_file()


def _check_install_script(run: Run, cmd: Command) -> None:
    # tests/project/test_systemd_unit.py runs the script into a scratch PREFIX and DESTDIR.
    script = (ROOT / cmd.argv[-1]).read_text()
    assert cmd.argv[-1] == "contrib/install.sh" and 'PREFIX="${PREFIX:-/opt/healerd}"' in script
    for part in ("contrib/systemd/healerd.service", "contrib/systemd/healerd.sysusers", "contrib/healerd.toml",
                 "/etc/sysusers.d/healerd.conf", "systemd-sysusers", "systemctl daemon-reload"):
        assert part in script, part
    _check_install_unit(run, Command(["install", "contrib/systemd/healerd.service", "/x"], False, cmd.line))
    _check_install_sysusers(run, Command(["install", "contrib/systemd/healerd.sysusers", "/x"], False, cmd.line))
    _check_sysusers(run, cmd)
    _check_etc_config(run, cmd)


def _check_install_unit(run: Run, cmd: Command) -> None:
    src = ROOT / cmd.argv[-2]
    assert src == ROOT / "contrib/systemd/healerd.service" and src.is_file()
    unit = src.read_text()
    assert "ExecStart=/opt/healerd/bin/healerd run --config %E/healerd/healerd.toml" in unit
    assert re.search(r"^\[Install\]\nWantedBy=multi-user\.target$", unit, re.M)  # what `enable` needs
    assert "ExecReload=/bin/kill -HUP $MAINPID" in unit  # `systemctl reload healerd`


def _check_install_sysusers(run: Run, cmd: Command) -> None:
    src = ROOT / cmd.argv[-2]
    assert src == ROOT / "contrib/systemd/healerd.sysusers" and src.is_file()
    assert re.search(r"^g healerctl -$", src.read_text(), re.M)


def _check_sysusers(run: Run, cmd: Command) -> None:
    if shutil.which("systemd-sysusers") is None:
        return
    root = run.tmp / "sysroot"
    (root / "etc").mkdir(parents=True)
    r = subprocess.run(["systemd-sysusers", "--dry-run", f"--root={root}", str(ROOT / "contrib/systemd/healerd.sysusers")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "Creating group 'healerctl'" in r.stdout + r.stderr, r.stdout + r.stderr


def _check_etc_config(run: Run, cmd: Command) -> None:
    # The config the README installs (contrib/healerd.toml), with the README's advice applied, is accepted.
    path = run.tmp / "etc-healerd.toml"
    text = (ROOT / "contrib" / "healerd.toml").read_text()
    assert '# socket_group = "healerctl"' in text
    path.write_text(text.replace('# socket_group = "healerctl"', 'socket_group = "healerctl"'))
    assert load_config(str(path)).daemon.socket_group == "healerctl"


def _check_systemctl(run: Run, cmd: Command) -> None:
    _check_install_unit(run, Command(["install", "contrib/systemd/healerd.service", "/x"], False, cmd.line))


def _check_usermod(run: Run, cmd: Command) -> None:
    # The group added here is the sysusers group and the socket_group the daemon chgrps its 0660 socket to
    # (the `healerd run` line above checks that mechanism with this user's group).
    assert cmd.argv[3] == "healerctl"
    _check_install_sysusers(run, Command(["install", "contrib/systemd/healerd.sysusers", "/x"], False, cmd.line))


NOT_RUN: dict[str, tuple[str, Callable[[Run, Command], None]]] = {
    "pip install .": ("would reinstall healerd into the interpreter every test shares; tests/project/test_packaging.py "
                      "installs the built wheel into a fresh venv and runs it", _check_pip_install),
    "pip install '.[test]'": ("same; this environment already has the test extra", _check_pip_install_test),
    "pytest -q": ("the whole suite, which contains this test", _check_pytest),
    "sudo sh contrib/install.sh": ("root-owned system paths and systemd; tests/project/test_systemd_unit.py runs it into "
                                   "a scratch PREFIX and DESTDIR", _check_install_script),
    "pip install 'healerd[browser]'": ("would install into the interpreter every test shares; the test extra "
                                       "includes the browser extra", _check_pip_install_browser),
    "sudo apt-get install chromium": ("would change this machine's packages", _check_apt_chromium),
    "sudo systemctl enable --now healerd": ("no systemd as PID 1 here", _check_systemctl),
    "sudo usermod -aG healerctl '$USER'": ("would change this machine's users", _check_usermod),
}


def test_the_tables_cover_exactly_the_readme_commands():
    keys = [c.key for c in readme_commands(README.read_text())]
    unknown = [k for k in keys if k not in HANDLERS and k not in NOT_RUN]
    assert not unknown, f"README command lines this test does not exercise (add them to HANDLERS): {unknown}"
    stale = sorted((set(HANDLERS) | set(NOT_RUN)) - set(keys))
    assert not stale, f"entries for lines no longer in the README: {stale}"
    assert not set(HANDLERS) & set(NOT_RUN)
    skipped_ours = [k for k in NOT_RUN if shlex.split(k)[0] in ("healerd", "healerctl")]
    assert not skipped_ours, f"healerd/healerctl lines must run for real: {skipped_ours}"


def test_every_readme_command_runs(site):
    cmds = readme_commands(README.read_text())
    short_tmp = Path(tempfile.mkdtemp(prefix="healerd-readme-"))
    run = Run(short_tmp, site)
    try:
        for cmd in cmds:
            if cmd.key in NOT_RUN:
                NOT_RUN[cmd.key][1](run, cmd)
            else:
                assert cmd.key in HANDLERS, f"README line {cmd.line}: `{cmd.key}` is not exercised by this test"
                HANDLERS[cmd.key](run, cmd)
            run.done.append(cmd.key)
        assert set(HANDLERS) <= set(run.done)
        assert {c.argv[0] for c in cmds if c.key in HANDLERS} == {"healerd", "healerctl"}
        code = run.stop()
        assert code == 0, f"healerd run exited {code} on SIGTERM:\n{run.log()[-3000:]}"
        assert not run.socket.exists()  # a clean stop removes it
    finally:
        run.stop()
        shutil.rmtree(short_tmp, ignore_errors=True)
