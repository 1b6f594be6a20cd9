"""The fix memory end to end: a change seen once heals everywhere."""

from __future__ import annotations

import json

from tests.support.daemon import FAST_CONFIG, db_rows
from tests.support.healer_server import HealerServer
from tests.support.sitepages import LISTING_BP, listing_v1, listing_v2, write_blueprint

NAMES = ["Ada", "Grace", "Linus", "Margaret", "Ken", "Barbara", "Dennis", "Frances", "Edsger", "Donald",
         "Alan", "Niklaus", "John", "Tony", "Leslie"]


def rows_for(i: int):
    return [(NAMES[(i + k) % len(NAMES)], 10 + i * 3 + k) for k in range(4)]


def listing_v3(rows) -> str:
    """A different redesign from listing_v2: the memory's bundle for v2 does not fit it."""
    body = "".join(f'<tr class="athlete"><td class="athlete-name">{n}</td><td class="athlete-score">{s}</td></tr>'
                   for n, s in rows)
    return (f'<html><head><title>Stats</title></head><body><section class="board"><table class="ranking">'
            f'<tr><th>Name</th><th>Score</th></tr>{body}</table></section></body></html>')



def promoted_fixes(d, name):
    return [h for h in d.ctl_json("history", name) if h["kind"] == "fix" and h["outcome"] == "promoted"]


def test_ten_sources_one_template_change_one_heal_nine_from_memory(site, daemon_factory, tmp_path):
    cfg = FAST_CONFIG.replace("scrapers = 2", "scrapers = 4")
    d = daemon_factory(cfg).start()
    names = [f"p{i}" for i in range(10)]
    for i, name in enumerate(names):
        site.page(f"/p/{i}", listing_v1(rows_for(i)))
        bp = write_blueprint(tmp_path / f"{name}.json", site.url(f"/p/{i}"))
        assert d.ctl("add", name, "--blueprint", bp).returncode == 0
    for name in names:
        assert d.ctl_json("run", name)["ok"] is True
    # One template change behind all ten pages.
    for i in range(10):
        site.page(f"/p/{i}", listing_v2(rows_for(i)))
    d.wait_for(lambda: all(len(promoted_fixes(d, n)) == 1 for n in names), timeout=90,
               what="all ten sources healed")
    strategies = sorted(promoted_fixes(d, n)[0]["strategy"] for n in names)
    assert strategies.count("builtin") == 1 and strategies.count("memory") == 9, strategies
    for i, name in enumerate(names):
        d.wait_for(lambda: d.ctl_json("records", name)[0]["version"] > 1, what=f"records of {name}")  # noqa: B023 - called within this iteration
        rec = d.ctl_json("records", name)[0]
        assert rec["data"][0] == {"name": rows_for(i)[0][0], "score": rows_for(i)[0][1]}
        # Each was promoted after its own validation: a staged version with a validation result.
        v = db_rows(d, "SELECT validation FROM parser_versions WHERE source_name = ? AND status = 'production'",
                    (name,))[0]
        assert v["validation"] and '"promote"' in v["validation"]
    issues = d.ctl_json("memory")
    assert len(issues) == 1
    assert issues[0]["verification_count"] >= 9
    assert set(issues[0]["affected_sources"]) == set(names)
    # Each of the nine reuses retrieved the bundle before applying it.
    usage = d.ctl_json("memory", "show", issues[0]["issue_id"])["usage"]
    assert usage["total_fix_retrieved"] >= 9 and usage["total_fix_retrieved"] >= usage["total_fix_applied"] >= 9


