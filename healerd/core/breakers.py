"""The breakers as pure functions over plain data: the attempt budget, quarantine, the systemic halt.

The Doctor (before an attempt) and the Ledger (after one) both ask these, so the rule is
written once:

- The attempt budget counts FAILED attempts (rejected or crashed) in the attempt window. A
  promotion spends none: runaway automatic changes are the review flag's job, not the budget's.
  After a quarantine expires the source gets one retry only.
- A source that has never passed validation has no good past to heal towards: it is never
  healed or relocated.
- The systemic halt is about *our* side: the same failure fingerprint (which never includes the
  host) on `threshold` distinct hosts within the window. One site's outage or template change,
  however many sources it hosts, never halts the fleet.
"""

from __future__ import annotations

from collections.abc import Iterable

FAILED_OUTCOMES = ("rejected", "error")
NEVER_SCRAPED = "never scraped successfully: check the URL and blueprint"


def attempt_budget(max_fix_attempts: int, retry_only: bool) -> int:
    """How many failed attempts the window allows: one after a quarantine expired, else the configured number."""
    return 1 if retry_only else max(0, int(max_fix_attempts))


def budget_spent(failed_in_window: int, budget: int) -> bool:
    """True when no further attempt may run: the failed attempts reached the budget."""
    return failed_in_window >= budget


def should_quarantine(outcome: str, failed_in_window: int, budget: int, state: str) -> bool:
    """After a recorded attempt: a failed one that spends the last of the budget quarantines a DEGRADED source."""
    return outcome in FAILED_OUTCOMES and state == "DEGRADED" and budget_spent(failed_in_window, budget)


def has_good_past(success_count: int | None) -> bool:
    """Healing needs something to heal towards: at least one scrape that passed validation."""
    return success_count is not None and success_count > 0


def systemic_hosts(failures: Iterable[tuple[str | None, str | None]], fingerprint: str | None) -> list[str]:
    """The distinct hosts among `failures` ((host, fingerprint) pairs, already in the window) failing as `fingerprint`."""
    if not fingerprint:
        return []
    return sorted({host for host, fp in failures if fp == fingerprint and host})


def systemic_halt(failures: Iterable[tuple[str | None, str | None]], fingerprint: str | None,
                  threshold: int) -> list[str] | None:
    """The hosts that make it systemic (halt healing), or None: `threshold` distinct hosts failing the same way."""
    hosts = systemic_hosts(failures, fingerprint)
    return hosts if threshold > 0 and len(hosts) >= threshold else None


def spent_phrase(failed: int, window: str) -> str:
    """The words the QUARANTINED alert and the lifecycle reason share."""
    return f"{failed} fix attempt{'s' if failed != 1 else ''} failed in {window}"


def data_gone_phrase(attempts: int, window: str, fields: list[str]) -> str:
    """The QUARANTINED words when the last attempt found the data gone: not a failure to heal."""
    return (f"{attempts} fix attempt{'s' if attempts != 1 else ''} in {window} found the data for "
            f"{', '.join(fields)} gone from the page")
