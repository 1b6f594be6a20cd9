"""A site whose listing is an empty shell until its script fetches /rows.json and builds the table (two layouts)."""

from __future__ import annotations

import json

from tests.support.sitepages import ROWS

V1 = {"table": "stats", "row": "player", "name": "name", "score": "score"}


V2 = {"table": "league-table", "row": "row-player", "name": "player-name", "score": "pts"}


def js_listing(layout: dict = V1, delay_ms: int = 150, render: bool = True) -> str:
    """A page that is an empty shell until its script fetches /rows.json and builds the table."""
    script = f"""
    setTimeout(function () {{
      fetch('/rows.json').then(function (r) {{ return r.json(); }}).then(function (rows) {{
        var L = {json.dumps(layout)};
        var t = document.createElement('table'); t.className = L.table;
        t.innerHTML = '<tr><th>Name</th><th>Score</th></tr>';
        rows.forEach(function (row) {{
          var tr = document.createElement('tr'); tr.className = L.row;
          tr.innerHTML = '<td class="' + L.name + '"></td><td class="' + L.score + '"></td>';
          tr.children[0].textContent = row[0]; tr.children[1].textContent = String(row[1]);
          t.appendChild(tr);
        }});
        document.getElementById('app').appendChild(t);
      }});
    }}, {delay_ms});""" if render else "/* the renderer never runs */"
    return (f'<html><head><title>Stats</title></head><body><nav><a href="/">home</a></nav>'
            f'<img src="/logo.png"><div id="app"></div><script>{script}</script></body></html>')


def serve_js_site(site, layout=V1, path="/stats"):
    site.page(path, js_listing(layout))
    site.page("/rows.json", json.dumps(ROWS), headers={"Content-Type": "application/json"})
    site.page("/logo.png", b"\x89PNG", headers={"Content-Type": "image/png"})
