"""One field of a listing moved away while the others stayed, through a real daemon: its
positional selector (`b:nth-of-type(1)`) now reads a label ("Test ID:") in every record. The
other text fields still give their last good values, which hid the moved field's own values
(still on the page, no longer under the selector) in the pooled drift check. The scrape is a
breakage: no record with the label for a value is stored."""

from __future__ import annotations

from tests.support.daemon import FAST_CONFIG
from tests.support.sitepages import write_blueprint

ISSUES = [("blacklist", "B404", "shoplib/db.py"), ("yaml_load", "B506", "shoplib/tasks.py"),
          ("assert_used", "B101", "shoplib/cart.py"), ("hardcoded_password", "B105", "shoplib/auth.py")]
BP = {"every": "1h", "items": "div.results div.issue",
      "fields": {"test": {"css": "b:nth-of-type(1)"}, "file": {"css": "a"}, "summary": {"css": "span.summary"}}}


def report(moved: bool = False) -> str:
    def block(test: str, tid: str, path: str) -> str:
        name = f"<b>{test}:</b> "
        return ('<div class="issue">' + ("" if moved else name) + f'<span class="summary">Consider {tid} in {path}.</span><br>'
                f"<b>Test ID:</b> {tid}<br><b>File:</b> <a href=\"{path}\">{path}</a><br>"
                + (f'<div class="extra">{name}</div>' if moved else "") + "</div>")
    return ('<html><head><title>Report</title></head><body><div class="results">'
            + "".join(block(*i) for i in ISSUES) + "</div></body></html>")


def test_a_field_reading_a_label_after_it_moved_is_never_stored(site, daemon_factory, tmp_path):
    d = daemon_factory(FAST_CONFIG).start()
    site.page("/report", report())
    r = d.ctl("add", "report", "--blueprint", write_blueprint(tmp_path / "report.json", site.url("/report"), BP))
    assert r.returncode == 0, r.stderr
    assert d.ctl_json("run", "report")["ok"] is True
    truth = [{"test": f"{t}:", "file": p, "summary": f"Consider {i} in {p}."} for t, i, p in ISSUES]
    assert d.ctl_json("records", "report")[0]["data"] == truth

    site.page("/report", report(moved=True))
    out = d.ctl_json("run", "report")
    assert out["ok"] is False, out
    assert out["error_type"] == "SCHEMA_MISMATCH", out
    assert "values of test are still on the page" in out["error"], out
    d.wait_for(lambda: any(h["kind"] == "fix" for h in d.ctl_json("history", "report")), timeout=60,
               what="a fix attempt")
    d.ctl_json("run", "report")
    fixes = [h for h in d.ctl_json("history", "report") if h["kind"] == "fix"]
    assert all(f["outcome"] != "unchanged" for f in fixes), fixes
    for rec in d.ctl_json("records", "report"):
        assert rec["data"] == truth, rec
