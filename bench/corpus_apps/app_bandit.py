"""Bandit: the HTML report of one fixed, deliberately unsafe demo package, written by
Bandit 1.6.2 (before) and Bandit 1.8.6 (after); and by 1.8.6 again with a severity filter
and with one test skipped. (The package holds only what both releases report alike: 1.8.6 also
reports hard-coded passwords and SQL strings that 1.6.2 does not, and names MD5 otherwise.)

    python bench/corpus_apps/app_bandit.py            (render in the throwaway venvs, write the cases)
    python bench/corpus_apps/app_bandit.py render OUTDIR LABEL   (the render half, run by the venv)
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
APP = "bandit"
RELEASES = {
    "old": ("bandit-1.6.2", ["bandit==1.6.2", "pbr==6.1.1", "setuptools<81"]),
    "new": ("bandit-1.8.6", ["bandit==1.8.6"]),
}

SOURCES = {
    "shoplib/__init__.py": "",
    "shoplib/db.py": '''import subprocess


def backup(path):
    subprocess.call("tar czf /tmp/backup.tgz " + path, shell=True)
''',
    "shoplib/web.py": '''import pickle
import random


def load_cart(blob):
    return pickle.loads(blob)


def token():
    return str(random.random())


def debug(expr):
    return eval(expr)
''',
    "shoplib/tasks.py": '''import os
import yaml


def run(cmd):
    os.system(cmd)


def settings(text):
    return yaml.load(text)


def check(x):
    assert x > 0
    try:
        return 1 / x
    except Exception:
        pass
''',
}


def render(outdir: str, label: str) -> None:
    import subprocess

    src = os.path.join(outdir, "src")
    for rel, text in SOURCES.items():
        path = os.path.join(src, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    bandit = os.path.join(os.path.dirname(sys.executable), "bandit")
    runs = {"report.html": []}
    if label == "new":
        runs["report-medium.html"] = ["--severity-level", "medium"]
        runs["report-skip-b101.html"] = ["--skip", "B101"]
    for name, extra in runs.items():
        subprocess.run([bandit, "-q", "-r", "shoplib", "-f", "html", "-o", os.path.join(outdir, name), *extra],
                       cwd=src, check=False)  # bandit exits 1 when it finds issues
        if not os.path.exists(os.path.join(outdir, name)):
            raise SystemExit(f"bandit wrote no {name}")


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "render":
    render(sys.argv[2], sys.argv[3])
    sys.exit(0)


ORIGIN = ("Bandit (Apache-2.0) HTML report of one fixed, deliberately unsafe 4-module demo package, written by "
          "Bandit 1.6.2 (before) and {after} (after){extra}.")


def make_cases(w, page) -> None:
    from common import tidy

    old, new = tidy(page("old", "report.html")), tidy(page("new", "report.html"))
    medium, skip = tidy(page("new", "report-medium.html")), tidy(page("new", "report-skip-b101.html"))
    o = ORIGIN.format(after="Bandit 1.8.6", extra="")
    issues = {"test": ("b:nth-of-type(1)", None, "str"), "file": ("a:nth-of-type(1)", None, "str"),
              "code": ("div.code pre", None, "str")}
    w.case("bandit-issues-1.6-to-1.8", o + " A CWE link now comes before the file link, so the first link of an issue "
           "is the CWE, not the file.", "div#results div.issue-block", issues, old, new, "div#results div.issue-block",
           {"test": ("b:nth-of-type(1)", None), "file": ("a[href^='shoplib/']", None), "code": ("div.code pre", None)},
           "positive")
    info = {"test": ("b:nth-of-type(1)", None, "str"), "info": ("a:nth-of-type(2)", "href", "str")}
    w.case("bandit-more-info-1.6-to-1.8", o + " A CWE link now comes first; the documentation links name the release.",
           "div#results div.issue-block", info, old, new, "div#results div.issue-block",
           {"test": ("b:nth-of-type(1)", None), "info": ("a[href*='bandit.readthedocs.io']", "href")}, "positive")
    sev = {"test": ("div.issue-block > b:nth-of-type(1)", None, "str"),
           "severity": ("div.issue-block", "class", "str")}
    w.case("bandit-severity-class-1.6-to-1.8", o + " The issue blocks keep their classes: the selectors still work.",
           "div#results > div[id^='issue-']", sev, old, new, "div#results > div[id^='issue-']",
           {"test": ("div.issue-block > b:nth-of-type(1)", None), "severity": ("div.issue-block", "class")}, "control")
    metrics = {"loc": ("div#metrics span#loc", None, "int"), "nosec": ("div#metrics span#nosec", None, "int")}
    w.case("bandit-metrics-1.6-to-1.8", o, None, metrics, old, new, None,
           {n: (s, a) for n, (s, a, _t) in metrics.items()}, "control")
    # the 1.8.6 report, then the same run with low severities filtered out: fewer issues, same markup
    w.case("bandit-issues-severity-filter-1.8", ORIGIN.replace("Bandit 1.6.2 (before)", "Bandit 1.8.6 (before)").format(
           after="Bandit 1.8.6 with --severity-level medium", extra=": fewer issues, the same markup"),
           "div#results div.issue-block", {**issues, "file": ("a:nth-of-type(2)", None, "str")}, new, medium,
           "div#results div.issue-block", {"test": ("b:nth-of-type(1)", None), "file": ("a:nth-of-type(2)", None),
                                           "code": ("div.code pre", None)}, "control")
    # negative: the one finding a scraper followed is no longer reported (the project skips B101)
    assert_issue = {"test": ("div#issue-4 > div.issue-block > b:nth-of-type(1)", None, "str"),
                    "file": ("div#issue-4 > div.issue-block > a:nth-of-type(1)", None, "str"),
                    "code": ("div#issue-4 div.code pre", None, "str")}
    w.case("bandit-assert-finding-skipped-1.6-to-1.8",
           ORIGIN.format(after="Bandit 1.8.6 run with --skip B101", extra=": the assert_used finding (issue-4 before) is "
                         "not reported, and issue-4 is now another finding"),
           None, assert_issue, old, skip, None, {"test": None, "file": None, "code": None}, "negative")
    w.case("bandit-low-findings-filtered-1.6-to-1.8",
           ORIGIN.format(after="Bandit 1.8.6 run with --severity-level medium",
                         extra=": the low-severity import finding the scraper read (issue-0) is gone"),
           None, {"test": ("div#issue-0 b:nth-of-type(1)", None, "str"), "info": ("div#issue-0 a:nth-of-type(2)", "href", "str")},
           old, medium, None, {"test": None, "info": None}, "negative")


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    import common
    sys.exit(common.main(__file__, APP, RELEASES, make_cases))
