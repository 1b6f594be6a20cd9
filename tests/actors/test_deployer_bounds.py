"""The Deployer and candidates no person wrote: the real Deployer and StoreWriter actors, a real
SQLite file, a real local site, and the real trial worker process (healerd/adapters/trials.py).

- a candidate from the fix memory or the built-in healer over the static selector bounds is
  refused before it is staged, in one line naming the selector;
- a selector production already has (a person's) is not held against a candidate that keeps it;
- a candidate within the bounds but too slow on the live page is rejected "too slow on this
  page" (recorded before the trial worker is killed), and the healer's same answer, given
  again, is not staged again.
"""

from __future__ import annotations

import pytest

from healerd.actors.deployer import Deploy, Deployer
from healerd.actors.registry import ActorRegistry
from healerd.actors.store_writer import StoreWriter
from healerd.adapters.trials import Trials
from healerd.config import Config
from healerd.core.blueprint import from_dict
from healerd.store.db import connect, open_db
from healerd.store.ledger import Ledger
from healerd.store.sql import rows
from healerd.waiters import Waiters

# A hundred rows: `span div div div tr` backtracks through C(240, 3) div chains for each `tr`, ~0.3 s
# a row on a quiet machine, so it outlasts the 1 s deadline many times over on any machine.
ROWS = "".join(f'<tr class="row"><td class="n">P{i}</td><td class="s">{i}</td></tr>' for i in range(100))
DEEP = "<html><body>" + "<div>" * 240 + f'<table class="t">{ROWS}</table>' + "</div>" * 240 + "</body></html>"
PERSON = {"items": "div:has(div:has(table.t)) tr.row", "fields": {"name": {"css": "td.n"}}}


@pytest.fixture
def deployer(tmp_path, site):
    site.page("/deep", DEEP)
    path = tmp_path / "healerd.db"
    open_db(path).close()
    cfg, reg = Config(), ActorRegistry()
    reg.trials = Trials(timeout=1.0)
    reg.set("writer", StoreWriter.start(str(path), cfg, reg, Waiters()))
    reg.set("deployer", Deployer.start(str(path), cfg, reg))
    url = site.url("/deep")
    reg.write(Ledger.add_source, "deep", from_dict(dict(PERSON, url=url)))
    conn = connect(path)

    def deploy(bp: dict, origin: str) -> dict:
        return reg.get("deployer").ask(Deploy("deep", from_dict(dict(bp, url=url)).to_json(), origin, "cand"),
                                       timeout=60)

    def versions() -> list[dict]:
        return rows(conn, "SELECT version, status, origin, note FROM parser_versions WHERE source_name = 'deep' "
                          "ORDER BY version")

    yield deploy, versions, reg
    conn.close()
    for role in ("deployer", "writer"):
        reg.get(role).stop()
    reg.trials.close()


@pytest.mark.parametrize("origin", ["memory", "builtin", "external"])
def test_a_candidate_over_the_bounds_is_refused_before_it_is_staged(deployer, origin):
    deploy, versions, _ = deployer
    bomb = {"items": "div:has(div:has(div:has(div:has(div:has(td)))))", "fields": {"name": {"css": "td.n"}}}
    got = deploy(bomb, origin)
    assert got["outcome"] == "rejected" and got["version"] is None
    assert got["reason"].startswith("refused before any trial: items: the selector 'div:has(div:has(div:has(")
    assert "nest 5 levels deep" in got["reason"]
    assert [v["version"] for v in versions()] == [1]   # nothing staged


def test_a_persons_own_selector_kept_by_a_candidate_is_not_held_against_it(deployer):
    deploy, versions, reg = deployer
    keeps = dict(PERSON, fields={"name": {"css": "td.n"}, "score": {"css": "td.s", "required": False}})
    got = deploy(keeps, "builtin")
    assert got["version"] == 2 and "refused" not in got["reason"], got
    assert reg.trials.pids()   # it was tried in the trial worker


def test_a_candidate_too_slow_on_the_live_page_is_rejected_and_the_same_answer_not_staged_again(deployer):
    deploy, versions, reg = deployer
    slow = {"items": "span div div div tr", "fields": {"name": {"css": "td.n"}}}   # within the bounds
    reg.trials.extract(from_dict(dict(PERSON, url="http://x/")), "<p>warm</p>")
    victim = reg.trials.pids()[0]
    got = deploy(slow, "external")
    assert got["outcome"] == "rejected" and got["version"] == 2
    assert got["reason"].startswith("too slow on this page (extraction too slow")
    v2 = versions()[1]
    assert v2["status"] == "rejected" and v2["note"].startswith("too slow on this page"), v2
    assert victim not in reg.trials.pids()
    again = deploy({"items": "span  div div div tr", "fields": {"name": {"css": "td.n"}}}, "external")
    assert again["outcome"] == "rejected" and again["version"] is None
    assert "the healer gave this same answer before (version 2, rejected: too slow on this page" in again["reason"]
    assert again["reason"].endswith("not staged again")
    assert [v["version"] for v in versions()] == [1, 2]
