"""A source healed by an external healer on the real daemon: its config, a source registered and redesigned, and what the database says of the healer's calls, the fixes and production."""

from __future__ import annotations

import json

from tests.support.daemon import FAST_CONFIG, db_rows
from tests.support.sitepages import LISTING_BP, listing_v1, listing_v2, write_blueprint

FIXED = dict(LISTING_BP, items="table.league-table tr.row-player",
             fields={"name": {"css": "td.player-name"}, "score": {"css": "td.pts", "type": "int"}})


HEALER_TOKEN = "hz-Token-4kQ9wX2mP7"


def healer_config(url: str, *, timeouts: str = "[5]", cycles: int = 1, attempts: int = 1, token: str = "",
                  kind: str = "code-healer", model: str = "") -> str:
    """FAST_CONFIG with only the external rung, `attempts` fix attempts, and the healer at `url`."""
    cfg = FAST_CONFIG.replace("[doctor]\nmax_fix_attempts = 3",
                              f'[doctor]\nladder = ["external"]\nmax_fix_attempts = {attempts}')
    assert 'ladder = ["external"]' in cfg
    return cfg + (f'[healer]\nurl = "{url}"\ntimeouts = {timeouts}\ncycles = {cycles}\nkind = "{kind}"\n'
                  f'model = "{model}"\ntoken = "{token}"\n')


def add_and_break(d, site, tmp_path, name="stats", path="/stats", bp=LISTING_BP, new_page=None):
    """Register a source on the v1 listing, scrape it once, then redesign the page."""
    url = site.url(path)
    site.page(path.split("?", 1)[0], listing_v1())
    r = d.ctl("add", name, "--blueprint", write_blueprint(tmp_path / f"{name}.json", url, bp))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", name)["ok"] is True
    site.page(path.split("?", 1)[0], new_page if new_page is not None else listing_v2())


def healer_calls(d, name="stats"):
    return db_rows(d, "SELECT cycle, backend, duration_ms, http_status, outcome, reason FROM healer_calls "
                      "WHERE source_name = ? ORDER BY id", (name,))


def fix_rows(d, name="stats"):
    return db_rows(d, "SELECT strategy, outcome, reason, deployed_to, version FROM fix_history "
                      "WHERE source_name = ? ORDER BY fix_id", (name,))


def production_versions(d, name="stats"):
    return [r["version"] for r in db_rows(d, "SELECT version FROM parser_versions WHERE source_name = ? "
                                             "AND status = 'production'", (name,))]


def assert_running(d):
    assert d.proc.poll() is None, d.log()[-3000:]
    assert d.ctl("status", "--json").returncode == 0


def healed_version(d, name="stats"):
    s = d.ctl_json("status", name)
    return s["version"] if s["state"] == "ACTIVE" and s["version"] > 1 else None


def code_answer(files: dict) -> tuple[int, bytes]:
    """A code healer's answer that rewrote `files`."""
    return 200, json.dumps({"status": "healed", "modified_files": files, "changes_summary": "rewritten"}).encode()
