"""The real ports of the healing ladder (healerd.core.ladder.ports), as the Doctor wires them:
its own read connection, its fetcher, the trial worker, the StoreWriter (fix memory, task queue,
fix_history, healer calls), the Deployer (ask) and the Alerter (tell)."""

from __future__ import annotations

from typing import Any

from healerd.actors.deployer import UNFETCHED, Deploy
from healerd.actors.messages import Alert
from healerd.adapters.fetch import FetchError
from healerd.adapters.trials import TooSlow
from healerd.config import Config
from healerd.core.blueprint import Blueprint
from healerd.core.diagnosis import DiagnosisContext
from healerd.core.extract import Extraction, PageLimits
from healerd.core.ladder.ports import CallCount, FetchedPage, FetchFailed, HealerClient, MemoryMatch, TrialTooSlow
from healerd.store import doctor_reads, fixes, snapshots, sources, value_profiles, versions
from healerd.store.health_writes import systemic_halt
from healerd.store.ledger import Ledger
from healerd.store.memory import FixMemory

DEPLOY_TIMEOUT_S = 300


class StoreReads:
    """SourceReads on the Doctor's own read connection."""

    def __init__(self, conn: Any):
        self.conn = conn

    def source(self, name: str) -> dict | None:
        try:
            return sources.get(self.conn, name)
        except sources.SourceNotFound:
            return None

    def halt(self) -> dict | None:
        return systemic_halt(self.conn)

    def failed_attempts(self, name: str, window: float, after: float | None) -> int:
        from healerd.core.breakers import FAILED_OUTCOMES

        return fixes.attempts_in_window(self.conn, name, window, after=after, outcomes=FAILED_OUTCOMES)

    def production(self, name: str) -> tuple[int, Blueprint]:
        return versions.production(self.conn, name)

    def last_good(self, name: str) -> dict | None:
        return snapshots.get(self.conn, name, snapshots.LAST_GOOD)

    def failing_page(self, name: str) -> dict | None:
        return snapshots.get(self.conn, name, snapshots.CURRENT)

    def value_profiles(self, name: str) -> dict[str, dict]:
        return value_profiles.load(self.conn, name)

    def recent_attempts(self, name: str, since: float | None) -> list[dict]:
        return fixes.recent(self.conn, name, since=since)

    def staged_versions(self, name: str) -> list[int]:
        return [v["version"] for v in versions.staged(self.conn, name)]

    def already_rejected(self, name: str, body: str, since: float | None) -> bool:
        return doctor_reads.rejected_since(self.conn, name, body, since, not_judged=(UNFETCHED,))

    def healer_calls(self, name: str | None, since: float) -> CallCount:
        return CallCount(*doctor_reads.healer_calls_since(self.conn, since, name))

    def budget_alert_at(self, name: str) -> float | None:
        return doctor_reads.budget_paused_at(self.conn, name)

    def state(self, name: str) -> str | None:
        return doctor_reads.source_state(self.conn, name)

    def last_error_type(self, name: str) -> str | None:
        return doctor_reads.last_error_type(self.conn, name)


class LivePages:
    """Pages through the Doctor's fetcher; its FetchError as the ladder's FetchFailed."""

    def __init__(self, fetcher: Any):
        self.fetcher = fetcher

    def fetch(self, url: str, bp: Blueprint | None = None) -> FetchedPage:
        try:
            if bp is None:
                page = self.fetcher.fetch(url)
            else:
                page = self.fetcher.fetch(url, headers=bp.headers or None, cookies=bp.cookies or None,
                                          via=bp.fetch, wait_for=bp.wait_for)
        except FetchError as exc:
            raise FetchFailed(exc.error_type, exc.message, exc.status) from exc
        return FetchedPage(page.url, page.text, page.status, page.permanent_redirect)

    def get_text(self, url: str) -> tuple[int, str]:
        try:
            return self.fetcher.get_text(url)
        except FetchError as exc:
            raise FetchFailed(exc.error_type, exc.message, exc.status) from exc


class TrialWorker:
    """Selectors on untrusted pages through the actor's `run_parser`/`bounded` (the trial worker);
    its TooSlow as the ladder's TrialTooSlow."""

    def __init__(self, actor: Any):
        self.actor = actor

    def run_parser(self, bp: Blueprint, html: str, limits: PageLimits | None = None) -> Extraction:
        try:
            return self.actor.run_parser(bp, html, limits)
        except TooSlow as exc:
            raise TrialTooSlow(str(exc)) from exc

    def bounded(self, name: str, *args: Any) -> Any:
        try:
            return self.actor.bounded(name, *args)
        except TooSlow as exc:
            raise TrialTooSlow(str(exc)) from exc

    def heal(self, bp: Blueprint, original_html: str, last_good_records: Any, current_html: str) -> Any:
        """The built-in healer's HealResult: in the trial worker (in this thread only without one)."""
        trials = self.actor.registry.trials
        try:
            if trials is None:
                from healerd.core.heal.pipeline import heal

                return heal(bp, original_html, last_good_records, current_html)
            return trials.heal(bp, original_html, last_good_records, current_html)
        except TooSlow as exc:
            raise TrialTooSlow(str(exc)) from exc


