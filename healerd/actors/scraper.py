"""Scraper (a pool): fetch one page, run the production parser, pass it to the Validator.

A selector source over HTTP is fetched and extracted in one job by a worker process
(`healerd.adapters.workers`), or in the Scraper's thread when `[daemon] workers = 0`.
Code parsers and `fetch = "browser"` sources are fetched here (each Scraper owns one sync
httpx client through Fetcher; browser pages come from the daemon's shared browser pool);
their pages are then extracted by a worker or in the sandbox. Anything that goes wrong
is turned into an ExtractedPage carrying the error class; a poisonous page can
never stop the actor.
"""

from __future__ import annotations

import hashlib
import logging
import time
from functools import lru_cache

from healerd.actors.base import ServiceActor, fetch_config, page_limits
from healerd.actors.messages import ExtractedPage, ScrapeJob, ScraperFree
from healerd.actors.parser_run import run_parser_on
from healerd.actors.registry import ActorRegistry
from healerd.adapters.page_work import (
    FetchJob,
    FetchOutcome,
    PageJob,
    PageResult,
    fetch_and_process,
    fetch_answer,
    process_page,
)
from healerd.adapters.robots import RobotsPolicy
from healerd.adapters.workers import WorkerError, WorkerPool
from healerd.config import Config
from healerd.core import errors
from healerd.core.blueprint import Blueprint, from_json
from healerd.core.extract import PageTooLarge

log = logging.getLogger("healerd.scraper")


@lru_cache(maxsize=4096)
def cached_blueprint(body: str) -> Blueprint:
    return from_json(body)


