"""The daemon's answers to control-socket requests (one method per `op`).

Reads use a per-thread read connection; writes go through the StoreWriter; `run`
and `heal` wait for the actor that produces the outcome. Errors come back as
ControlError with the uniform {"code", "message", "details"} shape.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec

from healerd import __version__
from healerd.actors.messages import ForgetAlerts, ForgetHistory
from healerd.actors.registry import Failure
from healerd.actors.scheduler import HealNow, RunNow
from healerd.adapters.browser import check_source as check_browser_source
from healerd.control.args import whole
from healerd.control.data_ops import DataOps
from healerd.control.names import check_name
from healerd.control.protocol import ControlError, RawJSON
from healerd.core.blueprint import BlueprintError, from_dict
from healerd.core.htmldiff import structural_diff
from healerd.core.timeutil import iso
from healerd.store import alerts as alerts_store
from healerd.store import fixes, probation, records, snapshots, sources, status_pages, versions
from healerd.store.db import connect, data_version
from healerd.store.health_writes import systemic_halt
from healerd.store.ledger import Ledger
from healerd.store.lifecycle import IllegalTransition, human_refusal
from healerd.store.memory import FixMemory, FixMemoryError
from healerd.store.status_rows import StatusRows

P = ParamSpec("P")

if TYPE_CHECKING:
    from healerd.control.host import DaemonHost

RUN_WAIT_S = 180.0
STATUS_PAGE_MAX = 10_000   # rows in one page of the fleet's status
HEAL_WAIT_S = 900.0


def to_control_error(exc: BaseException) -> ControlError:
    if isinstance(exc, ControlError):
        return exc
    if isinstance(exc, sources.SourceNotFound):
        return ControlError("not_found", str(exc), {"name": exc.name})
    if isinstance(exc, versions.VersionNotFound):
        return ControlError("not_found", str(exc))
    if isinstance(exc, BlueprintError):
        return ControlError("invalid_blueprint", f"invalid blueprint: {exc}", {"key": exc.key})
    if isinstance(exc, IllegalTransition):
        return ControlError("illegal_transition", human_refusal(exc.name, exc.trigger, exc.state),
                            {"state": exc.state, "trigger": exc.trigger})
    if isinstance(exc, sources.SourceExists):
        return ControlError("exists", str(exc))
    if isinstance(exc, FixMemoryError):
        return ControlError(exc.code, exc.message, exc.details or {})
    if isinstance(exc, TimeoutError):
        return ControlError("timeout", str(exc) or "timed out")
    return ControlError("internal_error", f"{type(exc).__name__}: {exc}")


def _finite_seconds(value: Any) -> float | None:
    """A JSON number as a finite float; None for anything else (a string, a bool, NaN, and the
    infinity that 1e400 or a 400-digit integer reads as)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        seconds = float(value)
    except OverflowError:
        return None
    return seconds if math.isfinite(seconds) else None


