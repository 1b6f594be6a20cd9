"""The messages actors exchange (see docs/ARCHITECTURE.md for who sends what)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Tick:
    """Main thread -> Scheduler, every [daemon] tick seconds."""
    now: float


@dataclass(frozen=True)
class ScrapeJob:
    """Scheduler -> Scraper: scrape one source now."""
    name: str
    url: str
    host: str
    blueprint_json: str
    version: int | None
    etag: str | None
    last_modified: str | None
    request_id: str | None = None      # a control client waiting for the outcome
    good_sha: str | None = None        # the last good snapshot's page hash: compress the page only when it differs


@dataclass
class ExtractedPage:
    """Scraper -> Validator: the fetched page and what the production parser extracted."""
    job: ScrapeJob
    started_at: float
    finished_at: float
    status: int | None = None
    html: str | None = None
    page_sha: str | None = None
    not_modified: bool = False
    etag: str | None = None
    last_modified: str | None = None
    permanent_redirect: str | None = None
    extraction: Any = None            # healerd.core.extract.Extraction, or None when fetching/parsing failed
    error_type: str | None = None     # set when fetching or parsing failed before validation
    error: str | None = None
    retry_after: float | None = None
    dns_failure: bool = False
    snapshot_z: bytes | None = None   # the page for its snapshot, compressed off the actors' threads (when changed)
    shape_sample: Any = None          # validate.last_good_sample of the extraction, computed with it
    locus: str | None = None          # drift.locus_signature of a changed page, computed with it

    def page_text(self) -> str | None:
        """The page's text: `html`, or when a worker sent the page only compressed, `snapshot_z`
        decompressed (once). Only a page that fails validation is read again."""
        if self.html is None and self.snapshot_z is not None:
            from healerd.core.pagecodec import decompress_page

            self.html = decompress_page(self.snapshot_z)
        return self.html


@dataclass(frozen=True)
class ScraperFree:
    """Scraper -> Scheduler: its job is handed on (to the Validator); it can take the next one.
    The source and its host slot stay held until ScrapeDone."""
    index: int
    name: str


@dataclass(frozen=True)
class ScrapeDone:
    """Validator -> Scheduler: frees the host slot."""
    name: str
    host: str


@dataclass(frozen=True)
class WriteJob:
    """Anyone -> StoreWriter: call method(ledger, *args, **kwargs) in one transaction.

    `method` is a Ledger method, unbound (`Ledger.record_fix`): see ActorRegistry.write."""
    method: Callable[..., Any]
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    request_id: str | None = None     # resolve this waiter with the result
    then: tuple | None = None         # (role, message) told once the write is done, committed or not


@dataclass(frozen=True)
class ForgetHistory:
    """Control/daemon -> Validator: a source's blueprint changed; drop its cached history."""
    name: str


@dataclass(frozen=True)
class ForgetAlerts:
    """Control/daemon -> Alerter: a source was removed or registered; the alerts of an earlier life
    of that name are no repeats of the new one's."""
    name: str


@dataclass(frozen=True)
class Alert:
    """Anyone -> Alerter."""
    event: str
    source: str | None
    message: str
    level: str = "warning"
    details: dict = field(default_factory=dict)
    state: str | None = None


@dataclass(frozen=True)
class HealTask:
    """Scheduler -> Doctor: a claimed FIX_SOURCE task (or a `healerctl heal` request)."""
    task_id: int
    name: str
    context: dict
    request_id: str | None = None
    forced: bool = False              # `healerctl heal`: run even if the last scrape passed


@dataclass(frozen=True)
class Ping:
    """Main thread -> any actor: answered when the actor is alive and not stuck (watchdog)."""
