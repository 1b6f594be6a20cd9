"""A scrape's work on one page, wherever it runs: jobs in, answers out.

`process_page` is what a page costs once it has arrived: decode, hash, parse and extract
with the blueprint's selectors, and compress the page for its snapshot when it differs from
the last good one (`PageJob` -> `PageResult`: page bytes, charset, blueprint JSON, the last
good page's hash -> records, raw values, item count, hash, compressed page or one error line).
`fetch_and_process` puts the HTTP fetch in front of it (`FetchJob` -> `FetchOutcome`: URL,
headers, conditional-request validators, fetch settings -> status, validators, page text,
the fetch's error class or the PageResult). `run_heal` runs the built-in selector healer on two
pages (`HealJob` -> `HealAnswer`), `run_call` one of the core's page checks named in `CALLS`
(`CallJob` -> `HealAnswer`). Jobs and answers are small picklable values, so the same
functions run in a Scraper's thread (`[daemon] workers = 0`) or in a worker process
(healerd/adapters/worker_protocol.py, healerd/adapters/workers.py), and give the same result
either way.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from healerd.adapters.fetch import FetchConfig, Fetcher, FetchError, FetchResult
from healerd.core import errors
from healerd.core.blueprint import from_json
from healerd.core.classify import not_html_reason
from healerd.core.drift import locus_signature
from healerd.core.extract import Extraction, PageLimits, PageTooLarge, check_page, extract, parse_html
from healerd.core.pagecodec import compress_page
from healerd.core.validate import last_good_sample

log = logging.getLogger("healerd.workers")


@dataclass(frozen=True)
class PageJob:
    """A fetched page for extraction: what crosses to a worker."""
    body: bytes
    encoding: str                  # the charset the fetch decoded it with
    blueprint_json: str            # a selector blueprint: its extraction part (Blueprint.extraction_json) will do
    good_sha: str | None = None    # the last good snapshot's hash: the page is compressed only when it differs
    limits: PageLimits = PageLimits()   # the page's work bounds ([fetch] max_items, max_elements, max_depth)
    snapshot: bool = True          # False: a trial of a candidate, nothing is kept of the page
    text: str | None = None        # the page as text already (a trial's page): `body` is then not read


@dataclass(frozen=True)
class HealJob:
    """The built-in selector healer's search on two pages (healerd.core.heal.pipeline.heal), in a
    worker: the pages are untrusted and the search evaluates selectors on them."""
    blueprint_json: str            # the whole blueprint (the candidate keeps its url, headers...)
    original_html: str
    last_good_records: Any
    current_html: str


@dataclass(frozen=True)
class CallJob:
    """One of the core's page checks that evaluate a blueprint's selectors on pages nobody
    checked (CALLS), run in a worker under the extraction deadline: `name` and its arguments."""
    name: str
    args: tuple


def _core_call(name: str) -> Callable[..., Any]:
    """The core function a CallJob names (only these: the pipe carries names, never code)."""
    if name == "heal":
        from healerd.core.heal.pipeline import heal
        return heal
    if name == "gone_fields":
        from healerd.core.heal.checks.data_gone import gone_fields
        return gone_fields
    if name in ("drift_reason", "page_drift", "page_locus"):
        from healerd.core import drift
        return getattr(drift, name)
    if name == "candidate_relabelled":
        from healerd.core.candidate_headings import candidate_relabelled
        return candidate_relabelled
    if name == "by_telling_feature":
        from healerd.core.telling_feature import by_telling_feature
        return by_telling_feature
    if name == "missing_records":
        from healerd.core.completeness import missing_records
        return missing_records
    if name == "reads_hidden":
        from healerd.core.visible import reads_hidden
        return reads_hidden
    raise ValueError(f"no such page check: {name!r}")


CALLS = ("heal", "gone_fields", "drift_reason", "page_drift", "page_locus", "candidate_relabelled", "reads_hidden",
         "missing_records", "by_telling_feature")


@dataclass(frozen=True)
class HealAnswer:
    result: Any = None             # healerd.core.heal.evidence.HealResult
    error: str | None = None       # the healer crashed: one line


@dataclass(frozen=True)
class PageResult:
    """What a worker sends back: the extraction, or one error line."""
    page_sha: str
    extraction: Extraction | None = None
    error: str | None = None       # the parser failed on this page
    too_large: bool = False        # the error is a work bound the page passed (error class TOO_LARGE)
    snapshot_z: bytes | None = None   # the page as stored (healerd.core.pagecodec): only when page_sha != good_sha
    shape_sample: list | None = None  # validate.last_good_sample of the records, kept if they pass
    locus: str | None = None          # drift.locus_signature of the page: only when page_sha != good_sha


def decode(body: bytes, encoding: str) -> str:
    """The page's text, as the fetch decoded it."""
    try:
        return body.decode(encoding or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def process_page(job: PageJob, html: str | None = None) -> PageResult:
    """Hash, extract and (when changed) compress one page. Never raises for a bad page."""
    raw = job.body if job.body or html is None else html.encode("utf-8", "surrogatepass")   # a trial sends text only
    sha = hashlib.sha256(raw).hexdigest()
    text = html if html is not None else decode(job.body, job.encoding)
    snapshot = None
    try:
        # Elements and nesting are bounded before anything parses the page, items before records are built.
        check_page(text, job.limits.max_elements, job.limits.max_depth)
        snapshot = compress_page(text) if job.snapshot and sha != job.good_sha else None
        bp = _blueprint(job.blueprint_json)
        tree = parse_html(text)
        items: list = []
        extraction = extract(tree, bp, max_items=job.limits.max_items, items_out=items)
    except PageTooLarge as exc:
        return PageResult(page_sha=sha, error=str(exc), too_large=True)
    except Exception as exc:
        return PageResult(page_sha=sha, error=str(getattr(exc, "reason", None) or exc), snapshot_z=snapshot)
    return PageResult(page_sha=sha, extraction=extraction, snapshot_z=snapshot,
                      shape_sample=last_good_sample(extraction.data),
                      locus=_locus(tree, bp, items, snapshot is not None))


def _locus(tree, bp, items: list, changed: bool) -> str | None:
    """The structure the selectors land on (healerd.core.drift), for a page whose bytes changed:
    the Validator compares it with the last good page's. None when unchanged or not computable."""
    if not changed:
        return None
    try:
        return locus_signature(tree, bp, items if bp.items else None)
    except Exception:   # the trigger must never fail a scrape that extracted
        log.debug("locus signature failed", exc_info=True)
        return None


@lru_cache(maxsize=1024)
def _blueprint(body: str):
    return from_json(body)


@dataclass(frozen=True)
class FetchJob:
    """A page to fetch over HTTP and then process (`process_page`): what crosses to a worker
    that fetches as well. Everything the fetch needs travels with the job, so a worker keeps
    no source's state between jobs and a reloaded configuration applies to the next job."""
    url: str
    blueprint_json: str                 # a selector blueprint: its extraction part (Blueprint.extraction_json) will do
    fetch: FetchConfig = FetchConfig()
    headers: dict | None = None         # the blueprint's headers and cookies (sent to its own origin only)
    cookies: dict | None = None
    etag: str | None = None             # a conditional request when the last fetch gave these
    last_modified: str | None = None
    good_sha: str | None = None
    limits: PageLimits = PageLimits()


@dataclass(frozen=True)
class FetchOutcome:
    """What a fetching worker sends back: the fetch's answer (or its error class and one line),
    and when a page arrived, `process_page`'s result and the page's text unless that result
    holds it compressed (`snapshot_z`): a page that passes validation is not needed again, so
    the daemon decompresses one only when it is (ExtractedPage.page_text)."""
    status: int | None = None
    text: str | None = None             # the page as decoded, when page.snapshot_z does not hold it
    not_modified: bool = False
    etag: str | None = None
    last_modified: str | None = None
    permanent_redirect: str | None = None
    error_type: str | None = None       # the fetch failed, or the answer is not a page
    error: str | None = None
    retry_after: float | None = None
    dns_failure: bool = False
    page: PageResult | None = None


# One page parsed at a time per process: the parse holds the GIL, so a second one in parallel
# gains nothing, and each parsed page in flight is a tree of a few MB (a worker of four
# threads peaked at 54 MB parsing four at once). Fetches still overlap their network waits.
_PARSING = threading.Lock()


def fetch_answer(fetcher: Fetcher, url: str, *, headers: dict | None = None, cookies: dict | None = None,
                 etag: str | None = None, last_modified: str | None = None, via: str = "http",
                 wait_for: str | None = None) -> FetchOutcome | FetchResult:
    """Fetch `url`: the page (a FetchResult) when one arrived, else the FetchOutcome that ends the
    scrape there (the fetch's error class and line, a 304, or an answer that is not a page).
    Never raises for a bad fetch."""
    try:
        res = fetcher.fetch(url, headers=headers or None, cookies=cookies or None, etag=etag,
                            last_modified=last_modified, via=via, wait_for=wait_for)
    except FetchError as exc:
        return FetchOutcome(status=exc.status, error_type=exc.error_type, error=exc.message,
                            retry_after=exc.retry_after,
                            dns_failure=exc.error_type == errors.NETWORK and "DNS" in exc.message)
    if res.not_modified:
        return FetchOutcome(status=res.status, not_modified=True, etag=res.etag, last_modified=res.last_modified)
    binary = not_html_reason(res.body, res.headers.get("content-type"))
    if binary:
        return FetchOutcome(status=res.status, error_type=errors.NOT_HTML, error=binary)
    return res


def fetch_and_process(job: FetchJob, fetcher: Fetcher,
                      extracting: Callable[[], AbstractContextManager[None]] = nullcontext) -> FetchOutcome:
    """Fetch `job.url` with `fetcher` and process the page. Never raises for a bad fetch or page.
    `extracting()` is entered once the page has arrived, around its extraction (a worker's
    deadline: see `_serve`)."""
    res = fetch_answer(fetcher, job.url, headers=job.headers, cookies=job.cookies, etag=job.etag,
                       last_modified=job.last_modified)
    if isinstance(res, FetchOutcome):
        return res
    with _PARSING, extracting():
        page = process_page(PageJob(body=res.body, encoding=res.encoding, blueprint_json=job.blueprint_json,
                                    good_sha=job.good_sha, limits=job.limits), html=res.text)
    return FetchOutcome(status=res.status, text=res.text if page.snapshot_z is None else None,
                        etag=res.etag, last_modified=res.last_modified,
                        permanent_redirect=res.permanent_redirect, page=page)


def run_heal(job: HealJob) -> HealAnswer:
    """The built-in healer's answer to `job`. Never raises: a crash is one line."""
    from healerd.core.heal.pipeline import heal

    try:
        return HealAnswer(result=heal(from_json(job.blueprint_json), job.original_html, job.last_good_records,
                                      job.current_html))
    except Exception as exc:
        return HealAnswer(error=f"the built-in healer failed: {type(exc).__name__}: {' '.join(str(exc).split())}")


def run_call(job: CallJob) -> HealAnswer:
    """A CallJob's answer: the function's result, or its failure in one line. Never raises."""
    try:
        return HealAnswer(result=_core_call(job.name)(*job.args))
    except Exception as exc:
        return HealAnswer(error=f"{job.name} failed: {type(exc).__name__}: {' '.join(str(exc).split())}")