class WriterMemory:
    """The fix memory, on the StoreWriter's connection (every call may write a usage event)."""

    def __init__(self, registry: Any):
        self.registry = registry

    def search(self, *, error_type: str, host: str, broken_selectors: list[str], diff_sig: str,
               template_sig: str, source_name: str) -> list[MemoryMatch]:
        return self.registry.write(Ledger.memory, FixMemory.search, error_type=error_type, host=host,
                                   broken_selectors=broken_selectors, diff_sig=diff_sig, template_sig=template_sig,
                                   source_name=source_name)

    def bundle(self, issue_id: str, source_name: str) -> dict:
        return self.registry.write(Ledger.memory, FixMemory.get_fix_bundle, issue_id=issue_id,
                                   source_name=source_name)["fix_bundle"]

    def apply(self, blueprint: Blueprint, bundle: dict) -> Blueprint | None:
        from healerd.store.fix_bundles import apply_bundle

        return apply_bundle(blueprint, bundle)

    def record_usage(self, event_type: str, issue_id: str, source_name: str) -> None:
        self.registry.write(Ledger.memory, FixMemory.record_usage, event_type=event_type, issue_id=issue_id,
                            source_name=source_name)

    def confirm(self, issue_id: str, source_name: str, success: bool, notes: str) -> None:
        self.registry.write(Ledger.memory, FixMemory.confirm, issue_id=issue_id, source_name=source_name,
                            success=success, notes=notes)

    def remember(self, ctx: DiagnosisContext, new: Blueprint, *, host: str, diff_sig: str, tmpl: str,
                 broken: list[str]) -> None:
        """Store a promoted fix: the new code parser when the fix brought one (a healer's parser.py),
        else the selector mapping from the old blueprint to the new."""
        import logging

        from healerd.adapters.external import secret_literals
        from healerd.store.fix_bundles import make_parser_bundle, make_selector_bundle

        bundle = make_parser_bundle(ctx.blueprint, new)
        if bundle is not None:
            title = f"{host}: parser for {', '.join(bundle['fields'])} replaced"
        else:
            bundle = make_selector_bundle(ctx.blueprint, new)
            if not bundle.get("fields") and not bundle.get("items"):
                return
            changed = ", ".join(sorted(bundle.get("fields", {}))) or "items"
            title = f"{host}: selectors for {changed} changed"
        res = self.registry.write(Ledger.memory, FixMemory.submit, error_type=ctx.error_type, host=host,
                                  diff_sig=diff_sig, template_sig=tmpl, broken_selectors=broken, fix_bundle=bundle,
                                  source_name=ctx.source_name, title=title,
                                  extra_secrets=list(secret_literals(ctx.blueprint, ctx.url)),
                                  root_cause="the site's markup changed (structural diff signature "
                                             f"{diff_sig or 'n/a'})")
        if isinstance(res, dict) and res.get("status") == "rejected":
            logging.getLogger("healerd.doctor").info("the fix for %s was not stored in the fix memory: %s",
                                                     ctx.source_name, res.get("details") or res.get("reason"))


class ExternalClient:
    """The external healer client ([healer]) and its calls, recorded by the StoreWriter."""

    def __init__(self, config: Config, registry: Any):
        self.config = config
        self.registry = registry

    def client(self) -> HealerClient | None:
        from healerd.adapters.external import HealerConfig
        from healerd.adapters.openai_backend import make_client

        hc = self.config.healer
        if not hc.url:
            return None
        return make_client(HealerConfig(url=hc.url, token=hc.token, timeouts=tuple(hc.timeouts), kind=hc.kind,
                                        model=hc.model, allowed_user=str(hc.allowed_user)))

    def record_call(self, **call: Any) -> None:
        self.registry.write(Ledger.record_healer_call, **call)


class ActorDeployer:
    """The Deployer, asked (it never asks the Doctor back)."""

    def __init__(self, registry: Any):
        self.registry = registry

    def deploy(self, name: str, candidate: Blueprint, origin: str, note: str, page_html: str | None,
               confidence: float | None) -> dict:
        return self.registry.get("deployer").ask(Deploy(name, candidate.to_json(), origin, note,
                                                        page_html=page_html, confidence=confidence),
                                                 timeout=DEPLOY_TIMEOUT_S)


class WriterOutcomes:
    """The task queue, fix_history and the deferred report through the StoreWriter; alerts told to the Alerter."""

    def __init__(self, registry: Any):
        self.registry = registry

    def complete_task(self, task_id: int, context: dict) -> None:
        self.registry.write(Ledger.complete_task, task_id, context)

    def release_task(self, task_id: int, not_before: float) -> None:
        self.registry.write(Ledger.release_task, task_id, not_before)

    def fail_task(self, task_id: int, reason: str) -> None:
        self.registry.write(Ledger.fail_task, task_id, reason)

    def record_fix(self, **fields: Any) -> None:
        self.registry.write(Ledger.record_fix, **fields)

    def schedule_now(self, name: str) -> None:
        self.registry.write(Ledger.schedule_now, name)

    def set_deferred_report(self, name: str, report: dict) -> None:
        self.registry.write(Ledger.set_deferred_report, name, report)

    def alert(self, event: str, source: str | None, message: str, severity: str, details: dict) -> None:
        self.registry.tell("alerter", Alert(event, source, message, severity, details, None))