class ControlOps(DataOps):
    def __init__(self, daemon: DaemonHost):
        self.daemon = daemon
        self._local = threading.local()

    @property
    def conn(self):
        c = getattr(self._local, "conn", None)
        if c is None:
            c = connect(self.daemon.db_path)
            self._local.conn = c
        return c

    def handle(self, op: str, args: dict, peer=None):
        fn = getattr(self, f"op_{op}", None)
        if fn is None or not isinstance(op, str):
            raise ControlError("bad_request", f"unknown op {op!r}")
        if not isinstance(args, dict):
            raise ControlError("bad_request", "args must be an object")
        try:
            return fn(**args)
        except TypeError as exc:
            if "argument" in str(exc):
                raise ControlError("bad_request", f"{op}: {exc}") from None
            raise to_control_error(exc) from None
        except ControlError:
            raise
        except sources.SourceNotFound as exc:
            raise self._not_found(exc) from None
        except Exception as exc:
            raise to_control_error(exc) from None

    def _not_found(self, exc: sources.SourceNotFound) -> ControlError:
        """"no source named 'scors'", with the registered names closest to it: did you mean?"""
        err = to_control_error(exc)
        from healerd.core.names_near import closest

        try:
            near = closest(str(exc.name), sources.names_like(self.conn, str(exc.name)))
        except Exception:   # the suggestion is a courtesy: the answer stands without it
            near = []
        if near:
            err = ControlError(err.code, f"{err.message}; did you mean {' or '.join(repr(n) for n in near)}?",
                               {**err.details, "did_you_mean": near})
        return err

    def _write(self, method: Callable[Concatenate[Ledger, P], Any], /, *args: P.args, **kwargs: P.kwargs) -> Any:
        return self.daemon.registry.write(method, *args, **kwargs)

    # -- reading ---------------------------------------------------------------------------
    def op_ping(self):
        return {"version": __version__, "pid": os.getpid(), "started_at": iso(self.daemon.started_at)}

    def op_status(self, name: str | None = None, table: bool = False, limit: int | None = None, offset: int = 0,
                  state: str | list[str] | None = None, after: str | None = None, order: str | None = None):
        offset = whole(offset, "offset", 0)   # 0.0, False: not the default, but not a whole number either
        if name is None and (limit is not None or offset != 0 or state is not None or after is not None
                             or order is not None):
            return self._status_page(limit, offset, state, after, order)
        if name is not None:
            check_name(name)
            if limit is not None or offset != 0 or state is not None or after is not None or order is not None:
                raise ControlError("bad_request", "limit, offset, state, after and order page the fleet: "
                                                  "not with a name")
            out = sources.status_one(self.conn, name)
            src = sources.get(self.conn, name)
            out["events"] = sources.events(self.conn, name, limit=20)
            from healerd.core.routing import fitting_options

            # Only the options the daemon would accept in the source's state and of its origin.
            out["deferred_report"] = fitting_options(json.loads(src["deferred_report"]) if src["deferred_report"]
                                                     else None, out["state"], src["origin"] == "sources_dir")
            out["metrics"] = fixes.metrics(self.conn, name)
            _, bp = versions.production(self.conn, name)
            from healerd.core.blueprint_export import mask_blueprint

            # Secret values masked, the structure never (a field called `code`, the `key`).
            out["blueprint"] = mask_blueprint(bp.to_dict())
            out["every_s"] = src["every_s"]
            out["staged_versions"] = [v["version"] for v in versions.staged(self.conn, name)]
            return out
        # The fleet's status depends on the database alone: while nothing was committed since the
        # last answer on this thread's connection (SQLite's data_version), that answer still holds.
        table = bool(table)
        # fix_attempts_24h moves with the clock too: an answer is reused within its minute only.
        version = (data_version(self.conn), int(time.time() // 60))
        cache = getattr(self._local, "status", None)
        if cache is None or cache[0] != version:
            cache = self._local.status = (version, {})
        if table in cache[1]:
            return cache[1][table]
        by_state = sources.state_counts(self.conn)
        # Each control thread keeps the fleet's rows and re-reads only the sources changed since.
        kept = getattr(self._local, "status_rows", None)
        if kept is None:
            kept = self._local.status_rows = {}
        fleet_rows = kept.get(table) or kept.setdefault(table, StatusRows(table))
        fleet = RawJSON(fleet_rows.json(self.conn))
        # With `table` (what healerctl asks for) the sources come as rows under their column
        # names: a 10,000-source answer is 1.1 MB instead of 2.7 MB and decodes 2.5x faster.
        out = {"columns": list(sources.STATUS_KEYS), "rows": fleet} if table else {"sources": fleet}
        out["summary"] = self._summary(by_state)
        cache[1][table] = out
        return out

    def _summary(self, by_state: dict[str, int]) -> dict:
        """The fleet's summary under every status answer: counts by state, fix metrics, a systemic halt."""
        m = fixes.metrics(self.conn)
        halt_v = systemic_halt(self.conn)
        return {
            "sources": sum(by_state.values()), "by_state": by_state, "fix_success_rate": m["fix_success_rate"],
            "median_recovery_s": m["median_recovery_s"], "systemic_halt": bool(halt_v),
            "halt_reason": halt_v.get("reason") if halt_v else None}

    def _status_page(self, limit, offset, state, after, order) -> dict:
        """One page of the fleet's status (store/status_pages.py): `limit` rows (default and at most
        STATUS_PAGE_MAX) from `offset`, or after the name `after`; only the lifecycle states `state`;
        `order` "name", "attention" (DEGRADED, QUARANTINED, DEAD, then ACTIVE) or "auto" (by name when
        the whole selection fits in the page, else attention first). The summary is the whole fleet's."""
        limit = whole(STATUS_PAGE_MAX if limit is None else limit, "limit", 1, STATUS_PAGE_MAX)
        offset = whole(offset, "offset", 0)
        states = [state] if isinstance(state, str) else state
        if states is not None and (not isinstance(states, list) or not states
                                   or not all(isinstance(x, str) and x.upper() in status_pages.ATTENTION_ORDER
                                              for x in states)):
            raise ControlError("bad_request", f"state must be one or more of "
                                              f"{', '.join(status_pages.ATTENTION_ORDER)}")
        states = None if states is None else [x.upper() for x in states]
        if after is not None:
            check_name(after)
        order = order or "name"
        if order not in (*status_pages.ORDERS, "auto"):
            raise ControlError("bad_request", "order must be name, attention or auto")
        if order == "auto":
            counts = sources.state_counts(self.conn)
            wanted = sum(n for s, n in counts.items() if states is None or s in states)
            order = "name" if wanted <= limit else "attention"
        if order == "attention" and after is not None:
            raise ControlError("bad_request", "after pages by name: use offset with the attention order")
        # By name, each page is a range of the primary key read in one step (store/status_pages.py):
        # no kept copy of the whole fleet, whose first read on a busy daemon took seconds.
        got = status_pages.page(self.conn, limit=limit, offset=offset, order=order, states=states, after=after)
        return {"columns": list(sources.STATUS_KEYS), "rows": RawJSON("[" + ",".join(got["rows"]) + "]"),
                "order": order, "offset": offset, "total": got["total"], "last": got["last"],
                "summary": self._summary(got["by_state"])}

    def op_stats(self, window_s: float = 7 * 86400.0):
        """The fleet's success metrics over the last `window_s` seconds (healerd.core.stats)."""
        from healerd.core.stats import compute
        from healerd.store.stats import window_rows

        window = _finite_seconds(window_s)
        if window is None or not window > 0:
            raise ControlError("bad_request", "window_s must be a finite number of seconds > 0")
        got = window_rows(self.conn, time.time() - window)
        return compute(window_s=window, **got)

    def op_history(self, name: str):
        check_name(name)
        sources.get(self.conn, name)
        entries = (versions.history_entries(self.conn, name) + fixes.history_entries(self.conn, name)
                   + probation.history_entries(self.conn, name))
        entries.sort(key=lambda e: (e["_t"], 0 if e["kind"] == "version" else 1), reverse=True)
        for e in entries:
            e.pop("_t", None)
        return entries

    def op_diff(self, name: str):
        """The structural diff, its page text masked with the source's own secret values too
        (a page may echo the cookies and headers it was sent)."""
        from healerd.core.sanitize import blueprint_secrets, mask_text

        check_name(name)
        src = sources.get(self.conn, name)
        secrets = blueprint_secrets(src["blueprint"])
        out = self._diff(name)
        out["diff"] = mask_text(out["diff"], secrets)
        return out

    def _diff(self, name: str):
        good = snapshots.get(self.conn, name, snapshots.LAST_GOOD)
        cur = snapshots.get(self.conn, name, snapshots.CURRENT)
        if cur is None or (good is not None and cur["fetched_at"] < good["fetched_at"]):
            # No failure since the last good page: show the diff the last fix attempt worked from.
            last_fix = fixes.last_diff(self.conn, name)
            return {"diff": last_fix["diff"] if last_fix else "",
                    "last_good_at": iso(good["fetched_at"]) if good else None,
                    "current_at": iso(good["fetched_at"]) if good else None,
                    "fix_at": last_fix["at"] if last_fix else None}
        return {"diff": structural_diff(good["html"] if good else None, cur["html"]),
                "last_good_at": iso(good["fetched_at"]) if good else None, "current_at": iso(cur["fetched_at"])}

    def op_records(self, name: str, limit: int = 20):
        check_name(name)
        sources.get(self.conn, name)
        # `limit` counts scrapes; each scrape's data comes whole (a listing is never cut).
        return records.latest(self.conn, name, min(whole(limit, "limit", 1), 100_000))

    def op_alerts(self, after_id: int = 0, limit: int = 200, source: str | None = None, since: float | None = None):
        """The alert log after `after_id`, oldest first: only `source`'s, only those raised at or
        after `since` (Unix seconds) when given."""
        limit, after_id = whole(limit, "limit", 1), whole(after_id, "after_id", 0)
        if source is not None:
            check_name(source)
        if since is not None and _finite_seconds(since) is None:
            raise ControlError("bad_request", "since must be a number of seconds since the epoch")
        return alerts_store.since(self.conn, after_id, min(limit, 10_000), source,
                                  None if since is None else float(since))

    # -- writing -------------------------------------------------------------------------
    def op_add(self, name: str, blueprint: dict, url: str | None = None, wait: bool = True):
        """Register a source and (unless `wait` is false) scrape it once: the answer carries that
        scrape's outcome under "scrape", so a source that does not work is said at once."""
        check_name(name)
        bp = from_dict(blueprint, url=url, require_url=True)
        check_browser_source(bp, self.daemon.config.browser)
        result = self._write(Ledger.add_source, name, bp, "cli")
        self.daemon.registry.tell("validator", ForgetHistory(name))
        self.daemon.registry.tell("alerter", ForgetAlerts(name))   # an earlier source of this name is another life
        if not wait:
            return result
        rid = self.daemon.waiters.new()
        self.daemon.registry.tell("scheduler", RunNow(name, rid))
        scrape = self._wait(rid, RUN_WAIT_S, f"the first scrape of {name}")
        return {**result, "scrape": scrape, "state": scrape.get("state", result.get("state"))}

    def op_update(self, name: str, blueprint: dict, url: str | None = None):
        """Replace a source's blueprint (a `human` version), reset its attempt budget, scrape once."""
        check_name(name)
        bp = from_dict(blueprint, url=url or None, require_url=False)
        if not bp.url:
            bp = bp.with_url(sources.get(self.conn, name)["url"])
        try:
            result = self._write(Ledger.replace_blueprint, name, bp)
        except ValueError as exc:
            raise ControlError("refused", str(exc)) from None
        self.daemon.registry.tell("validator", ForgetHistory(name))
        rid = self.daemon.waiters.new()
        self.daemon.registry.tell("scheduler", RunNow(name, rid))
        scrape = self._wait(rid, RUN_WAIT_S, f"the scrape of {name}")
        return {**result, "scrape": scrape, "state": scrape.get("state", result.get("state"))}

    def op_remove(self, name: str):
        check_name(name)
        src = sources.get(self.conn, name)
        if src["origin"] == "sources_dir":
            # Removing it here would be undone by the next reload: the file is the truth.
            folder = self.daemon.config.daemon.sources_dir or "the sources directory"
            files = [os.path.join(folder, name + ext) for ext in (".toml", ".json")
                     if os.path.exists(os.path.join(folder, name + ext))]
            where = " or ".join(files) or f"{name}.toml / {name}.json in {folder}"
            raise ControlError("refused", f"{name} comes from the sources directory: delete {where}, then "
                                          f"`healerctl reload` (or SIGHUP) removes it")
        result = self._write(Ledger.remove_source, name)
        self.daemon.registry.tell("alerter", ForgetAlerts(name))   # a source added again alerts afresh
        return result

    def op_pause(self, name: str):
        check_name(name)
        return self._write(Ledger.set_paused, name, True)

    def op_resume(self, name: str):
        check_name(name)
        return self._write(Ledger.set_paused, name, False)

    def op_unquarantine(self, name: str, reason: str | None = None):
        check_name(name)
        return self._write(Ledger.unquarantine, name, reason or "")

    def op_rollback(self, name: str, to: int | None = None, force: bool = False):
        """A person's rollback: the version is tried on the live page first (by the Deployer, which
        fetches); one that fails it is refused, production kept, unless `force`."""
        from healerd.actors.deployer import TryVersion

        check_name(name)
        target = self._write(Ledger.rollback_target, name, None if to is None else whole(to, "to", 1))
        tried = self.daemon.registry.get("deployer").ask(TryVersion(name, target), timeout=RUN_WAIT_S)
        fails = None if tried.get("passes") is not False else tried.get("reason") or "it fails validation"
        if fails and not force:
            current = sources.current_version(self.conn, name)
            raise ControlError("refused", f"version {target} fails the current page ({fails}); version {current} "
                                          f"stays in production (`--force` rolls back anyway)",
                               {"version": target, "production": current})
        result = self._write(Ledger.rollback, name, target, fails)
        return {**result, "checked": tried.get("passes"), "check": tried.get("reason"), "forced": bool(fails)}

    def op_approve(self, name: str, version: int):
        check_name(name)
        return self._write(Ledger.approve, name, whole(version, "version", 1))

    def op_resume_healing(self):
        return self._write(Ledger.resume_healing)

    def op_reload(self):
        # The same as SIGHUP (config and sources_dir), run by the main loop; answered once it is done.
        return self.daemon.reload_and_wait()

    # -- waiting for actors ----------------------------------------------------------------
    def _wait(self, request_id: str, timeout: float, what: str):
        done, result = self.daemon.waiters.wait(request_id, timeout)
        if not done:
            raise ControlError("timeout", f"{what} did not finish within {timeout:.0f}s; it goes on in the background")
        if isinstance(result, Failure):
            raise to_control_error(result.exc)
        return result

    def op_run(self, name: str, wait: bool = True):
        check_name(name)
        sources.get(self.conn, name)
        if not wait:
            self.daemon.registry.tell("scheduler", RunNow(name))
            return {"queued": True}
        rid = self.daemon.waiters.new()
        self.daemon.registry.tell("scheduler", RunNow(name, rid))
        return self._wait(rid, RUN_WAIT_S, f"the scrape of {name}")

    def op_heal(self, name: str):
        check_name(name)
        sources.get(self.conn, name)
        rid = self.daemon.waiters.new()
        self.daemon.registry.tell("scheduler", HealNow(name, rid))
        result = self._wait(rid, HEAL_WAIT_S, f"healing {name}")
        if isinstance(result, dict) and result.get("outcome") == "promoted":
            # The promotion schedules a scrape with the new version; its outcome is the state the
            # person should see (DEGRADED until that scrape passes, then ACTIVE).
            try:
                rid = self.daemon.waiters.new()
                self.daemon.registry.tell("scheduler", RunNow(name, rid))
                scrape = self._wait(rid, RUN_WAIT_S, f"the scrape of {name} with the promoted version")
                if isinstance(scrape, dict) and scrape.get("state"):
                    result = {**result, "state": scrape["state"]}
            except ControlError:
                pass   # the heal's answer stands; the scrape goes on in the background
        return result

    # -- the fix memory ----------------------------------------------------------------------
    def op_memory_list(self):
        from healerd.store.memory import FixMemory

        return FixMemory(self.conn).list_issues()

    def op_memory_show(self, id: str):
        from healerd.store.memory import FixMemory

        return FixMemory(self.conn).show(id)

    def op_memory_stats(self):
        from healerd.store.memory import FixMemory

        return FixMemory(self.conn).global_stats()

    def op_memory_forget(self, id: str):
        self._write(Ledger.memory, FixMemory.forget, issue_id=id)
        return {"forgotten": id}
