"""The daemon: start the actors, serve the control socket, tick, watch, stop.

The main thread owns no business logic. It ticks the Scheduler (pykka has no
timers), pings the actors for the systemd watchdog, replaces an actor that died
(all state is in SQLite, so a fresh one carries on), reloads on SIGHUP, and on
SIGTERM/SIGINT stops within 10 s, putting unfinished work back in the queue.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pykka

from healerd import __version__
from healerd.actors.alerter import Alerter
from healerd.actors.base import fetch_config
from healerd.actors.deployer import Deployer
from healerd.actors.doctor import Doctor
from healerd.actors.feeds import FeedDispatcher
from healerd.actors.messages import ForgetAlerts, ForgetHistory, Ping, Tick
from healerd.actors.registry import ActorRegistry, Failure
from healerd.actors.scheduler import Drain, Scheduler
from healerd.actors.scraper import Scraper
from healerd.actors.store_writer import StoreWriter
from healerd.actors.validator import Validator
from healerd.adapters.browser import check_source as check_browser_source
from healerd.adapters.sdnotify import notify, watchdog_interval
from healerd.adapters.sources_reader import blueprint_json_of, read_files
from healerd.config import Config, ConfigError
from healerd.config import load as load_config
from healerd.control.ops import ControlOps
from healerd.control.protocol import ControlError
from healerd.core.blueprint import Blueprint, BlueprintError
from healerd.core.blueprint_settings import SELECTORS, SETTINGS, file_change
from healerd.core.errors import HealerdError
from healerd.private import UnsafePath, secure_daemon_paths
from healerd.store import source_files, tasks
from healerd.store.db import DatabaseCorrupt, check_integrity, open_db
from healerd.store.db import db_path as make_db_path
from healerd.store.ledger import Ledger
from healerd.store.parsed_files import ParsedFiles
from healerd.waiters import Waiters

log = logging.getLogger("healerd")

LOCK_FILE = "healerd.lock"


class StateDirInUse(HealerdError):
    """Another healerd holds the state dir's lock."""

    def __init__(self, state_dir: str, pid: int | None):
        self.state_dir, self.pid = state_dir, pid
        holder = f"pid {pid}" if pid else "a process whose pid could not be read"
        super().__init__(f"the state dir {state_dir} is in use by another healerd ({holder}); "
                         f"stop it first or give this one its own --state-dir")


def lock_state_dir(state_dir: str | os.PathLike) -> int:
    """One daemon per state dir: an exclusive flock on <state-dir>/healerd.lock, held for the
    daemon's life (the kernel drops it when the process ends, even on kill -9). The holder's pid is
    written in the file so a second daemon can name it. Returns the open descriptor (keep it open);
    raises StateDirInUse when another process holds the lock."""
    import fcntl

    folder = Path(state_dir)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            pid = int(os.pread(fd, 32, 0).decode().strip() or 0) or None
        except (OSError, ValueError):
            pid = None
        os.close(fd)
        raise StateDirInUse(str(folder), pid) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd

SHUTDOWN_BUDGET_S = 6.5      # from the stop signal to the actors stopped (the bound is 10 s: the rest is
                             # for the workers, the requeue and the interpreter's own exit, slow on a busy box)
FLUSH_RESERVE_S = 2.0        # of that, kept for the validator, alerter and writer to finish what they hold
WORKERS_READY_S = 30.0       # "ready" waits this long at most for the extraction workers to start
SOCKET_DRAIN_S = 1.0         # running control requests get this long to be answered at shutdown
PINGED_ROLES = ("writer", "scheduler", "validator", "alerter")
ADD_BATCH = 1000             # sources registered per transaction when a sources_dir is loaded
BROWSER_FETCH = '"fetch":"browser"'   # in a blueprint's JSON (Blueprint.to_json): only such a one needs a browser
EX_CONFIG = 78               # unsafe paths or a corrupt database: restarting cannot help (RestartPreventExitStatus=78)

for _cls in (StoreWriter, Alerter, Scheduler, Scraper, Validator, Doctor, Deployer):
    _cls.use_daemon_thread = True


@dataclass
class PendingBatch:
    """Sources of a sources_dir handed to the writer: `result()` waits for its answer (or `error`
    says why it could not be handed over)."""
    batch: list[tuple[str, Blueprint]]
    result: Callable[[], Any] | None
    error: Exception | None = None


