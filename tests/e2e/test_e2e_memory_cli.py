"""`healerctl memory` against the real daemon, after a real heal filled the fix memory."""

from __future__ import annotations

import pytest

from tests.support.daemon import DaemonProc
from tests.support.site import Site
from tests.support.sitepages import listing_v1, listing_v2, write_blueprint

SUMMARY_KEYS = {"issue_id", "canonical_title", "error_type", "host", "confidence_score", "verification_count",
                "failure_count", "affected_sources", "last_confirmed_at", "status"}


def heal_stats(site, d, tmp_path):
    """Add `stats` to daemon `d` and let the built-in healer heal its redesign: one issue in the memory."""
    site.page("/stats", listing_v1())
    r = d.ctl("add", "stats", "--blueprint", write_blueprint(tmp_path / "stats.json", site.url("/stats")))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "stats")["ok"] is True
    assert d.ctl_json("memory") == []
    site.page("/stats", listing_v2())
    d.wait_for(lambda: any(h["kind"] == "fix" and h["outcome"] == "promoted" for h in d.ctl_json("history", "stats")),
               what="the heal to be promoted")
    d.wait_for(lambda: d.ctl_json("memory"), what="the fix to be remembered")
    return d


@pytest.fixture
def healed_daemon(site, daemon_factory, tmp_path):
    """A daemon of this test's own, healed: for the tests that change the memory."""
    return heal_stats(site, daemon_factory().start(), tmp_path)


@pytest.fixture(scope="module")
def healed_for_reading(tmp_path_factory):
    """One healed daemon shared by the tests that only read it (a heal costs a daemon and a few
    scrapes; reading the same memory twice needs neither twice)."""
    tmp = tmp_path_factory.mktemp("memory-read")
    site = Site()
    d = DaemonProc(tmp / "d")
    try:
        yield heal_stats(site, d.start(), tmp)
    finally:
        d.stop()
        site.stop()


def test_memory_lists_the_remembered_fix_as_json_and_as_a_table(healed_for_reading):
    d = healed_for_reading
    issues = d.ctl_json("memory")
    assert len(issues) == 1
    issue = issues[0]
    assert SUMMARY_KEYS <= set(issue)
    assert issue["host"] == "127.0.0.1" and issue["error_type"] in ("PARSE_ERROR", "SCHEMA_MISMATCH")
    assert issue["affected_sources"] == ["stats"] and issue["status"] == "active"
    assert issue["verification_count"] == 1 and issue["failure_count"] == 0
    assert 0 < issue["confidence_score"] <= 1
    assert issue["last_confirmed_at"].endswith("Z")
    # `memory list` is the same list.
    assert d.ctl_json("memory", "list") == issues
    table = d.ctl("memory")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["ID", "ERROR", "HOST"]
    row = next(line for line in lines[1:] if issue["issue_id"] in line)
    assert "127.0.0.1" in row and issue["error_type"] in row and "active" in row
    assert f"{issue['confidence_score']:.2f}" in row


def test_memory_show_gives_the_whole_issue(healed_for_reading):
    d = healed_for_reading
    issue = d.ctl_json("memory")[0]
    shown = d.ctl_json("memory", "show", issue["issue_id"])
    assert {k: shown[k] for k in SUMMARY_KEYS} == issue
    bundle = shown["fix_bundle"]
    assert bundle["kind"] == "selectors"
    assert bundle["items"] == {"from": "table.stats tr.player", "to": bundle["items"]["to"]}
    assert set(bundle["fields"]) == {"name", "score"}
    assert bundle["fields"]["name"]["from"] == "td.name" and bundle["fields"]["score"]["from"] == "td.score"
    # The bundle's new selectors are the ones in production now.
    prod = [h for h in d.ctl_json("history", "stats") if h["kind"] == "version" and h["status"] == "production"]
    assert prod and prod[0]["origin"] == "builtin"
    assert shown["broken_selectors"] and shown["created_at"].endswith("Z")
    assert shown["usage"]["issue_id"] == issue["issue_id"]
    text = d.ctl("memory", "show", issue["issue_id"])
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"{issue['issue_id']}: {issue['canonical_title']}")
    assert "fix bundle:" in text.stdout and bundle["fields"]["name"]["to"] in text.stdout


def test_memory_forget_removes_the_issue_and_unknown_ids_are_a_clear_error(healed_daemon):
    d = healed_daemon
    issue_id = d.ctl_json("memory")[0]["issue_id"]
    r = d.ctl("memory", "forget", issue_id)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"forgot {issue_id}"
    assert d.ctl_json("memory") == []
    assert d.ctl("memory").stdout.strip() == "the fix memory is empty"
    # Gone: show and forget both refuse it with exit code 1 and one line naming the id.
    for args in (("memory", "show", issue_id), ("memory", "show", issue_id, "--json"), ("memory", "forget", issue_id),
                 ("memory", "forget", "no-such-issue")):
        r = d.ctl(*args)
        assert r.returncode == 1, (args, r.returncode, r.stdout, r.stderr)
        assert r.stdout == ""
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("healerctl: ") and args[2] in lines[0], r.stderr
        assert "in the fix memory" in lines[0]
    # Usage errors are exit code 2; an unreachable daemon is 3 and names the socket.
    assert d.ctl("memory", "show").returncode == 2
    assert d.ctl("memory", "forget").returncode == 2
    missing = str(d.tmp / "nowhere.sock")
    r = d.ctl("memory", "--socket", missing)
    assert r.returncode == 3 and missing in r.stderr
    # The daemon is unharmed, and a healed source is still healthy.
    assert d.proc.poll() is None
    assert d.ctl_json("status", "stats")["state"] == "ACTIVE"


def test_a_forgotten_fix_is_not_offered_again(site, healed_daemon, tmp_path):
    """After `forget`, a sibling with the same change heals by itself (builtin), not from the memory."""
    d = healed_daemon
    issue_id = d.ctl_json("memory")[0]["issue_id"]
    assert d.ctl("memory", "forget", issue_id).returncode == 0
    site.page("/sibling", listing_v1())
    r = d.ctl("add", "sibling", "--blueprint", write_blueprint(tmp_path / "sibling.json", site.url("/sibling")))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "sibling")["ok"] is True
    site.page("/sibling", listing_v2())
    d.wait_for(lambda: [h for h in d.ctl_json("history", "sibling") if h["kind"] == "fix"
                        and h["outcome"] == "promoted"], what="the sibling healed")
    fix = [h for h in d.ctl_json("history", "sibling") if h["kind"] == "fix" and h["outcome"] == "promoted"][0]
    assert fix["strategy"] == "builtin"
    issues = d.ctl_json("memory")
    assert len(issues) == 1 and issues[0]["issue_id"] != issue_id
    assert issues[0]["affected_sources"] == ["sibling"]
