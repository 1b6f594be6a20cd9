"""A refusal a person can act on in one command: when the built-in healer refuses because two
places are alike, its best guess is staged (never promoted), and the report shows the values it
would extract beside the last good ones with the `healerctl approve` to run."""

from __future__ import annotations

from tests.support.bestguess_pages import AMBIGUOUS, BEFORE, GONE, RECIPE_BP
from tests.support.daemon import FAST_CONFIG
from tests.support.sitepages import write_blueprint


def test_an_ambiguous_refusal_stages_its_best_guess_for_one_command(site, daemon_factory, tmp_path):
    site.page("/soup", BEFORE)
    d = daemon_factory(FAST_CONFIG).start()
    r = d.ctl("add", "soup", "--blueprint", write_blueprint(tmp_path / "soup.json", site.url("/soup"), RECIPE_BP))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "soup")["ok"] is True
    site.page("/soup", AMBIGUOUS)
    assert d.ctl_json("run", "soup")["ok"] is False

    def report():
        rep = d.ctl_json("status", "soup").get("deferred_report") or {}
        return rep if rep.get("proposal") else None

    rep = d.wait_for(report, timeout=60, what="a report with the staged best guess")
    prop = rep["proposal"]
    v = prop["version"]
    assert prop["approve"] == f"healerctl approve soup {v}"
    assert "title: would extract 'Kettle Soup', last good 'Kettle Soup'" in prop["values"]
    assert "second: would extract '1 onion', last good '1 onion'" in prop["values"]
    assert rep["options"][0].endswith(f"`healerctl approve soup {v}`")
    assert d.ctl_json("status", "soup")["version"] == 1   # staged, never promoted
    staged = [h for h in d.ctl_json("history", "soup") if h["kind"] == "version" and h["version"] == v]
    assert staged and staged[0]["status"] == "staging"
    # The status page shows it to a person too.
    text = d.ctl("status", "soup").stdout
    assert f"healerctl approve soup {v}" in text and "would extract" in text
    # One command, and the records flow again.
    r = d.ctl("approve", "soup", str(v))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "soup")["ok"] is True
    assert d.ctl_json("records", "soup")[0]["data"] == {"title": "Kettle Soup", "first": "2 carrots",
                                                        "second": "1 onion"}


def test_a_refusal_for_data_gone_stages_no_guess(site, daemon_factory, tmp_path):
    site.page("/soup", BEFORE)
    d = daemon_factory(FAST_CONFIG).start()
    r = d.ctl("add", "soup", "--blueprint", write_blueprint(tmp_path / "soup.json", site.url("/soup"), RECIPE_BP))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "soup")["ok"] is True
    site.page("/soup", GONE)
    assert d.ctl_json("run", "soup")["ok"] is False
    d.wait_for(lambda: any(h["kind"] == "fix" for h in d.ctl_json("history", "soup")), timeout=60, what="a fix attempt")
    fixes = [h for h in d.ctl_json("history", "soup") if h["kind"] == "fix"]
    assert fixes[0]["outcome"] == "rejected"
    assert not [h for h in d.ctl_json("history", "soup") if h["kind"] == "version" and h["status"] == "staging"]
    assert not (d.ctl_json("status", "soup").get("deferred_report") or {}).get("proposal")
