"""Untrusted selectors on hostile pages, evaluated in a worker process with a wall-clock deadline
(healerd/adapters/trials.py, the extraction deadline of healerd/adapters/workers.py).

Real worker processes and a real local HTTP server. The hostile page is 240 nested `<div>`s;
a selector shaped for it (five descendant steps, or `:has()` nested three deep) keeps lexbor
busy for many seconds in one `.css()` call, far past the one-second deadline used here.
"""

from __future__ import annotations

import os

import pytest

from healerd.adapters.page_work import FetchJob
from healerd.adapters.trials import TOO_SLOW, TooSlow, TrialFailed, Trials
from healerd.adapters.workers import WorkerPool
from healerd.core import errors
from healerd.core.blueprint import from_dict

DEEP = "<html><body>" + "<div>" * 240 + "<p>x</p>" + "</div>" * 240 + "</body></html>"
# Written by a person (never statically checked), benign on an ordinary page, minutes on DEEP.
SLOW_BP = from_dict({"url": "http://shop.example/", "fields": {"name": {"css": "span div div div div div p"}}})
BOMB_BP = from_dict({"url": "http://shop.example/", "items": "div:has(div:has(div:has(div:has(td))))",
                     "fields": {"name": {"css": "td"}}})
OK_BP = from_dict({"url": "http://shop.example/", "items": "li.p", "fields": {"name": {"css": ".n"}}})
LIST = "<html><body><ul>" + "".join(f'<li class="p"><span class="n">W{i}</span></li>' for i in range(4)) + \
    "</ul></body></html>"


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def trials():
    t = Trials(timeout=1.0)
    yield t
    t.close()


def test_a_trial_gives_what_extraction_in_process_gives(trials):
    from healerd.core.extract import extract

    got = trials.extract(OK_BP, LIST)
    assert got.data == extract(LIST, OK_BP).data and got.item_count == 4
    assert trials.pids() and all(p != os.getpid() for p in trials.pids())   # in a process of its own


@pytest.mark.parametrize("bp", [SLOW_BP, BOMB_BP], ids=["descendant-chain", "nested-has"])
def test_a_selector_too_slow_on_the_page_is_stopped_recorded_first_and_the_worker_replaced(trials, bp):
    trials.extract(OK_BP, LIST)   # the worker is up
    victim = trials.pids()[0]
    seen: list[tuple[str, bool]] = []
    with pytest.raises(TooSlow) as info:
        trials.extract(bp, DEEP, on_overrun=lambda line: seen.append((line, alive(victim))))
    assert str(info.value).startswith(TOO_SLOW) and "extraction too slow" in str(info.value)
    # The caller's record was made while the worker was still running: before the kill.
    assert len(seen) == 1 and seen[0][1] is True and "extraction too slow" in seen[0][0]
    assert victim not in trials.pids()
    # A new worker took its place and answers the next trial.
    assert trials.extract(OK_BP, LIST).item_count == 4


def test_the_built_in_healer_runs_in_the_worker_and_answers(trials):
    before = OK_BP
    old = LIST
    new = old.replace('class="n"', 'class="name"')
    res = trials.heal(before, old, [{"name": f"W{i}"} for i in range(4)], new)
    assert res.ok and res.blueprint is not None
    assert res.blueprint.fields["name"].css != ".n"


def test_a_page_over_a_work_bound_is_refused_in_the_worker_which_keeps_serving(trials):
    from healerd.core.extract import PageTooLarge

    with pytest.raises(PageTooLarge, match="max_depth"):
        trials.extract(OK_BP, "<p>" + "<b>" * 300 + "</p>")   # over max_depth: refused before parsing
    assert trials.extract(OK_BP, LIST).item_count == 4


def test_a_closed_trials_refuses_in_one_line(trials):
    trials.close()
    with pytest.raises(TrialFailed, match="shutting down"):
        trials.extract(OK_BP, LIST)


