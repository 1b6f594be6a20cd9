"""The control ops that take data out: new scrapes as they land, change sets, the feeds.

A mixin of ControlOps (healerd/control/ops.py): it reads through that class's per-thread
read connection (`self.conn`) and the running daemon's configuration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from healerd.control.args import whole
from healerd.control.names import check_name
from healerd.control.protocol import ControlError
from healerd.core.sanitize import mask_url, reveal
from healerd.core.timeutil import iso
from healerd.store import feeds as feeds_store
from healerd.store import records, sources

if TYPE_CHECKING:
    from healerd.control.host import DaemonHost
    from healerd.store.db import Connection


class DataOps:
    daemon: DaemonHost
    conn: Connection

    def _source(self, name: Any) -> str:
        check_name(name)
        sources.get(self.conn, name)   # SourceNotFound: "not_found"
        return name

    def op_records_since(self, name: str, after_id: int | None = None, limit: int = 100, backlog: int = 0):
        """The source's scrapes stored after `after_id`, oldest first, each with its `id` and whole
        (`limit` counts scrapes). Without `after_id`: the newest `backlog` scrapes (none by default),
        and the id to follow from (`healerctl records NAME --follow [--limit N]`)."""
        name = self._source(name)
        limit = whole(limit, "limit", 1)
        if after_id is None:
            last = records.last_id(self.conn)
            backlog = whole(backlog, "backlog", 0)
            got = records.newest_ids(self.conn, name, min(backlog, 100_000)) if backlog else []
            return {"last_id": max([last, *(r["id"] for r in got)]), "records": got}
        after_id = whole(after_id, "after_id", 0)
        got = records.since(self.conn, name, after_id, min(limit, 1000))
        return {"last_id": got[-1]["id"] if got else after_id, "records": got}

    def op_export(self, name: str):
        """The production blueprint as a file `add` accepts, with the keys whose secret values were
        left out (`healerctl export`)."""
        from healerd.core.blueprint_export import exportable
        from healerd.store import versions

        name = self._source(name)
        version, bp = versions.production(self.conn, name)
        d, left_out = exportable(bp.to_dict())
        return {"name": name, "version": version, "blueprint": d, "left_out": left_out}

    def op_try(self, blueprint: dict, url: str | None = None):
        """Fetch (or render) the blueprint's page once, read it and validate the records as a first
        scrape would be; nothing is registered or stored (`healerctl try`)."""
        from healerd.actors.deployer import TryBlueprint
        from healerd.adapters.browser import check_source as check_browser_source
        from healerd.core.blueprint import from_dict

        bp = from_dict(blueprint, url=url, require_url=True)
        check_browser_source(bp, self.daemon.config.browser)
        return self.daemon.registry.get("deployer").ask(TryBlueprint(bp.to_json()), timeout=180.0)

    def op_suggest(self, url: str, examples: dict, fetch: str = "http"):
        """A blueprint reading the record(s) the example values belong to on the page at `url`
        (healerd.core.suggest); nothing is registered."""
        from healerd.actors.deployer import FetchPage
        from healerd.core.blueprint import check_url
        from healerd.core.suggest import SuggestError, suggest

        url = check_url(url)
        if (not isinstance(examples, dict) or not examples
                or not all(isinstance(k, str) and k.strip() and isinstance(v, str) and v.strip()
                           for k, v in examples.items())):
            raise ControlError("bad_request", "examples must be an object of field names to non-empty values")
        if fetch not in ("http", "browser"):
            raise ControlError("bad_request", "fetch must be \"http\" or \"browser\"")
        got = self.daemon.registry.get("deployer").ask(FetchPage(url, fetch), timeout=180.0)
        assert isinstance(got, dict)
        if got.get("error"):
            raise ControlError("refused", f"could not fetch {url}: {got['error']}")
        try:
            found = suggest(got["html"], examples, url=url)
        except SuggestError as exc:
            raise ControlError("refused", str(exc)) from None
        out = found.to_dict()
        if fetch == "browser":
            out["blueprint"]["fetch"] = "browser"
        return out

    def op_changes(self, name: str, limit: int = 20, all: bool = False):
        """Change sets between consecutive stored scrapes, newest first (only those with a change
        unless `all`)."""
        name = self._source(name)
        return records.changes_of(self.conn, name, min(whole(limit, "limit", 1), 100_000), every=bool(all))

    def op_feeds(self):
        """The configured feeds: target (masked), sources, cursor, backlog, delivered, last error."""
        from healerd.actors.feeds import source_matcher

        state = feeds_store.all_rows(self.conn)
        out = []
        for f in self.daemon.config.feeds:
            r = state.get(f.name) or {}
            cursor = r.get("cursor")
            out.append({
                "name": f.name, "kind": f.kind,
                "target": mask_url(reveal(f.url)) if f.kind == "webhook" else f.path,
                "sources": list(f.sources), "only_changes": f.only_changes, "cursor": cursor,
                "backlog": None if cursor is None else feeds_store.backlog(self.conn, cursor,
                                                                           source_matcher(f.sources), f.only_changes),
                "delivered": r.get("delivered", 0),
                "last_delivered_at": iso(r["last_delivered_at"]) if r.get("last_delivered_at") else None,
                "failing_since": iso(r["failing_since"]) if r.get("failing_since") else None,
                "last_error": r.get("last_error"),
                "last_error_at": iso(r["last_error_at"]) if r.get("last_error_at") else None,
            })
        return out
