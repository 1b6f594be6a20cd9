"""A parser run on a page where its code or selectors may be hostile: code parsers in the
sandbox, selectors in the trial worker with its deadline. Used by the Scraper and by every
actor's `ServiceActor.run_parser` (its own module so that `actors.base` and `actors.scraper`
do not import each other)."""

from __future__ import annotations

from healerd.core.blueprint import Blueprint
from healerd.core.extract import Extraction, PageLimits, PageTooLarge, check_page, extract


def run_parser_on(bp: Blueprint, html: str, limits: PageLimits | None = None, *, trials=None,
                  on_overrun=None) -> Extraction:
    """A parser on a page: code parsers in the sandbox; selectors in the trial worker when
    `trials` (healerd.adapters.trials.Trials: a wall-clock deadline, TooSlow past it, `on_overrun`
    called before the worker is killed), else in this process (tools and tests only: the actors
    always pass the daemon's Trials).

    The page's work bounds are checked first (PageTooLarge): elements and nesting before
    anything parses it, then the number of items."""
    limits = limits or PageLimits()
    if trials is not None and not bp.parser:
        return trials.extract(bp, html, limits, on_overrun=on_overrun)
    check_page(html, limits.max_elements, limits.max_depth)
    if bp.parser:
        from healerd.adapters.sandbox import run_parser

        data = run_parser(bp.parser, html)
        if isinstance(data, list) and len(data) > limits.max_items:
            raise PageTooLarge(f"the parser returned {len(data)} records, more than max_items ({limits.max_items})")
        raw = [{k: (None if v is None else str(v)) for k, v in d.items()} for d in data] if isinstance(data, list) \
            else {k: (None if v is None else str(v)) for k, v in data.items()}
        return Extraction(data, raw, len(data) if isinstance(data, list) else None)
    return extract(html, bp, max_items=limits.max_items)
