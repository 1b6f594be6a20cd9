"""What the Ledger's writes take and give: one scrape's outcome (`ScrapeOutcome`, from the
Scraper and the Validator) and what a write asks of the actors once committed (`Effects`: the
alerts to raise, and the answer)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ITEM_COUNT_MEMORY = 20   # item counts kept per source (the validator's band)


@dataclass
class ScrapeOutcome:
    """What one scrape produced, from the Scraper and the Validator to the Ledger."""

    name: str
    url: str
    ok: bool
    started_at: float
    finished_at: float
    version: int | None = None
    not_modified: bool = False
    error_type: str | None = None
    error: str | None = None
    status: int | None = None
    data: Any = None
    item_count: int | None = None
    html: str | None = None
    page_sha: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    retry_after: float | None = None
    fingerprint: str | None = None
    permanent_redirect: str | None = None
    dns_failure: bool = False
    request_id: str | None = None
    plan: dict | None = None      # production.Plan.to_dict(): a rollback or merge instead of healing
    snapshot_z: bytes | None = None    # the page already compressed (then `html` may be None)
    profiles: dict | None = None       # field -> value profile widened by this good scrape (value_profile.learn)

    def summary(self, state: str) -> dict:
        return {
            "name": self.name, "ok": self.ok, "error_type": self.error_type, "error": self.error,
            "item_count": self.item_count,
            "records": 0 if (self.data is None or not self.ok) else (len(self.data) if isinstance(self.data, list) else 1),
            "state": state, "version": self.version, "not_modified": self.not_modified,
            "duration_ms": round((self.finished_at - self.started_at) * 1000, 1),
        }


@dataclass
class Effects:
    alerts: list[dict] = field(default_factory=list)
    result: Any = None

    def alert(self, event: str, source: str | None, message: str, level: str = "warning",
              details: dict | None = None, state: str | None = None) -> None:
        self.alerts.append({"event": event, "source": source, "message": message, "level": level,
                            "details": details or {}, "state": state})