def test_a_bundle_that_fails_on_a_source_loses_confidence_and_is_not_retried_there(site, daemon_factory, tmp_path):
    d = daemon_factory().start()
    site.page("/a", listing_v1(rows_for(0)))
    site.page("/b", listing_v1(rows_for(1)))
    for name, path in (("a", "/a"), ("b", "/b")):
        assert d.ctl("add", name, "--blueprint", write_blueprint(tmp_path / f"{name}.json", site.url(path))).returncode == 0
        assert d.ctl_json("run", name)["ok"] is True
    # A changes one way: healed by the built-in healer, remembered.
    site.page("/a", listing_v2(rows_for(0)))
    d.wait_for(lambda: promoted_fixes(d, "a"), what="a healed")
    issue = d.ctl_json("memory")[0]
    before = d.ctl_json("memory", "show", issue["issue_id"])
    # B changes another way: the remembered bundle is offered, fails B's validation, B heals another way.
    site.page("/b", listing_v3(rows_for(1)))
    d.wait_for(lambda: promoted_fixes(d, "b"), what="b healed")
    assert promoted_fixes(d, "b")[0]["strategy"] == "builtin"
    after = d.ctl_json("memory", "show", issue["issue_id"])
    assert after["confidence_score"] < before["confidence_score"]
    assert after["failure_count"] == before["failure_count"] + 1
    tries_on_b = db_rows(d, "SELECT count(*) AS n FROM memory_confirmations WHERE issue_id = ? AND source_name = 'b'",
                         (issue["issue_id"],))[0]["n"]
    assert tries_on_b == 1
    # B breaks again the same way as A did: the failed bundle is not offered to B again.
    site.page("/b", listing_v2(rows_for(1)))
    d.wait_for(lambda: len(promoted_fixes(d, "b")) == 2, what="b healed again")
    assert db_rows(d, "SELECT count(*) AS n FROM memory_confirmations WHERE issue_id = ? AND source_name = 'b'",
                   (issue["issue_id"],))[0]["n"] == 1


def test_a_bundle_is_not_blamed_when_the_page_could_not_be_fetched_to_validate_it(site, daemon_factory, tmp_path):
    d = daemon_factory().start()
    site.page("/a", listing_v1(rows_for(0)))
    site.page("/b", listing_v1(rows_for(1)))
    for name, path, every in (("a", "/a", 1), ("b", "/b", 3600)):
        bp = write_blueprint(tmp_path / f"{name}.json", site.url(path), dict(LISTING_BP, every=every))
        assert d.ctl("add", name, "--blueprint", bp).returncode == 0
        assert d.ctl_json("run", name)["ok"] is True
    site.page("/a", listing_v2(rows_for(0)))
    d.wait_for(lambda: promoted_fixes(d, "a"), what="a healed")
    issue = d.ctl_json("memory")[0]
    before = d.ctl_json("memory", "show", issue["issue_id"])
    # B gets A's redesign. Its page answers the scrape and the Doctor's diagnosis, then one
    # HTTP 500 — to the Deployer validating the remembered bundle — then works again.
    v2 = listing_v2(rows_for(1)).encode()
    headers = {"Content-Type": "text/html; charset=utf-8"}
    served = []

    def good():
        served.append(200)
        if len(served) == 2:
            with site.lock:
                site.pages["/b"] = (500, headers, down)
        return v2

    def down():
        served.append(500)
        with site.lock:
            site.pages["/b"] = (200, headers, v2)
        return b"<html><body>internal error</body></html>"

    with site.lock:
        site.pages["/b"] = (200, headers, good)
    d.ctl("run", "b")
    d.wait_for(lambda: promoted_fixes(d, "b"), what="b healed")
    assert served[:3] == [200, 200, 500]
    # The remembered bundle was staged and could not be judged; the built-in healer's same
    # candidate was then validated and promoted in the same attempt.
    tried = db_rows(d, "SELECT version, origin, status, note FROM parser_versions WHERE source_name = 'b' "
                       "AND version > 1 ORDER BY version")
    assert [(v["origin"], v["status"]) for v in tried] == [("memory", "rejected"), ("builtin", "production")]
    assert tried[0]["note"].startswith("could not fetch the live page to validate: HTTP 500")
    # Nothing was learnt about the bundle: no failure recorded, still offered to B.
    after = d.ctl_json("memory", "show", issue["issue_id"])
    assert after["failure_count"] == before["failure_count"] == 0
    assert after["confidence_score"] >= before["confidence_score"]
    assert db_rows(d, "SELECT count(*) AS n FROM memory_confirmations WHERE issue_id = ? AND source_name = 'b' "
                      "AND success = 0", (issue["issue_id"],))[0]["n"] == 0


