"""The example outputs docs/REFERENCE.md shows are what healerctl prints: each `console` block's
command is run against the real daemon and its output matched, and each "Prints `...`" line of
a command section is matched against the command's output. In a documented line, `…` and
`(...)` stand for any text, numbers for any number, and NAME for the source's name; the rest
must be there as written."""

from __future__ import annotations

import re
import shlex

from tests.support.driftpages import TABLE_BP, table
from tests.support.paths import ROOT
from tests.support.reference_doc import pattern, section
from tests.support.sitepages import LISTING_BP, listing_v1, listing_v2, write_blueprint

REFERENCE = (ROOT / "docs" / "REFERENCE.md").read_text()


def console_examples(heading: str) -> list[tuple[list[str], list[str]]]:
    """(the healerctl arguments, the output lines) of each console block under `heading`."""
    out = []
    for block in re.findall(r"```console\n(.*?)```", section(REFERENCE, heading), re.S):
        lines = block.rstrip("\n").splitlines()
        assert lines[0].startswith("$ healerctl "), lines[0]
        out.append((shlex.split(lines[0][len("$ healerctl "):]), lines[1:]))
    return out


def prints(heading: str) -> list[str]:
    """The "Prints `...`" lines of a command's section."""
    return re.findall(r"Prints\s+`([^`]+)`", section(REFERENCE, heading).replace("\n", " "))


def matches(doc_lines: list[str], got: str, name: str) -> None:
    lines = [x for x in got.splitlines() if x.strip()]
    assert len(lines) == len(doc_lines), f"documented:\n{doc_lines}\nprinted:\n{lines}"
    for doc, line in zip(doc_lines, lines):
        assert pattern(doc, name).match(line), f"documented {doc!r}\nprinted    {line!r}"


def test_the_documented_outputs_are_what_healerctl_prints(site, daemon_factory, tmp_path):
    site.page("/shop", listing_v1())
    d = daemon_factory().start()
    here = d.tmp   # healerctl runs there: the documented relative file names
    (here / "bad.toml").write_text('url = "http://127.0.0.1:9/x"\n[fields.price]\ncss = "td..price"\n')
    (here / "shop.toml").write_text(f'url = "{site.url("/shop")}"\nevery = "15m"\nitems = "{LISTING_BP["items"]}"\n'
                                    '[fields.name]\ncss = "td.name"\n[fields.score]\ncss = "td.score"\ntype = "int"\n')

    (bad, bad_out), (good, good_out) = console_examples("### healerctl add")
    r = d.ctl(*bad)
    assert r.returncode == 1
    matches(bad_out, r.stderr, "shop")
    r = d.ctl(*good)
    assert r.returncode == 0, r.stderr
    matches(good_out, r.stdout, "shop")

    [paused] = prints("### healerctl pause")
    matches([paused], d.ctl("pause", "shop").stdout, "shop")
    [resumed] = prints("### healerctl resume")
    matches([resumed], d.ctl("resume", "shop").stdout, "shop")

    # heal, as shown: the redesign healed before a scrape noticed, then nothing left to heal
    site.page("/shop", listing_v2())
    (promoted, promoted_out), (unchanged, unchanged_out) = console_examples("### healerctl heal")
    r = d.ctl(*[a if a != "scores" else "shop" for a in promoted])
    assert r.returncode == 0, r.stdout + r.stderr
    matches([x.replace("scores", "NAME") for x in promoted_out], r.stdout, "shop")
    r = d.ctl(*[a if a != "scores" else "shop" for a in unchanged])
    assert r.returncode == 1, r.stdout + r.stderr
    matches([x.replace("scores", "NAME") for x in unchanged_out], r.stdout, "shop")

    # rollback: the heal made version 2; version 1 fails the redesigned page and is refused as shown
    d.wait_for(lambda: d.ctl_json("status", "shop")["version"] == 2 and d.ctl_json("status", "shop")["state"] == "ACTIVE",
               what="the heal")
    [(args, out)] = console_examples("### healerctl rollback")
    r = d.ctl(*[a if a != "2" else "1" for a in args])
    assert r.returncode == 1
    matches(out, r.stderr, "shop")

    [removed] = prints("### healerctl remove")
    matches([removed], d.ctl("remove", "shop").stdout, "shop")
    [resumed_healing] = prints("### healerctl resume-healing")
    matches([resumed_healing], d.ctl("resume-healing").stdout, "shop")


def test_the_drift_example_is_what_healerctl_run_says(site, daemon_factory, tmp_path):
    """The section's example: a sponsored look-alike row slipped into the table (its rows as shown)."""
    body = section(REFERENCE, "### Drift that validation passes")
    [html] = re.findall(r"```html\n(.*?)```", body, re.S)
    assert all(line in table(promoted=("Zed", 99)) for line in html.splitlines()), html
    site.page("/stats", table())
    d = daemon_factory().start()
    assert d.ctl("add", "scores", "--blueprint", write_blueprint(tmp_path / "scores.json", site.url("/stats"),
                                                                   TABLE_BP)).returncode == 0
    site.page("/stats", table(promoted=("Zed", 99)))
    [(args, out)] = console_examples("### Drift that validation passes")
    r = d.ctl(*args)
    assert r.returncode == 1, r.stdout + r.stderr
    matches(out, r.stdout, "scores")
