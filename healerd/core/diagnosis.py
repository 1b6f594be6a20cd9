"""The Doctor's diagnosis context: everything a healer is told about a failure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from healerd.core.blueprint import Blueprint


@dataclass
class DiagnosisContext:
    source_name: str
    url: str
    blueprint: Blueprint               # the production blueprint (selectors or code parser)
    version: int | None                # its parser version
    error_type: str                    # healerd.core.errors.*
    error_message: str
    error_traceback: str = ""
    failure_count: int = 0
    last_success_at: float | None = None
    original_html: str | None = None   # the last good page
    current_html: str = ""             # the page that failed
    html_diff: str = ""                # healerd.core.htmldiff.structural_diff(original, current)
    expected_schema: dict[str, str] = field(default_factory=dict)   # field -> type
    actual_output: Any = None          # what the production parser gave on current_html
    last_good_records: Any = None      # what it gave on original_html
    validation_errors: list[str] = field(default_factory=list)
    validation_report: str = ""        # human-readable validation report
    fix_attempts_today: int = 0        # attempts inside the attempt window
    is_quarantined: bool = False
    previous_attempts: list[dict] = field(default_factory=list)  # [{"strategy","outcome","reason","at"}]

    @property
    def current_code(self) -> str:
        """The failing parser: its Python source for code parsers, else the blueprint JSON."""
        return self.blueprint.parser or self.blueprint.to_json()
