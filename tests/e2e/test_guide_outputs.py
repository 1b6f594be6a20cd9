"""docs/GUIDE.md's story, run against the real daemon: its configuration and blueprint are the
guide's own TOML blocks, each `console` block's command is run in the guide's order (the page
changing between them as the guide tells) and its output matched line by line, and the daemon's
own lines the guide shows are found in its log. In a documented line, numbers stand for any number,
`…` for any text, a line that is only `…` for any lines, http://127.0.0.1:8080 for the site's
port, the guide's home directory for the test's; times like "just now" for any time ago; runs of
spaces are one space (a longer path widens a table's column)."""

from __future__ import annotations

import json
import re
import shlex

from tests.support.daemon import FAST_CONFIG
from tests.support.paths import ROOT
from tests.support.reference_doc import pattern
from tests.support.sitepages import listing_no_score, listing_v1, listing_v2

GUIDE = (ROOT / "docs" / "GUIDE.md").read_text()
HOME = "/home/me/scrapers"                 # where the guide's user works
STATE = f"{HOME}/healerd-state"


def blocks(kind: str) -> list[str]:
    """The bodies of the guide's fenced blocks of this kind ("" for a plain fence)."""
    out, body, info = [], None, ""
    for line in GUIDE.splitlines(keepends=True):
        if line.startswith("```"):
            if body is None:
                body, info = [], line[3:].strip()
            else:
                if info == kind:
                    out.append("".join(body))
                body = None
        elif body is not None:
            body.append(line)
    return out


def squeeze(line: str) -> str:
    line = re.sub(r"\b(just now|\d+[smhd] ago)\b", "just now", line)
    return re.sub(r" {2,}", " ", line.rstrip())


def lines_match(doc_lines: list[str], got_lines: list[str]) -> bool:
    """`doc_lines` in order in `got_lines`, a lone `…` line standing for any lines (none included)."""
    if not doc_lines:
        return not got_lines
    if doc_lines[0].strip() == "…":
        return any(lines_match(doc_lines[1:], got_lines[i:]) for i in range(len(got_lines) + 1))
    return bool(got_lines) and bool(pattern(squeeze(doc_lines[0]), "NAME").match(squeeze(got_lines[0]))) \
        and lines_match(doc_lines[1:], got_lines[1:])


def check(doc_lines: list[str], got: str, what: str) -> None:
    doc = [x for x in doc_lines if x.strip()]
    lines = [x for x in got.splitlines() if x.strip()]
    if lines_match(doc, lines):
        return
    # name the first documented line that is not there, for the reader of a failure
    for d in doc:
        if d.strip() != "…" and not any(pattern(squeeze(d), "NAME").match(squeeze(g)) for g in lines):
            raise AssertionError(f"{what}: the guide shows\n  {d!r}\nwhich is not printed:\n{got}")
    raise AssertionError(f"{what}: the guide's lines are all printed but not in this order:\n{doc}\nprinted:\n{got}")


def normalised(text: str, d) -> str:
    """The daemon's output with the test's paths said as the guide's user's."""
    return text.replace(d.socket, f"{STATE}/healerd.sock").replace(str(d.state), STATE).replace(str(d.tmp), HOME)


class Story:
    """The guide's console blocks, taken in order."""

    def __init__(self, d):
        self.d = d
        self.steps = []
        for block in blocks("console"):
            lines = block.rstrip("\n").splitlines()
            self.steps.append((lines[0], lines[1:]))
        self.done = 0

    def next(self, command: str) -> list[str]:
        """The next block's output lines, after checking that the guide runs `command` there."""
        assert self.done < len(self.steps), f"the guide has no more examples; the test expected `{command}`"
        doc_command, out = self.steps[self.done]
        assert doc_command == f"$ {command}", f"example {self.done + 1}: the guide runs {doc_command!r}, " \
                                              f"the story expected `$ {command}`"
        self.done += 1
        return out

    def ctl(self, command: str, rc: int = 0) -> None:
        out = self.next(command)
        r = self.d.ctl(*shlex.split(command)[1:])
        assert r.returncode == rc, f"{command}: exit {r.returncode}\n{r.stdout}{r.stderr}"
        check(out, normalised(r.stdout + r.stderr, self.d), command)


def test_the_guides_story_prints_what_the_guide_shows(site, daemon_factory):
    [config, blueprint] = blocks("toml")
    site.page("/stats", listing_v1())
    # the test's fast settings, but the Doctor's windows at their defaults (the guide's user sets none),
    # then the guide's configuration with its paths made the test's
    fast = FAST_CONFIG.replace('attempt_window = "1h"', 'attempt_window = "24h"') \
        .replace('quarantine_for = "1h"', 'quarantine_for = "24h"')
    assert fast.count('"24h"') == 2
    d = daemon_factory(fast + "\n" + config.replace(HOME, "{home}"))
    d.config_path.write_text(d.config_path.read_text().replace("{home}", str(d.tmp)))
    d.start()
    story = Story(d)
    daemon_lines = story.next("healerd run --config healerd.toml")
    (d.tmp / "scores.toml").write_text(blueprint.replace("http://127.0.0.1:8080", f"http://127.0.0.1:{site.port}"))

    story.ctl("healerctl add scores --blueprint scores.toml")
    d.wait_for(lambda: d.ctl_json("feeds")[0]["delivered"] == 1, what="the first scrape delivered")
    [line] = (d.tmp / "feeds" / "scores.jsonl").read_text().splitlines()
    assert list(json.loads(line)) == ["id", "source", "scraped_at", "version", "records", "changes"], line
    story.ctl("healerctl status")
    story.ctl("healerctl records scores")

    site.page("/stats", listing_v2())                   # the redesign
    story.ctl("healerctl run scores", rc=1)
    d.wait_for(lambda: d.ctl_json("status", "scores")["version"] == 2 and d.state_of("scores") == "ACTIVE",
               what="the heal")
    story.ctl("healerctl history scores")
    story.ctl("healerctl records scores --limit 1")
    d.wait_for(lambda: d.ctl_json("feeds")[0]["delivered"] == 2, what="the healed scrape delivered")
    story.ctl("healerctl feeds")

    site.page("/stats", listing_no_score())             # the score column is gone
    run_out = story.next("healerctl run scores")
    for _ in range(3):                                  # "run it twice more": each run one refused attempt
        if d.state_of("scores") == "QUARANTINED":
            break
        fixes = sum(h["kind"] == "fix" for h in d.ctl_json("history", "scores"))
        r = d.ctl("run", "scores")
        assert r.returncode == 1, r.stdout + r.stderr
        check(run_out, r.stdout, "healerctl run scores")
        d.wait_for(lambda n=fixes: sum(h["kind"] == "fix" for h in d.ctl_json("history", "scores")) > n,
                   what="a fix attempt")
    d.wait_for(lambda: d.state_of("scores") == "QUARANTINED", what="the quarantine")
    story.ctl("healerctl alerts")
    story.ctl("healerctl status scores")
    assert story.done == len(story.steps), f"examples the story did not run: {story.steps[story.done:]}"

    # what the daemon itself says: its start-up lines and the ALERT line the guide shows
    log = normalised(d.log(), d)
    # Each start-up line the guide shows is in the log; the feeds' thread and the control socket
    # start side by side, so their two lines come in either order.
    for line in (x for x in daemon_lines if x.strip() and x.strip() != "…"):
        check(["…", line, "…"], log, "healerd run")
    [alert] = [b for b in blocks("") if b.startswith("ALERT ")]
    check(["…", *alert.splitlines(), "…"], log, "the daemon's ALERT line")