PARSER_V1 = """from selectolax.lexbor import LexborHTMLParser

def parse(html):
    rows = LexborHTMLParser(html).css('table.stats tr.player')
    return [{'name': r.css_first('td.name').text(), 'score': r.css_first('td.score').text()} for r in rows]
"""
# What a code healer writes for listing_v2's redesign.
PARSER_V2 = PARSER_V1.replace("table.stats tr.player", "table.league-table tr.row-player") \
    .replace("td.name", "td.player-name").replace("td.score", "td.pts")
CODE_BP = {"every": "1s", "fields": {"name": {}, "score": {"type": "int"}}, "parser": PARSER_V1}


def test_three_code_parser_sources_one_external_heal_two_from_memory(site, daemon_factory, tmp_path):
    healer = HealerServer(lambda req: (200, json.dumps({
        "status": "healed", "modified_files": {"parser.py": PARSER_V2},
        "changes_summary": "parser rewritten for the new table"}).encode()))
    try:
        cfg = FAST_CONFIG.replace("[doctor]", '[doctor]\nladder = ["memory", "external"]') + \
            f'[healer]\nurl = "{healer.url}"\ntimeouts = [10]\ncycles = 1\n'
        d = daemon_factory(cfg).start()
        names = [f"c{i}" for i in range(3)]
        for i, name in enumerate(names):
            site.page(f"/c/{i}", listing_v1(rows_for(i)))
            bp = write_blueprint(tmp_path / f"{name}.json", site.url(f"/c/{i}"), CODE_BP)
            assert d.ctl("add", name, "--blueprint", bp).returncode == 0
        for name in names:
            assert d.ctl_json("run", name)["ok"] is True
        # One template change behind the three pages.
        for i in range(3):
            site.page(f"/c/{i}", listing_v2(rows_for(i)))
        d.wait_for(lambda: all(len(promoted_fixes(d, n)) == 1 for n in names), timeout=90,
                   what="all three sources healed")
        assert len(healer.requests) == 1
        strategies = sorted(promoted_fixes(d, n)[0]["strategy"] for n in names)
        assert strategies == ["external", "memory", "memory"], strategies
        for i, name in enumerate(names):
            d.wait_for(lambda: d.ctl_json("records", name)[0]["version"] > 1, what=f"records of {name}")  # noqa: B023 - called within this iteration
            assert d.ctl_json("records", name)[0]["data"][0]["name"] == rows_for(i)[0][0]
            # Each runs the healer's parser in production, promoted after its own validation.
            v = db_rows(d, "SELECT body, validation FROM parser_versions WHERE source_name = ? "
                           "AND status = 'production'", (name,))[0]
            body = json.loads(v["body"])
            assert body["parser"] == PARSER_V2 and body["url"] == site.url(f"/c/{i}")
            assert v["validation"] and '"promote"' in v["validation"]
        issues = d.ctl_json("memory")
        assert len(issues) == 1
        assert issues[0]["verification_count"] >= 3
        assert set(issues[0]["affected_sources"]) == set(names)
        shown = d.ctl_json("memory", "show", issues[0]["issue_id"])
        assert shown["fix_bundle"]["kind"] == "parser" and shown["fix_bundle"]["parser"] == PARSER_V2
        assert shown["usage"]["total_fix_applied"] == 2 and shown["usage"]["total_resolved"] == 2
    finally:
        healer.stop()
