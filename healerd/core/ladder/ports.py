"""What the healing ladder is given: its settings, its ports (small protocols: the I/O it needs)
and the state of one attempt.

The ladder decides; the ports read and write. The Doctor actor wires the real ones (the
store's reads, the fetcher, the trial worker, the fix memory and the Deployer through the
actors, the external healer's client); the unit tests wire in-memory ones.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from healerd.core.blueprint import Blueprint
from healerd.core.diagnosis import DiagnosisContext
from healerd.core.errors import HealerdError
from healerd.core.extract import Extraction, PageLimits


@dataclass(frozen=True)
class LadderSettings:
    """The part of the configuration the ladder reads ([doctor] and [healer])."""
    enabled: bool = True
    max_fix_attempts: int = 3
    attempt_window: float = 86400.0
    ladder: tuple[str, ...] = ("memory", "builtin", "external")
    healer_configured: bool = False        # [healer] url is set
    healer_kind: str = "code-healer"
    healer_cycles: int = 5
    healer_timeouts: tuple[float, ...] = (30, 45, 60, 90, 120)
    daily_budget_per_source: int = 10
    daily_budget_total: int = 100
    limits: PageLimits = field(default_factory=PageLimits)


# -- what the ports answer ----------------------------------------------------------------------

@dataclass(frozen=True)
class FetchedPage:
    url: str
    text: str
    status: int = 200
    permanent_redirect: str | None = None


class FetchFailed(HealerdError):
    """A fetch that failed (the fetcher's error, as the ladder needs it)."""

    def __init__(self, error_type: str, message: str, status: int | None = None):
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.status = status


class TrialTooSlow(HealerdError):
    """Selectors ran past the trial worker's deadline on this page; `str()` is its one line."""


@dataclass(frozen=True)
class CallCount:
    """External healer calls in a window: how many, the first and the newest start."""
    n: int
    first: float | None
    last: float | None


class MemoryMatch(Protocol):
    @property
    def issue_id(self) -> str: ...
    @property
    def canonical_title(self) -> str: ...


class HealerAnswer(Protocol):
    """One external healer cycle's answer (adapters.external.CycleResult)."""
    ok: bool
    outcome: str
    reason: str
    blueprint: Blueprint | None
    changes_summary: str
    http_status: int | None
    duration_ms: float


class HealerClient(AbstractContextManager["HealerClient"], Protocol):
    def heal_cycle(self, ctx: DiagnosisContext, cycle: int, history: list[dict]) -> HealerAnswer: ...


# -- the ports ----------------------------------------------------------------------------------

class SourceReads(Protocol):
    """What is known of a source and of the fleet (the store's reads)."""

    def source(self, name: str) -> dict | None:
        """The source's row with its health (None when it was removed)."""
    def halt(self) -> dict | None:
        """The systemic halt in force ({"reason", ...}), or None."""
    def failed_attempts(self, name: str, window: float, after: float | None) -> int:
        """Failed attempts of `name` in the last `window` seconds and after `after`."""
    def production(self, name: str) -> tuple[int, Blueprint]: ...
    def last_good(self, name: str) -> dict | None:
        """The last good page: {"html", "records", "fetched_at", "status_code", ...} or None."""
    def failing_page(self, name: str) -> dict | None:
        """The page of the newest failing scrape, same shape, or None."""
    def value_profiles(self, name: str) -> dict[str, dict]:
        """field -> the value profile learned from the source's good scrapes (core.value_profile)."""
    def recent_attempts(self, name: str, since: float | None) -> list[dict]:
        """The newest fix attempts (newest first)."""
    def staged_versions(self, name: str) -> list[int]: ...
    def already_rejected(self, name: str, body: str, since: float | None) -> bool:
        """This blueprint was judged and rejected for `name` since `since`."""
    def healer_calls(self, name: str | None, since: float) -> CallCount:
        """External healer calls since `since`: of `name`, or of the fleet when None."""
    def budget_alert_at(self, name: str) -> float | None:
        """When the newest BUDGET_PAUSED alert of `name` was raised."""
    def state(self, name: str) -> str | None: ...
    def last_error_type(self, name: str) -> str | None: ...


class Pages(Protocol):
    """The live site. Both raise FetchFailed."""

    def fetch(self, url: str, bp: Blueprint | None = None) -> FetchedPage:
        """`url` as a scrape of `bp` fetches it (its headers, cookies, browser), or plainly."""
    def get_text(self, url: str) -> tuple[int, str]:
        """A plain GET: status and text (sitemap.xml)."""


class Trials(Protocol):
    """Selectors on pages nobody checked, under a deadline (TrialTooSlow past it)."""

    def run_parser(self, bp: Blueprint, html: str, limits: PageLimits | None = None) -> Extraction: ...
    def bounded(self, name: str, *args: Any) -> Any:
        """One of the core's page checks by name (page_drift, gone_fields, heal)."""
    def heal(self, bp: Blueprint, original_html: str, last_good_records: Any, current_html: str) -> Any:
        """The built-in healer's HealResult."""


class FixMemory(Protocol):
    def search(self, *, error_type: str, host: str, broken_selectors: list[str], diff_sig: str,
               template_sig: str, source_name: str) -> list[MemoryMatch]: ...
    def bundle(self, issue_id: str, source_name: str) -> dict:
        """The issue's fix bundle (retrieving it is a usage event); raises when the issue is gone."""
    def apply(self, blueprint: Blueprint, bundle: dict) -> Blueprint | None:
        """`bundle` applied to `blueprint` (None when it changes nothing there)."""
    def record_usage(self, event_type: str, issue_id: str, source_name: str) -> None: ...
    def confirm(self, issue_id: str, source_name: str, success: bool, notes: str) -> None: ...
    def remember(self, ctx: DiagnosisContext, new: Blueprint, *, host: str, diff_sig: str, tmpl: str,
                 broken: list[str]) -> None:
        """Submit a promoted fix (from `ctx.blueprint` to `new`) to the fix memory."""


class ExternalHealer(Protocol):
    def client(self) -> HealerClient | None:
        """A client for this attempt, None when none is configured."""
    def record_call(self, *, name: str, cycle: int, backend: str, started_at: float, duration_ms: float,
                    http_status: int | None, outcome: str, reason: str) -> None: ...


class Deployer(Protocol):
    def deploy(self, name: str, candidate: Blueprint, origin: str, note: str, page_html: str | None,
               confidence: float | None) -> dict:
        """Stage, judge on the live page, promote or reject: {"outcome", "version", "reason",
        "validation", "conclusive"}."""


class Outcomes(Protocol):
    """Where an attempt's outcome goes: the task queue, fix_history, alerts."""

    def complete_task(self, task_id: int, context: dict) -> None: ...
    def release_task(self, task_id: int, not_before: float) -> None: ...
    def fail_task(self, task_id: int, reason: str) -> None: ...
    def record_fix(self, **fields: Any) -> None: ...
    def schedule_now(self, name: str) -> None: ...
    def set_deferred_report(self, name: str, report: dict) -> None: ...
    def alert(self, event: str, source: str | None, message: str, severity: str, details: dict) -> None: ...


@dataclass
class LadderPorts:
    reads: SourceReads
    pages: Pages
    trials: Trials
    memory: FixMemory
    healer: ExternalHealer
    deployer: Deployer
    outcomes: Outcomes
    clock: Callable[[], float]


@dataclass
class Attempt:
    """One attempt's state, shared by the rungs."""
    name: str
    episode_start: float | None = None
    failed_fields: list[str] = field(default_factory=list)
    page_html: str | None = None          # the page candidates are made for (sent with each Deploy)
    deployed: int = 0                     # candidates staged by the Deployer in this attempt
    best_guess: tuple[Blueprint, str] | None = None   # a refusal's best guess, staged when nothing healed
    suggested: Blueprint | None = None    # a refusal's blueprint without the gone fields, for the report
    tried: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)   # the fields whose data is gone