class Scraper(ServiceActor):
    database = None
    fetches = True

    def __init__(self, index: int, config: Config, registry: ActorRegistry, robots: RobotsPolicy | None,
                 workers: WorkerPool | None = None):
        super().__init__(None, config, registry)
        self.index = index
        self.robots = robots
        self.workers = workers     # extraction in worker processes; None: in this thread

    def handle(self, message):
        if isinstance(message, ScrapeJob):
            try:
                page = self.scrape(message)
            except WorkerError:   # the pool stopped under a job at shutdown: the source stays due
                log.info("scrape of %s dropped: healerd is shutting down", message.name)
                self.registry.tell("scheduler", ScraperFree(self.index, message.name))
                return None
            except Exception as exc:  # the page or the parser misbehaved: report, keep running
                log.exception("scrape of %s failed unexpectedly", message.name)
                now = time.time()
                page = ExtractedPage(job=message, started_at=now, finished_at=now, error_type=errors.PARSE_ERROR,
                                     error=f"internal error while scraping: {type(exc).__name__}: {exc}")
            self.registry.tell("validator", page)
            # Free for the next job now: the outcome's validation and commit need no Scraper.
            self.registry.tell("scheduler", ScraperFree(self.index, message.name))
        return None

    def scrape(self, job: ScrapeJob) -> ExtractedPage:
        started = time.time()
        bp = cached_blueprint(job.blueprint_json)
        if self.robots is not None and self.config.fetch.respect_robots:
            if not self.robots.allowed(job.url, self.config.fetch.user_agent):
                return ExtractedPage(job=job, started_at=started, finished_at=time.time(), error_type=errors.BLOCKED,
                                     error="robots.txt disallows this URL (set [fetch] respect_robots = false to override)")
        if not bp.parser and bp.fetch != "browser":
            return self._fetch_and_extract(job, bp, started)
        assert self.fetcher is not None
        res = fetch_answer(self.fetcher, job.url, headers=bp.headers, cookies=bp.cookies, etag=job.etag,
                           last_modified=job.last_modified, via=bp.fetch, wait_for=bp.wait_for)
        if isinstance(res, FetchOutcome):   # no page: the fetch's error, a 304, or not HTML
            return self._page_of(job, started, res)
        page = ExtractedPage(job=job, started_at=started, finished_at=0.0, status=res.status, html=res.text,
                             etag=res.etag, last_modified=res.last_modified, permanent_redirect=res.permanent_redirect)
        if not bp.parser:
            self._extract(page, job, bp, res)
            page.finished_at = time.time()
            return page
        page.page_sha = hashlib.sha256(res.body).hexdigest()
        try:
            page.extraction = run_parser_on(bp, res.text, page_limits(self.config))
        except PageTooLarge as exc:
            page.error_type = errors.TOO_LARGE
            page.error = str(exc)
        except Exception as exc:
            page.error_type = errors.PARSE_ERROR
            page.error = f"the parser failed on this page: {getattr(exc, 'reason', None) or exc}"
        page.finished_at = time.time()
        return page

    def _fetch_and_extract(self, job: ScrapeJob, bp: Blueprint, started: float) -> ExtractedPage:
        """A selector blueprint over HTTP: fetch, hash, extract and compress in a worker process
        (or here with none). A job whose worker died under it is tried once more on another."""
        work = FetchJob(url=job.url, blueprint_json=bp.extraction_json, fetch=fetch_config(self.config),
                        headers=bp.headers or None, cookies=bp.cookies or None, etag=job.etag,
                        last_modified=job.last_modified, good_sha=job.good_sha, limits=page_limits(self.config))
        if self.workers is None:
            assert self.fetcher is not None
            out = fetch_and_process(work, self.fetcher)
        else:
            out = self._on_worker(work, job.name)
            if isinstance(out, tuple):
                return ExtractedPage(job=job, started_at=started, finished_at=time.time(),
                                     error_type=out[0], error=out[1])
        return self._page_of(job, started, out)

    def _page_of(self, job: ScrapeJob, started: float, out: FetchOutcome) -> ExtractedPage:
        """The ExtractedPage of a fetch's outcome (and of the page's processing, when it has one)."""
        page = ExtractedPage(job=job, started_at=started, finished_at=0.0, status=out.status, html=out.text,
                             not_modified=out.not_modified, etag=out.etag, last_modified=out.last_modified,
                             permanent_redirect=out.permanent_redirect, error_type=out.error_type, error=out.error,
                             retry_after=out.retry_after, dns_failure=out.dns_failure)
        if out.page is not None:
            self._take_result(page, out.page)
        page.finished_at = time.time()
        return page

    def _on_worker(self, work: FetchJob | PageJob, name: str):
        """The pool's answer to `work`, or (error class, line) when there is none. A job whose
        worker died under it is tried once more (another job's page may have killed it); one
        that overran its own deadline is not: past the extraction deadline it is a TIMEOUT
        ("extraction too slow": the page makes the selectors too slow), else a PARSE_ERROR.
        WorkerError only when the pool is stopped."""
        assert self.workers is not None
        for attempt in (1, 2):
            try:
                return self.workers.run(work)
            except WorkerError as exc:
                if self.workers.closed:
                    raise
                if exc.too_slow:
                    log.warning("scrape of %s: %s", name, exc)
                    return errors.TIMEOUT, str(exc)
                if attempt == 2 or not exc.died_under:
                    return errors.PARSE_ERROR, f"the parser failed on this page: {exc}"
                log.warning("scrape of %s: %s; trying once more", name, exc)
        raise AssertionError("unreachable")

    def _take_result(self, page: ExtractedPage, out: PageResult) -> None:
        page.page_sha = out.page_sha
        page.snapshot_z = out.snapshot_z
        page.shape_sample = out.shape_sample
        page.locus = out.locus
        if out.too_large:
            page.error_type = errors.TOO_LARGE
            page.error = out.error
        elif out.error is not None:
            page.error_type = errors.PARSE_ERROR
            page.error = f"the parser failed on this page: {out.error}"
        else:
            page.extraction = out.extraction

    def _extract(self, page: ExtractedPage, job: ScrapeJob, bp: Blueprint, res) -> None:
        """A selector blueprint on a rendered page: hash, extract and compress in a worker process
        (or here with none)."""
        work = PageJob(body=res.body, encoding=res.encoding, blueprint_json=bp.extraction_json, good_sha=job.good_sha,
                       limits=page_limits(self.config))
        if self.workers is None:
            out = process_page(work, html=res.text)
        else:
            out = self._on_worker(work, job.name)
            if isinstance(out, tuple):
                page.page_sha = hashlib.sha256(res.body).hexdigest()
                page.error_type, page.error = out
                return
        self._take_result(page, out)
