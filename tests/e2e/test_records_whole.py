"""Records come out whole through the real daemon: `--limit` counts scrapes, a 30-item listing is
never cut in `--json` or `--csv` (or the `--follow` backlog), and columns keep the blueprint's order."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import threading

from tests.support.daemon import bin_cmd
from tests.support.sitepages import write_blueprint

ROWS = [(f"Player {i:02d}", 100 - i, f"/p/{i}") for i in range(30)]

# Fields deliberately not in alphabetical order: the columns come out in this order.
ZEBRA_BP = {
    "every": "1h",
    "items": "table.stats tr.player",
    "fields": {"zname": {"css": "td.name"}, "score": {"css": "td.score", "type": "int"},
               "alink": {"css": "td.name a", "attr": "href"}},
}


def page(rows=ROWS) -> str:
    body = "".join(f'<tr class="player"><td class="name"><a href="{h}">{n}</a></td><td class="score">{s}</td></tr>'
                   for n, s, h in rows)
    return f'<html><body><table class="stats"><tr><th>Name</th><th>Score</th></tr>{body}</table></body></html>'


def test_a_30_item_listing_is_whole_in_json_and_csv_and_columns_keep_the_blueprint_order(site, daemon_factory,
                                                                                         tmp_path):
    site.page("/stats", page())
    d = daemon_factory().start()
    r = d.ctl("add", "big", "--blueprint", write_blueprint(tmp_path / "big.json", site.url("/stats"), ZEBRA_BP))
    assert r.returncode == 0, r.stderr + d.log()[-3000:]
    site.page("/stats", page(ROWS[:29]))
    assert d.ctl("run", "big").returncode == 0

    got = json.loads(d.ctl("records", "big", "--json").stdout)
    assert [len(s["data"]) for s in got] == [29, 30]       # newest first, each scrape whole
    assert list(got[1]["data"][0]) == ["zname", "score", "alink"]
    assert got[1]["data"][29] == {"zname": "Player 29", "score": 71, "alink": "/p/29"}

    one = json.loads(d.ctl("records", "big", "--json", "--limit", "1").stdout)
    assert len(one) == 1 and len(one[0]["data"]) == 29     # --limit counts scrapes, not items

    out = d.ctl("records", "big", "--csv", "--limit", "1").stdout
    table = list(csv.reader(io.StringIO(out)))
    assert table[0] == ["zname", "score", "alink", "scraped_at", "version"]
    assert len(table) == 1 + 29
    assert table[-1][:3] == ["Player 28", "72", "/p/28"]
    both = list(csv.reader(io.StringIO(d.ctl("records", "big", "--csv").stdout)))
    assert len(both) == 1 + 29 + 30

    text = d.ctl("records", "big", "--limit", "1").stdout
    assert "Player 19" in text and "Player 20" not in text and text.index("ZNAME") < text.index("SCORE")
    assert "9 more item(s) not shown" in text                  # the table says what it leaves out


def test_follow_with_limit_prints_the_newest_scrapes_whole_first(site, daemon_factory, tmp_path):
    site.page("/stats", page())
    d = daemon_factory().start()
    r = d.ctl("add", "big", "--blueprint", write_blueprint(tmp_path / "big.json", site.url("/stats"), ZEBRA_BP))
    assert r.returncode == 0, r.stderr
    site.page("/stats", page(ROWS[:28]))
    assert d.ctl("run", "big").returncode == 0
    follow = subprocess.Popen(bin_cmd("healerctl") + ["--socket", d.socket, "records", "big", "--follow", "--json",
                                                      "--limit", "2"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=d.env)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(follow.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        d.wait_for(lambda: len(lines) >= 2, what="the follower's backlog")
    finally:
        follow.terminate()
        follow.wait(10)
    backlog = [json.loads(x) for x in lines[:2]]
    assert [len(s["data"]) for s in backlog] == [30, 28]    # oldest of the two first, each whole
    assert backlog[0]["id"] < backlog[1]["id"]
