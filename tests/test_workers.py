"""The extraction worker processes (healerd/workers.py): real processes, real pages."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from healerd.adapters.workers import (
    SNAPSHOT_ZLIB_LEVEL,
    PageJob,
    WorkerError,
    WorkerPool,
    default_workers,
    process_page,
)
from healerd.core.blueprint import from_dict
from healerd.core.extract import extract
from healerd.core.validate import last_good_sample
from healerd.store import snapshots

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
    assert remote.snapshot_z is not None and snapshots.SNAPSHOT_ZLIB_LEVEL == SNAPSHOT_ZLIB_LEVEL
    import zlib
    assert zlib.decompress(remote.snapshot_z).decode("utf-8") == stored["html"]


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
