"""What every healerd actor shares: its own database connection and fetcher, opened on
its own thread and closed on stop, and an answer to the watchdog's Ping."""

from __future__ import annotations

import pykka

from healerd.actors.messages import Ping
from healerd.actors.registry import ActorRegistry
from healerd.adapters.fetch import FetchConfig, Fetcher
from healerd.config import Config
from healerd.core.extract import PageLimits
from healerd.store.db import connect, open_db


def fetch_config(config: Config) -> FetchConfig:
    f = config.fetch
    return FetchConfig(timeout=f.timeout, connect_timeout=f.connect_timeout, max_bytes=f.max_bytes,
                       user_agent=f.user_agent)


def page_limits(config: Config) -> PageLimits:
    f = config.fetch
    return PageLimits(max_items=f.max_items, max_elements=f.max_elements, max_depth=f.max_depth)


class ServiceActor(pykka.ThreadingActor):
    """Subclasses set `database` ("read" for a reader connection, "write" for the one writer,
    None for none) and `fetches`, and implement `handle(message)`."""

    database: str | None = "read"
    fetches = False

    def __init__(self, db_path: str | None, config: Config, registry: ActorRegistry):
        super().__init__()
        self.db_path = db_path
        self.config = config
        self.registry = registry
        self.conn = None
        self.fetcher: Fetcher | None = None

    def on_start(self) -> None:
        if self.database == "write":
            self.conn = open_db(self.db_path)
        elif self.database == "read":
            self.conn = connect(self.db_path)
        if self.fetches:
            self.fetcher = Fetcher(fetch_config(self.config), browser=self.registry.browser)
        self.started()

    def started(self) -> None:
        """Set up what needs the connection (runs on the actor's thread)."""

    def on_stop(self) -> None:
        if self.fetcher is not None:
            self.fetcher.close()
        if self.conn is not None:
            self.conn.close()

    def run_parser(self, bp, html: str, limits: PageLimits | None = None, on_overrun=None):
        """The parser `bp` on `html` where untrusted selectors are evaluated: selectors in the trial
        worker with its deadline (TooSlow past it), code in the sandbox (healerd.actors.parser_run.run_parser_on)."""
        from healerd.actors.parser_run import run_parser_on

        return run_parser_on(bp, html, limits, trials=self.registry.trials, on_overrun=on_overrun)

    def bounded(self, name: str, *args):
        """A core page check that evaluates selectors on untrusted pages (healerd.adapters.page_work.CALLS:
        the built-in healer, drift, data gone) in the trial worker with its deadline (TooSlow past it);
        in this thread only when no trial worker is set up (tools and tests)."""
        if self.registry.trials is None:
            from healerd.adapters.page_work import _core_call

            return _core_call(name)(*args)
        return self.registry.trials.call(name, *args)

    def on_receive(self, message):
        if isinstance(message, Ping):
            return True
        return self.handle(message)

    def handle(self, message):
        raise NotImplementedError(f"{type(self).__name__} must handle its messages")
