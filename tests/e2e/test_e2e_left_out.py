"""A heal that leaves out a record the page still shows is staged, never promoted, through a real
daemon. The case (tests/data/corpus3/dev, pelican, ids renamed and the newest post moved into a
"featured" block before the list): the built-in healer, sure of itself (every old value of five
posts found again), heals the items selector onto the renamed list, whose records validate and
look plausible (five of six). The sixth post is still on the page, outside the list. The
Deployer stages the candidate for a person, and no record without it is stored."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import FAST_CONFIG
from sitepages import write_blueprint

CASE = (Path(__file__).resolve().parent.parent / "data" / "corpus3" / "dev" / "synthetic"
        / "syn-pelican-index-notmyidea-to-simple-rename-ids+decoy-before")


def blueprint(case: dict) -> dict:
    fields = {n: {"css": f["selector"], **({"attr": f["attr"]} if f.get("attr") else {})}
              for n, f in case["fields"].items()}
    return {"every": "1h", "items": case["items"], "fields": fields}


def test_a_heal_leaving_out_a_record_still_on_the_page_is_staged(site, daemon_factory, tmp_path):
    case = json.loads((CASE / "case.json").read_text())
    d = daemon_factory(FAST_CONFIG).start()
    site.page("/blog", (CASE / "before.html").read_bytes())
    r = d.ctl("add", "blog", "--blueprint", write_blueprint(tmp_path / "blog.json", site.url("/blog"), blueprint(case)))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "blog")["ok"] is True
    site.page("/blog", (CASE / "after.html").read_bytes())
    assert d.ctl_json("run", "blog")["ok"] is False
    d.wait_for(lambda: any(h["kind"] == "fix" for h in d.ctl_json("history", "blog")), timeout=60,
               what="a fix attempt")
    fixes = [h for h in d.ctl_json("history", "blog") if h["kind"] == "fix"]
    assert fixes[-1].get("staged") is True, fixes
    assert fixes[-1]["outcome"] != "promoted", fixes
    assert "leaves out 1 last good record" in fixes[-1]["reason"], fixes
    titles = [[r["title"] for r in rec["data"]] for rec in d.ctl_json("records", "blog")]
    assert all("Honing versus sharpening" in t for t in titles), titles