def test_a_scrape_whose_extraction_overruns_is_a_timeout_and_its_worker_is_replaced(server):
    """A benign selector on a page made hostile to it: the scrape fails with TIMEOUT ("extraction
    too slow"), is not tried again, and the next scrape has a fresh worker."""
    from healerd.actors.messages import ScrapeJob
    from healerd.actors.registry import ActorRegistry
    from healerd.actors.scraper import Scraper
    from healerd.adapters.fetch import FetchConfig
    from healerd.config import Config
    from tests.support.httpfixture import page

    server.route("/deep", page(DEEP.encode()))
    pool = WorkerPool(1, deadline=60.0, threads=2, extraction_timeout=1.0)
    scraper = Scraper(0, Config(), ActorRegistry(), None, pool)
    job = ScrapeJob(name="shop", url=server.url("/deep"), host="127.0.0.1", blueprint_json=SLOW_BP.to_json(),
                    version=1, etag=None, last_modified=None)
    try:
        pool.wait_ready(30)
        victim = pool.pids()[0]
        out = scraper.scrape(job)
        assert out.error_type == errors.TIMEOUT, (out.error_type, out.error)
        assert "extraction too slow" in out.error
        assert len(server.seen("/deep")) == 1   # an overrun is not tried again
        assert victim not in pool.pids()
        ok = pool.run(FetchJob(url=server.url("/deep"), blueprint_json=OK_BP.to_json(),
                               fetch=FetchConfig(timeout=5.0)))
        assert ok.page is not None and ok.page.error is None
    finally:
        pool.close()


def test_a_worker_its_daemon_does_not_stop_ends_itself_past_the_deadline(monkeypatch):
    """The daemon normally stops a worker that overran; one whose daemon is gone (killed) or
    did not stop it ends on its own alarm, even inside one long selector call."""
    import signal

    import healerd.adapters.workers as workers

    monkeypatch.setattr(workers, "ALARM_MARGIN_S", 0.5)
    pool = WorkerPool(1, deadline=60.0, extraction_timeout=1.0)
    kills: list[int] = []
    monkeypatch.setattr(pool, "_kill", lambda w: kills.append(w.pid))   # the daemon side does not stop it
    try:
        pool.wait_ready(30)
        victim = pool.pids()[0]
        proc = pool._workers[0].proc
        from healerd.adapters.page_work import PageJob

        with pytest.raises(Exception, match="extraction too slow"):
            pool.run(PageJob(body=b"", encoding="utf-8", blueprint_json=SLOW_BP.extraction_json, text=DEEP))
        assert kills == [victim]   # asked to, but the stand-in did nothing
        assert proc.wait(30) == -signal.SIGALRM   # the worker ended itself
    finally:
        pool.close()


def test_the_cores_page_checks_run_in_the_worker_by_name_only(trials):
    from healerd.core.drift import page_locus

    assert trials.call("page_locus", LIST, OK_BP) == page_locus(LIST, OK_BP)
    with pytest.raises(ValueError, match="no such page check"):
        trials.call("os.system", "true")
    victim = trials.pids()[0]
    with pytest.raises(TooSlow):   # the drift locus reads production's selectors on the page: bounded too
        trials.call("page_locus", DEEP, SLOW_BP)
    assert victim not in trials.pids()


def test_the_deployers_headings_check_runs_in_the_worker(trials):
    """A candidate's selectors on the live page and the last good one, judged by headings: in the
    worker, the same answer as in process (a remembered fix reading another column)."""
    from healerd.core.candidate_headings import candidate_relabelled
    from healerd.core.extract import extract
    from tests.support.driftpages import PRICES_BP, pricelist

    production = from_dict(dict(PRICES_BP, url="http://127.0.0.1/prices"))
    remembered = from_dict(dict(PRICES_BP, url="http://127.0.0.1/prices",
                                fields=dict(PRICES_BP["fields"], price={"css": "td:nth-child(3)", "type": "float"})))
    before, after = pricelist(), pricelist(drop="Brand")
    args = (production, before, extract(before, production).data, remembered, after, extract(after, remembered).data)
    answer = trials.call("candidate_relabelled", *args)
    assert answer == candidate_relabelled(*args)
    assert answer.startswith("brand would read the value under 'Category'")