class Daemon:
    def __init__(self, config: Config, state_dir: str, socket_path: str, log_dir: str, config_path: str | None = None):
        self.config = config
        self.config_path = config_path
        self.state_dir = Path(state_dir)
        self.socket_path = socket_path
        self.log_dir = log_dir
        self.db_path = str(make_db_path(state_dir))
        self.registry = ActorRegistry()
        self.waiters = Waiters()
        self.started_at = time.time()
        self._stop = threading.Event()
        self._reload = threading.Event()
        self._factories: dict[str, Callable[[], pykka.ActorRef]] = {}
        self.robots = None
        self.server = None
        self.metrics_server = None   # [metrics] listen: healerd.adapters.metrics.MetricsServer
        self.ops = ControlOps(self)
        self._reload_lock = threading.Lock()
        self._reload_waiters: list[list] = []   # `healerctl reload` requests: [Event, result]
        self._reload_waiters_lock = threading.Lock()
        self._stop_requested_at: float | None = None
        self._lock_fd: int | None = None
        self.workers = None   # healerd.adapters.workers.WorkerPool: extraction processes, or None (in-process)

    # -- start-up --------------------------------------------------------------------
    def secure_paths(self) -> None:
        """Private paths (umask 077, a state dir of ours, owner-only files; a foreign symlink or
        another user's file refused). Raises UnsafePath with the one line to print. Runs before
        anything is created in the state dir, the lock file included."""
        secure_daemon_paths(str(self.state_dir), self.log_dir, self.socket_path, self.db_path)

    def check_storage(self) -> None:
        """A database that passes `PRAGMA quick_check`; DatabaseCorrupt with the one line to print."""
        check_integrity(self.db_path)

    def prepare_database(self) -> dict:
        """Apply the schema, put work a crash left IN_PROGRESS back in the queue."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        conn = open_db(self.db_path)
        try:
            ledger = Ledger(conn, self.config)
            recovered = ledger.recover_tasks()
            orphans = ledger.reject_interrupted_versions()
        finally:
            conn.close()
        if recovered["requeued"] or recovered["failed"]:
            log.warning("resumed after a crash: %d task(s) re-queued, %d given up",
                        len(recovered["requeued"]), len(recovered["failed"]))
        for name, version in orphans:
            log.warning("version %d of %s was staged but never validated (interrupted): marked rejected",
                        version, name)
        return recovered

    def start_actors(self) -> None:
        from healerd.adapters.lean_process import limit_malloc_arenas

        limit_malloc_arenas()   # before the actors' threads start
        from healerd.adapters.browser import BrowserPool
        from healerd.adapters.fetch import Fetcher
        from healerd.adapters.robots import RobotsPolicy

        cfg = self.config
        self.robots = RobotsPolicy(Fetcher(fetch_config(cfg))) if cfg.fetch.respect_robots else None
        reg = self.registry
        # its worker starts on the first browser fetch; its files live in <state dir>/browser
        reg.browser = BrowserPool(cfg.browser, fetch_config(cfg), self.state_dir)
        from healerd.adapters.trials import Trials

        reg.trials = Trials(cfg.daemon.extraction_timeout)   # its worker starts on the first trial
        self._start_workers()
        self._factories = {
            "writer": lambda: StoreWriter.start(self.db_path, cfg, reg, self.waiters),
            "alerter": lambda: Alerter.start(self.log_dir, cfg, reg, self.db_path),
            "validator": lambda: Validator.start(self.db_path, cfg, reg),
            "deployer": lambda: Deployer.start(self.db_path, cfg, reg),
            "doctor": lambda: Doctor.start(self.db_path, cfg, reg, self.waiters),
            "scheduler": lambda: Scheduler.start(self.db_path, cfg, reg, self.robots, self.waiters),
            "feeds": lambda: FeedDispatcher.start(self.db_path, cfg, reg),   # asks the writer at start
        }
        for role, make in self._factories.items():
            reg.set(role, make())
        reg.set_scrapers([Scraper.start(i, cfg, reg, self.robots, self.workers) for i in range(cfg.daemon.scrapers)])

    def _start_workers(self) -> None:
        """The extraction worker processes ([daemon] workers), kept across a reload that keeps their number."""
        from healerd.adapters.fetch import DEADLINE_FACTOR
        from healerd.adapters.workers import WorkerPool, worker_count, worker_threads

        want = worker_count(self.config.daemon.workers)
        threads = worker_threads(self.config.daemon.scrapers, want)
        if self.workers is not None and (self.workers.size, self.workers.threads) == (want, threads) \
                and not self.workers.closed:
            self.workers.extraction_timeout = self.config.daemon.extraction_timeout   # a reload may change it
            return
        self.stop_workers()
        if want > 0:
            # A job is a fetch (bounded by its own deadline) and then a parse.
            self.workers = WorkerPool(want, deadline=self.config.fetch.timeout * (DEADLINE_FACTOR + 3),
                                      threads=threads, extraction_timeout=self.config.daemon.extraction_timeout)

    def _workers_ready(self, timeout: float) -> bool:
        """Wait up to `timeout` for every extraction worker's READY; a stop signal ends the wait
        (True then: there is nothing to warn about)."""
        assert self.workers is not None
        return self.workers.wait_ready(timeout, stop=self._stop) or self._stop.is_set()

    def stop_workers(self) -> None:
        """Stop the extraction worker processes (after the Scrapers: none is waiting on them then)."""
        pool, self.workers = self.workers, None
        if pool is not None:
            pool.close()

    def stop_actors(self, budget: float) -> list[str]:
        """Stop the actors within `budget` seconds, the writer last so every outcome already sent is kept.

        The scheduler drains first (scrapes in flight become due again); the workers that may be
        busy for long (scrapers, Doctor, Deployer) are stopped together, not one after the other;
        one still busy at the deadline is left behind (a daemon thread) and its work re-queued.
        Returns the roles of the actors still running at the deadline.
        """
        deadline = time.time() + budget
        workers_deadline = deadline - min(FLUSH_RESERVE_S, budget / 4)   # the writer's flush keeps its share
        roles = self.registry.roles()
        try:
            self.registry.tell("scheduler", Drain())
        except Exception:
            pass
        waves = [[roles.get("scheduler")],
                 self.registry.scrapers() + [roles.get("doctor"), roles.get("deployer"), roles.get("feeds")],
                 [roles.get("validator")], [roles.get("alerter")], [roles.get("writer")]]
        for i, wave in enumerate(waves):
            until = workers_deadline if i < 2 else deadline
            futures = []
            for ref in wave:
                if ref is None:
                    continue
                try:
                    futures.append(ref.stop(block=False))
                except Exception:
                    pass
            for fut in futures:
                try:
                    fut.get(timeout=max(0.1, until - time.time()))
                except Exception:
                    pass  # still busy (a long fetch or heal): its thread is a daemon thread
        pool, self.registry.browser = self.registry.browser, None
        if pool is not None:
            pool.close()   # a fetch still in flight finishes first; then the browser process ends
        trials, self.registry.trials = self.registry.trials, None
        if trials is not None:
            trials.close()
        return [role for role, ref in roles.items() if ref is not None and ref.is_alive()]

    def check_actors(self) -> None:
        """Replace any actor that died; its work is re-found in SQLite."""
        for role, ref in self.registry.roles().items():
            if not ref.is_alive():
                log.error("the %s actor died; starting a new one", role)
                self.registry.set(role, self._factories[role]())
        for i, ref in enumerate(self.registry.scrapers()):
            if not ref.is_alive():
                log.error("scraper %d died; starting a new one", i)
                self.registry.replace_scraper(i, Scraper.start(i, self.config, self.registry, self.robots,
                                                               self.workers))

    def actors_answer(self, timeout: float = 5.0) -> bool:
        """True when every core actor answers a Ping within `timeout`; gives up early on a stop request."""
        for role in PINGED_ROLES:
            try:
                future = self.registry.get(role).ask(Ping(), block=False)
                deadline = time.time() + timeout
                while True:
                    try:
                        future.get(timeout=0.2)
                        break
                    except pykka.Timeout:
                        if self._stop.is_set():
                            return False
                        if time.time() >= deadline:
                            raise
            except Exception:
                log.warning("the %s actor did not answer a watchdog ping", role)
                return False
        return True

    # -- sources directory and config reload ------------------------------------------
    def reload_sources(self) -> dict:
        """Sync sources_dir: one blueprint file per source, name = file stem."""
        out = {"added": [], "changed": [], "removed": [], "errors": {}}
        d = self.config.daemon.sources_dir
        if not d:
            return out
        with self._reload_lock:
            conn = open_db(self.db_path)
            try:
                known = source_files.registered(conn)
            finally:
                conn.close()
            seen = set()
            new: list[tuple[str, Blueprint]] = []   # sources to add, written ADD_BATCH at a time
            file_of: dict[str, str] = {}             # their file names, for the errors
            folder = Path(d)
            if folder.is_dir():
                # Names as strings, from one scandir: a Path per file and their sort cost seconds at 100k files.
                with os.scandir(folder) as entries:
                    files = sorted(e.name for e in entries if os.path.splitext(e.name)[1] in (".toml", ".json"))
            else:
                out["errors"][str(folder)] = ("sources_dir does not exist (or is not a directory); "
                                              "its sources are kept as they are")
                log.error("sources_dir %s does not exist (or is not a directory)", folder)
                return out   # nothing is removed because a directory went missing
            pending: PendingBatch | None = None   # the batch the writer registers while the next is read
            parsed = ParsedFiles(self.state_dir)   # a file whose bytes did not change is not parsed again
            try:
                for read in read_files(str(folder), files, self.config.daemon.sources_max_bytes):
                    file_name = read.name
                    name = os.path.splitext(file_name)[0]
                    seen.add(name)
                    try:
                        text, bp = blueprint_json_of(read, str(folder), parsed.blueprint_json)
                        if bp is not None or BROWSER_FETCH in text:
                            bp = parsed.blueprint(text, bp)
                            check_browser_source(bp, self.config.browser)
                    except BlueprintError as exc:
                        out["errors"][file_name] = str(exc)
                        log.error("sources_dir: %s: %s", file_name, exc)
                        continue
                    try:
                        if name not in known:
                            new.append((name, parsed.blueprint(text, bp)))
                            file_of[name] = file_name
                            if len(new) >= ADD_BATCH:
                                self._finish_batch(pending, file_of, out)
                                pending = self._start_batch(new)
                        elif known[name]["origin"] == "sources_dir" and known[name]["loaded"] != text:
                            # What the file says is compared with what it said when loaded last (a
                            # file nobody edited is never "changed", after a fix or a rollback either).
                            bp = parsed.blueprint(text, bp)
                            change = file_change(known[name]["loaded"], bp)
                            if change == SETTINGS:
                                # Only settings (every, headers, url, ...): production keeps its selectors.
                                self.registry.write(Ledger.apply_file_settings, name, bp)
                                out["changed"].append(name)
                            elif change == SELECTORS:
                                self.registry.write(Ledger.update_blueprint, name, bp)
                                self.registry.tell("validator", ForgetHistory(name))
                                out["changed"].append(name)
                    except Exception as exc:
                        out["errors"][file_name] = str(exc)
                self._finish_batch(pending, file_of, out)
                self._finish_batch(self._start_batch(new), file_of, out)
                parsed.save()
            finally:
                parsed.close()
            for name, r in known.items():
                if r["origin"] == "sources_dir" and name not in seen:
                    self.registry.write(Ledger.remove_source, name)
                    self.registry.tell("alerter", ForgetAlerts(name))
                    out["removed"].append(name)
        if any(out[k] for k in ("added", "changed", "removed")):
            log.info("sources_dir reloaded: %d added, %d changed, %d removed",
                     len(out["added"]), len(out["changed"]), len(out["removed"]))
        return out

    def _start_batch(self, new: list[tuple[str, Blueprint]]) -> PendingBatch | None:
        """Hand the sources of `new` to the writer, to be registered in one transaction, and empty
        `new`; the caller reads the next files meanwhile (reading and registering 100,000 files
        one after the other took twice as long). None when `new` is empty."""
        if not new:
            return None
        batch = new[:]
        new.clear()
        try:
            return PendingBatch(batch, self.registry.write_soon(Ledger.add_sources, batch, "sources_dir"))
        except Exception as exc:
            return PendingBatch(batch, None, exc)

    def _finish_batch(self, pending: PendingBatch | None, file_of: dict[str, str], out: dict) -> None:
        """Wait for a batch handed to the writer; its sources go to `out` (their errors under their
        file names)."""
        if pending is None:
            return
        try:
            if pending.error is not None:
                raise pending.error
            assert pending.result is not None
            done = pending.result()
        except Exception as exc:
            for name, _ in pending.batch:
                out["errors"][file_of.get(name, name)] = str(exc)
            log.error("sources_dir: %d sources could not be added: %s", len(pending.batch), exc)
            return
        out["added"].extend(done["added"])
        for name in done["added"]:   # an earlier source of that name is another life: its alerts are no repeats
            self.registry.tell("alerter", ForgetAlerts(name))
        for name, error in done["errors"].items():
            out["errors"][file_of.get(name, name)] = error
            log.error("sources_dir: %s: %s", file_of.get(name, name), error)

    def reload(self) -> dict:
        """SIGHUP: re-read the config (restarting the actors with it) and the sources directory."""
        if self.config_path:
            config_error = None
            try:
                new = load_config(self.config_path)
            except ConfigError as exc:
                log.error("config reload failed, keeping the running config: %s", exc)
                new = None
                config_error = f"not loaded, the running config is kept: {exc}"
            if new is not None and new != self.config:
                log.info("config changed: restarting the actors with it")
                still = self.stop_actors(SHUTDOWN_BUDGET_S)
                if {"doctor", "deployer"} & set(still):
                    # A heal still running in the old actors finishes and completes its own task;
                    # re-queued, the new Doctor would take the same task and heal it a second time.
                    log.warning("the old %s is still busy: its fix tasks stay with it (a restart re-queues "
                                "them)", " and ".join(r for r in ("doctor", "deployer") if r in still))
                else:
                    self._requeue_in_progress()
                self.config = new
                logging.getLogger().setLevel(getattr(logging, new.daemon.log_level.upper(), logging.INFO))
                self.start_actors()
                # Requests whose work the old actors held are answered now rather than never.
                self.waiters.fail_all(Failure(ControlError(
                    "unavailable", "healerd restarted its actors for a new configuration; try again")))
            out = self.reload_sources()
            if config_error:
                out["errors"] = {self.config_path: config_error, **out["errors"]}
            return out
        return self.reload_sources()

    def reload_and_wait(self, timeout: float = 25.0) -> dict:
        """`healerctl reload`: the same reload as SIGHUP, done by the main loop; the sources_dir changes."""
        slot: list = [threading.Event(), None]
        with self._reload_waiters_lock:
            self._reload_waiters.append(slot)
        if self._stop.is_set():
            self._answer_reloads(ControlError("unavailable", "healerd is shutting down"))
        self._reload.set()
        if not slot[0].wait(timeout):
            raise TimeoutError(f"the reload did not finish within {timeout:.0f}s; it goes on in the background")
        if isinstance(slot[1], BaseException):
            raise slot[1]
        return slot[1]

    def _answer_reloads(self, result) -> None:
        with self._reload_waiters_lock:
            waiting, self._reload_waiters = self._reload_waiters, []
        for slot in waiting:
            slot[1] = result
            slot[0].set()

    def _run_reload(self) -> None:
        try:
            result = self.reload()
        except Exception as exc:
            log.exception("reload failed")
            result = exc
        self._answer_reloads(result)

    def _requeue_in_progress(self) -> None:
        conn = open_db(self.db_path)
        try:
            tasks.requeue_in_progress(conn)
        finally:
            conn.close()

    # -- the main loop ------------------------------------------------------------------
    def request_stop(self, *_):
        if self._stop_requested_at is None:
            self._stop_requested_at = time.time()
        self._stop.set()

    def request_reload(self, *_):
        self._reload.set()

    def run(self) -> int:
        try:
            self.secure_paths()
        except UnsafePath as exc:
            log.critical("%s; not starting (exit %d)", exc, EX_CONFIG)
            return EX_CONFIG
        self._lock_fd = lock_state_dir(self.state_dir)   # raises StateDirInUse: nothing else is touched
        try:
            return self._run()
        finally:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _run(self) -> int:
        from healerd.adapters.fetch import TLSSetupError, tls_context
        from healerd.adapters.sandbox import log_confinement
        from healerd.control import metrics_host
        from healerd.control.server import ControlServer

        try:
            self.check_storage()
            # Every fetch verifies TLS with it: without it each actor that fetches dies as it starts, in a loop.
            tls_context()
        except (DatabaseCorrupt, TLSSetupError) as exc:
            log.critical("%s; not starting (exit %d)", exc, EX_CONFIG)
            return EX_CONFIG
        log_confinement(log)   # once: the layers confining code parsers, or why they are refused
        self.prepare_database()
        try:   # before the actors: every scrape is counted
            self.metrics_server = metrics_host.start(self.config, str(self.db_path), self.registry)
        except (OSError, metrics_host.MetricsUnavailable) as exc:
            log.critical("[metrics] listen %s: %s; not starting (exit %d)", self.config.metrics.listen, exc, EX_CONFIG)
            return EX_CONFIG
        if self.metrics_server:
            log.info("Prometheus metrics on %s/metrics", self.metrics_server.address)
        self.start_actors()
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)
        signal.signal(signal.SIGHUP, self.request_reload)
        try:
            self.reload_sources()
            group = self.config.daemon.socket_group
            self.server = ControlServer(self.socket_path, self.ops.handle, group=group,
                                        mode=0o660 if group else 0o600)
            self.server.start()
        except Exception as exc:
            log.error("could not start: %s", exc)
            if self.metrics_server:
                self.metrics_server.stop()
            self.stop_actors(2.0)
            self.stop_workers()
            return 1
        # Ready means scraping at full speed: the workers have imported the parser and the fetcher.
        # The socket already answers meanwhile; scrapes due now would only wait for them.
        if self.workers is not None and not self._workers_ready(WORKERS_READY_S):
            log.warning("the extraction workers have not started within %gs; scrapes wait for them",
                        WORKERS_READY_S)
        notify("READY=1")
        notify(f"STATUS=healerd {__version__} serving {self.socket_path}")
        log.info("healerd %s ready: state %s, socket %s, %d scrapers", __version__, self.state_dir,
                 self.socket_path, self.config.daemon.scrapers)
        wd = watchdog_interval()
        last_wd = 0.0
        last_check = time.time()
        code = 0
        try:
            while not self._stop.is_set():
                self._stop.wait(self.config.daemon.tick)
                now = time.time()
                self.registry.tell("scheduler", Tick(now))
                if self._reload.is_set() and not self._stop.is_set():
                    self._reload.clear()
                    self._run_reload()
                if now - last_check >= 1.0:
                    last_check = now
                    self.check_actors()
                if wd and now - last_wd >= wd:
                    last_wd = now
                    if self.actors_answer():
                        notify("WATCHDOG=1")
        except Exception:
            log.exception("the main loop failed")
            code = 1
        notify("STOPPING=1")
        log.info("stopping")
        # Clients waiting on a scrape, a heal or a reload are told now: their work is re-queued below.
        self.waiters.close(Failure(ControlError(
            "unavailable", "healerd is shutting down; unfinished work is re-queued for the next start")))
        self._answer_reloads(ControlError("unavailable", "healerd is shutting down"))
        if self.server:
            self.server.stop(timeout=SOCKET_DRAIN_S)
        if self.metrics_server:
            self.metrics_server.stop()
        spent = time.time() - (self._stop_requested_at or time.time())
        self.stop_actors(max(1.0, SHUTDOWN_BUDGET_S - spent))
        self.stop_workers()
        self._requeue_in_progress()
        log.info("stopped")
        return code


def resolve_paths(state_dir: str | None, socket_path: str | None, log_dir: str | None) -> tuple[str, str, str]:
    from healerd.control.client import default_state_dir

    state = state_dir or default_state_dir()
    if socket_path:
        sock = socket_path
    elif os.environ.get("HEALERD_SOCKET"):
        sock = os.environ["HEALERD_SOCKET"]
    elif os.environ.get("RUNTIME_DIRECTORY"):
        sock = os.path.join(os.environ["RUNTIME_DIRECTORY"].split(":")[0], "healerd.sock")
    else:
        sock = os.path.join(state, "healerd.sock")
    logs = log_dir or (os.environ.get("LOGS_DIRECTORY", "").split(":")[0] or None) or state
    return state, sock, logs
