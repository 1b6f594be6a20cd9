"""The extraction worker processes (healerd/adapters/workers.py, page_work.py, worker_protocol.py): real processes, real pages."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from healerd.adapters.page_work import FetchJob, PageJob, process_page
from healerd.adapters.workers import WorkerError, WorkerPool, default_workers
from healerd.core import errors
from healerd.core.blueprint import from_dict
from healerd.core.extract import extract
from healerd.core.pagecodec import decompress_page
from healerd.core.validate import last_good_sample

BP = from_dict({"url": "http://shop.example/list", "items": "li.p",
                "fields": {"name": {"css": ".n"}, "price": {"css": ".v", "type": "float"},
                           "link": {"css": "a", "attr": "href"}}})


def page(n: int, tag: str = "") -> bytes:
    rows = "".join(f'<li class="p"><span class="n">Widget {i}{tag}</span><span class="v">${i},5{i % 10}.99</span>'
                   f'<a href="/w/{i}">more</a></li>' for i in range(n))
    return f"<html><head><title>Shop</title></head><body><ul>{rows}</ul></body></html>".encode()


@pytest.fixture
def pool():
    p = WorkerPool(1, deadline=30.0)
    yield p
    p.close()


def test_a_worker_gives_what_extraction_in_process_gives(pool):
    body = page(40, "é").replace(b"\xc3\xa9", b"\xe9")     # a latin-1 page
    job = PageJob(body=body, encoding="windows-1252", blueprint_json=BP.to_json())
    remote = pool.run(job)
    local = process_page(job)
    assert remote == local
    assert remote.error is None and remote.extraction.item_count == 40
    assert remote.extraction == extract(body.decode("windows-1252"), BP)
    assert remote.extraction.data[3] == {"name": "Widget 3é", "price": 353.99, "link": "/w/3"}
    assert remote.shape_sample == last_good_sample(remote.extraction.data)
    stored = {"html": body.decode("windows-1252")}
    assert remote.snapshot_z is not None
    assert decompress_page(remote.snapshot_z) == stored["html"]


def test_the_page_is_compressed_only_when_it_changed(pool):
    body = page(5)
    first = pool.run(PageJob(body=body, encoding="utf-8", blueprint_json=BP.to_json()))
    again = pool.run(PageJob(body=body, encoding="utf-8", blueprint_json=BP.to_json(), good_sha=first.page_sha))
    assert first.snapshot_z is not None and again.snapshot_z is None and again.page_sha == first.page_sha
    assert again.extraction == first.extraction


def test_a_broken_blueprint_is_one_error_line_not_a_dead_worker(pool):
    bad = from_dict({"items": "li.p", "fields": {"name": {"css": ".n"}}}).to_json().replace("li.p", "li[")
    out = pool.run(PageJob(body=page(3), encoding="utf-8", blueprint_json=bad))
    assert out.extraction is None and out.error and "\n" not in out.error
    assert pool.run(PageJob(body=page(3), encoding="utf-8", blueprint_json=BP.to_json())).extraction.item_count == 3


def test_a_worker_killed_mid_job_fails_that_scrape_and_the_next_one_works(pool):
    big = PageJob(body=page(60_000), encoding="utf-8", blueprint_json=BP.to_json())   # long enough to be caught
    victim = pool.pids()[0]

    def kill_when_busy():
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                with open(f"/proc/{victim}/stat") as fh:
                    utime = int(fh.read().rsplit(")", 1)[1].split()[11])
            except OSError:
                return
            if utime > 5:   # it is parsing the big page
                os.kill(victim, signal.SIGKILL)
                return
            time.sleep(0.005)

    killer = threading.Thread(target=kill_when_busy)
    killer.start()
    with pytest.raises(WorkerError) as err:
        pool.run(big)
    killer.join()
    line = str(err.value)
    assert "\n" not in line and f"pid {victim}" in line and "died" in line and "exit code -9" in line
    assert pool.pids() != [victim]
    out = pool.run(PageJob(body=page(7), encoding="utf-8", blueprint_json=BP.to_json()))
    assert out.error is None and out.extraction.item_count == 7


def test_a_worker_that_died_while_idle_is_replaced_before_use(pool):
    victim = pool.pids()[0]
    os.kill(victim, signal.SIGKILL)
    deadline = time.time() + 10
    while os.path.exists(f"/proc/{victim}/stat") and time.time() < deadline:
        try:
            with open(f"/proc/{victim}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except OSError:
            break
        time.sleep(0.01)
    out = pool.run(PageJob(body=page(4), encoding="utf-8", blueprint_json=BP.to_json()))
    assert out.extraction.item_count == 4 and pool.pids() != [victim]


def test_wait_ready_waits_for_every_worker_to_start_and_for_a_replacement_too():
    p = WorkerPool(2, deadline=30.0)
    try:
        assert not p.wait_ready(0)   # a fresh interpreter takes tenths of a second to import
        assert p.wait_ready(30)
        victim = p.pids()[0]
        os.kill(victim, signal.SIGKILL)
        deadline = time.time() + 10
        while victim in p.pids() and time.time() < deadline:
            time.sleep(0.01)
        assert victim not in p.pids()
        assert p.wait_ready(30)
        assert [w.ready.is_set() for w in p._workers] == [True, True]
        out = p.run(PageJob(body=page(3), encoding="utf-8", blueprint_json=BP.to_json()))
        assert out.extraction.item_count == 3
    finally:
        p.close()


def test_a_stopped_pool_ends_its_workers_and_refuses_jobs():
    p = WorkerPool(2, deadline=30.0)
    pids = p.pids()
    p.close()
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    with pytest.raises(WorkerError):
        p.run(PageJob(body=page(1), encoding="utf-8", blueprint_json=BP.to_json()))


def test_the_default_number_of_workers_follows_the_cores():
    assert [default_workers(c) for c in (1, 2, 3, 8, 64)] == [1, 2, 3, 4, 4]


# -- workers that fetch as well ----------------------------------------------------------------

def _slow(delay: float, body: bytes):
    from tests.support.httpfixture import send

    def fn(h):
        time.sleep(delay)
        send(h, 200, body)
    return fn


def test_a_fetching_worker_gives_what_fetching_in_process_gives(server):
    from healerd.adapters.fetch import FetchConfig, Fetcher
    from healerd.adapters.page_work import FetchJob, fetch_and_process
    from tests.support.httpfixture import page as http_page

    server.route("/list", http_page(page(12), headers={"ETag": '"v1"'}))
    job = FetchJob(url=server.url("/list"), blueprint_json=BP.to_json(), fetch=FetchConfig(timeout=5.0))
    p = WorkerPool(1, deadline=30.0, threads=2)
    try:
        remote = p.run(job)
        with Fetcher(job.fetch) as f:
            local = fetch_and_process(job, f)
    finally:
        p.close()
    assert remote == local
    assert remote.status == 200 and remote.etag == '"v1"' and remote.error_type is None
    assert remote.page.extraction.item_count == 12
    # A changed page comes back once, compressed for its snapshot; an unchanged one as text.
    assert remote.text is None and decompress_page(remote.page.snapshot_z) == page(12).decode()
    same = FetchJob(url=job.url, blueprint_json=job.blueprint_json, fetch=job.fetch,
                    good_sha=remote.page.page_sha)
    with Fetcher(job.fetch) as f:
        again = fetch_and_process(same, f)
    assert again.page.snapshot_z is None and again.text == page(12).decode()


def test_a_fetching_worker_reports_the_fetch_error_class_and_the_not_html_answer(server):
    from healerd.adapters.fetch import FetchConfig
    from healerd.adapters.page_work import FetchJob
    from healerd.core import errors
    from tests.support.httpfixture import page as http_page

    server.route("/gone", http_page("<html><body>gone</body></html>", status=410))
    server.route("/pdf", http_page(b"%PDF-1.4 binary", content_type="application/pdf"))
    p = WorkerPool(1, deadline=30.0, threads=1)
    try:
        gone = p.run(FetchJob(url=server.url("/gone"), blueprint_json=BP.to_json(), fetch=FetchConfig(timeout=5.0)))
        pdf = p.run(FetchJob(url=server.url("/pdf"), blueprint_json=BP.to_json(), fetch=FetchConfig(timeout=5.0)))
    finally:
        p.close()
    assert (gone.error_type, gone.status, gone.page) == (errors.HTTP_ERROR, 410, None) and "410" in gone.error
    assert pdf.error_type == errors.NOT_HTML and pdf.page is None


def test_a_slow_site_does_not_hold_up_other_jobs_on_the_same_worker(server):
    """A worker has several threads: its other jobs go on while one waits for a slow answer."""
    from healerd.adapters.fetch import FetchConfig
    from healerd.adapters.page_work import FetchJob

    server.route("/slow", _slow(2.0, page(3)))
    server.route("/fast", _slow(0.0, page(4)))
    p = WorkerPool(1, deadline=30.0, threads=2)
    done: dict[str, float] = {}

    def run(path):
        p.run(FetchJob(url=server.url(path), blueprint_json=BP.to_json(), fetch=FetchConfig(timeout=5.0)))
        done[path] = time.monotonic()
    try:
        slow = threading.Thread(target=run, args=("/slow",))
        slow.start()
        time.sleep(0.2)
        run("/fast")
        assert "/slow" not in done      # the fast page came back while the slow one was still out
        slow.join()
    finally:
        p.close()
    assert done["/fast"] < done["/slow"]


def test_a_worker_killed_with_several_jobs_in_hand_fails_each_of_them_and_is_replaced(server):
    from healerd.adapters.fetch import FetchConfig
    from healerd.adapters.page_work import FetchJob

    server.route("/slow", _slow(3.0, page(3)))
    p = WorkerPool(1, deadline=30.0, threads=3)
    victim = p.pids()[0]
    failures: list[str] = []

    def run():
        try:
            p.run(FetchJob(url=server.url("/slow"), blueprint_json=BP.to_json(), fetch=FetchConfig(timeout=5.0)))
        except WorkerError as exc:
            failures.append(str(exc))
    try:
        jobs = [threading.Thread(target=run) for _ in range(3)]
        for t in jobs:
            t.start()
        deadline = time.time() + 10
        while len(server.seen("/slow")) < 3 and time.time() < deadline:
            time.sleep(0.01)
        os.kill(victim, signal.SIGKILL)
        for t in jobs:
            t.join(10)
        assert len(failures) == 3
        assert all(f"pid {victim}" in line and "died" in line and "\n" not in line for line in failures)
        assert p.pids() != [victim]
        out = p.run(PageJob(body=page(2), encoding="utf-8", blueprint_json=BP.to_json()))
        assert out.extraction.item_count == 2
    finally:
        p.close()


def test_threads_per_worker_let_every_scraper_have_a_job_in_hand():
    from healerd.adapters.workers import worker_threads

    assert [worker_threads(s, w) for s, w in ((8, 2), (8, 3), (1, 4), (5, 1))] == [4, 3, 1, 5]


def test_a_scrape_whose_worker_died_under_it_is_tried_once_more_on_the_new_one(server):
    """Another job's page may be what killed the worker: this scrape's page is fetched again."""
    from healerd.actors.messages import ScrapeJob
    from healerd.actors.registry import ActorRegistry
    from healerd.actors.scraper import Scraper
    from healerd.config import Config

    server.route("/slow", _slow(1.5, page(6)))
    p = WorkerPool(1, deadline=30.0, threads=2)
    victim = p.pids()[0]
    scraper = Scraper(0, Config(), ActorRegistry(), None, p)
    job = ScrapeJob(name="shop", url=server.url("/slow"), host="127.0.0.1", blueprint_json=BP.to_json(), version=1,
                    etag=None, last_modified=None)
    got: list = []
    try:
        t = threading.Thread(target=lambda: got.append(scraper.scrape(job)))
        t.start()
        deadline = time.time() + 10
        while not server.seen("/slow") and time.time() < deadline:
            time.sleep(0.01)
        os.kill(victim, signal.SIGKILL)
        t.join(20)
    finally:
        p.close()
    assert len(server.seen("/slow")) == 2
    assert got[0].error is None and got[0].extraction.item_count == 6


def test_a_scrape_over_its_own_deadline_is_not_tried_again(server):
    """A page that overran the job deadline would only overrun it again: one try, one line."""
    from healerd.actors.messages import ScrapeJob
    from healerd.actors.registry import ActorRegistry
    from healerd.actors.scraper import Scraper
    from healerd.config import Config
    from healerd.core import errors

    server.route("/stuck", _slow(4.0, page(2)))
    p = WorkerPool(1, deadline=1.0, threads=2)
    assert p.wait_ready(60)   # the 1 s runs from the job's sending: a worker still starting would eat it
    scraper = Scraper(0, Config(), ActorRegistry(), None, p)
    job = ScrapeJob(name="shop", url=server.url("/stuck"), host="127.0.0.1", blueprint_json=BP.to_json(), version=1,
                    etag=None, last_modified=None)
    try:
        out = scraper.scrape(job)
    finally:
        p.close()
    assert out.error_type == errors.PARSE_ERROR and "took longer than 1s" in out.error
    assert len(server.seen("/stuck")) == 1


def test_a_caller_waiting_for_a_free_thread_gets_it_as_soon_as_a_job_ends(monkeypatch):
    """With every worker thread busy a caller waits; the end of a job must wake it (not only a
    periodic re-check, made a minute long here)."""
    import healerd.adapters.workers as workers

    monkeypatch.setattr(workers, "_IDLE_POLL_S", 60.0)
    p = WorkerPool(1, deadline=30.0, threads=1)
    got: list = []
    try:
        callers = [threading.Thread(target=lambda: got.append(
            p.run(PageJob(body=page(5), encoding="utf-8", blueprint_json=BP.to_json())))) for _ in range(3)]
        for t in callers:
            t.start()
        for t in callers:
            t.join(20)
        assert [r.extraction.item_count for r in got] == [5, 5, 5]
    finally:
        p.close()


def test_the_worker_is_sent_only_the_extraction_part_of_a_blueprint():
    from healerd.core.blueprint import from_json

    a = from_dict(dict(BP.to_dict(), url="http://shop.example/a", every="5m",
                       headers={"Authorization": "Bearer s3cret"}, cookies={"sid": "c00kie"}))
    b = from_dict(dict(BP.to_dict(), url="http://other.example/b", every="2h"))
    assert a.extraction_json == b.extraction_json   # one parsed blueprint in the worker for both
    assert "s3cret" not in a.extraction_json and "c00kie" not in a.extraction_json
    assert "shop.example" not in a.extraction_json
    other = from_dict(dict(BP.to_dict(), items=["li.p", "li.q"]))
    assert other.extraction_json != BP.extraction_json
    html = page(5).decode()
    assert extract(html, from_json(a.extraction_json)) == extract(html, a)


def test_the_daemon_waits_for_workers_that_never_start_only_until_its_bound_or_a_stop(tmp_path, monkeypatch):
    import sys

    from healerd.config import Config
    from healerd.daemon import Daemon

    never = tmp_path / "python"   # a "worker" that neither says READY nor exits
    never.write_text("#!/bin/sh\nexec sleep 30\n")
    never.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(never))
    d = Daemon(Config(), str(tmp_path), str(tmp_path / "healerd.sock"), str(tmp_path))
    d.workers = WorkerPool(1, deadline=30.0)
    try:
        t0 = time.monotonic()
        assert d._workers_ready(0.6) is False   # bounded: "ready" goes on with a warning
        assert 0.5 < time.monotonic() - t0 < 5
        threading.Timer(0.3, d._stop.set).start()
        t0 = time.monotonic()
        assert d._workers_ready(30) is True     # a stop signal ends the wait at once
        assert time.monotonic() - t0 < 5
    finally:
        d.workers.close(0.5)


def test_a_worker_builds_its_tls_context_before_it_says_ready(monkeypatch):
    """The CA bundle is loaded while the worker starts, not by its first jobs' fetches."""
    from multiprocessing import Pipe

    from healerd.adapters import worker_protocol as workers_mod

    built = threading.Event()

    def build():
        built.set()

    monkeypatch.setattr(workers_mod, "tls_context", build)
    jobs_r, jobs_w = Pipe(duplex=False)
    results_r, results_w = Pipe(duplex=False)
    server = threading.Thread(target=workers_mod._serve, args=(jobs_r, results_w, 2), daemon=True)
    server.start()
    try:
        assert results_r.poll(10)
        assert results_r.recv() == (workers_mod.READY, None)
        assert built.is_set()
    finally:
        jobs_w.send(None)
        server.join(10)
    assert not server.is_alive()


def test_a_worker_whose_ca_bundle_cannot_be_read_still_starts_and_serves(monkeypatch, tmp_path):
    """Building the TLS context early must not turn a broken CA setting into a worker that dies
    at every start (and is replaced, forever): the worker starts, and pages are still parsed."""
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing-ca.pem"))
    p = WorkerPool(1, deadline=30.0)
    try:
        assert p.wait_ready(30)
        pid = p.pids()[0]
        out = p.run(PageJob(page(3), "utf-8", BP.extraction_json))
        assert out.error is None and out.extraction.item_count == 3
        # A fetch says what is wrong, in a class that never sends the source to the healer
        # (a page that will not parse would: selectors healed for a local TLS problem).
        fetched = p.run(FetchJob(url="http://127.0.0.1:9/p", blueprint_json=BP.extraction_json))
        assert fetched.error_type == errors.NETWORK
        assert "cannot set up the HTTP client" in fetched.error and "missing-ca.pem" in fetched.error
        assert p.pids() == [pid]
    finally:
        p.close()
