"""The demo site: three pages whose layout changes when the story says so.

- /stats     a table of player stats
- /products  a product listing
- /article   an article with a title, author and date

`DemoSite.set_layout(page, n)` switches a page to another layout. Layout 2 of
/products renames classes and adds a wrapper (healable); layout 2 of /stats drops
the score column (the data is really gone: healerd must refuse, not guess).
"""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PLAYERS = [("Ada", "ada", 31, 12), ("Grace", "grace", 27, 9), ("Linus", "linus", 24, 11),
           ("Margaret", "margaret", 22, 8), ("Ken", "ken", 19, 10), ("Barbara", "barbara", 17, 7)]
PRODUCTS = [("Claw Hammer", "12.50", "Tools"), ("Garden Hose 25m", "29.99", "Garden"),
            ("Chef Knife 8in", "45.00", "Kitchen"), ("Cordless Drill", "89.00", "Tools"),
            ("Pruning Shears", "15.75", "Garden"), ("Cast Iron Skillet", "34.20", "Kitchen"),
            ("Tape Measure 5m", "8.40", "Tools"), ("Watering Can", "11.00", "Garden")]

_HEAD = """<!doctype html><html><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif}} .nav a{{margin:0 4px}}</style>
<script>window.analytics = {{"page": "{title}"}};</script></head><body>
<div class="nav"><a href="/">Home</a><a href="/stats">Stats</a><a href="/products">Shop</a><a href="/article">News</a></div>
"""
_FOOT = "<footer><p>Demo League &copy; 2026</p></footer></body></html>"


def stats_page(layout: int) -> str:
    if layout == 1:
        rows = "".join(f'<tr class="player"><td class="name"><a href="/p/{slug}">{n}</a></td>'
                       f'<td class="score">{s}</td><td class="games">{g}</td></tr>' for n, slug, s, g in PLAYERS)
        table = f'<table class="stats"><tr><th>Player</th><th>Score</th><th>Games</th></tr>{rows}</table>'
    else:  # the score column is gone from the site
        rows = "".join(f'<tr class="player"><td class="name"><a href="/p/{slug}">{n}</a></td>'
                       f'<td class="games">{g}</td></tr>' for n, slug, s, g in PLAYERS)
        table = f'<table class="stats"><tr><th>Player</th><th>Games</th></tr>{rows}</table>'
    return _HEAD.format(title="Season stats") + f"<main><h1>Season stats</h1>{table}</main>" + _FOOT


def products_page(layout: int) -> str:
    if layout == 1:
        items = "".join(f'<li class="product"><h2 class="title">{n}</h2><span class="price">${p}</span>'
                        f'<span class="cat">{c}</span></li>' for n, p, c in PRODUCTS)
        body = f'<ul class="products">{items}</ul>'
    else:  # a redesign: new class names and a wrapper around each card
        items = "".join(f'<div class="card"><div class="card-body"><h3 class="card-title">{n}</h3>'
                        f'<p class="card-price">${p}</p><p class="card-category">{c}</p></div></div>'
                        for n, p, c in PRODUCTS)
        body = f'<section class="grid">{items}</section>'
    return _HEAD.format(title="Shop") + f"<main><h1>Shop</h1>{body}</main>" + _FOOT


def article_page(layout: int) -> str:
    return _HEAD.format(title="News") + (
        '<main><article><h1 class="headline">Demo League season opens</h1>'
        '<p class="byline">By <span class="author">Jo Reporter</span> on <time>2026-11-20</time></p>'
        '<p>Six players, one trophy.</p></article></main>') + _FOOT


PAGES = {"/stats": stats_page, "/products": products_page, "/article": article_page}


class _Server(ThreadingHTTPServer):
    """The demo site's server: a client that goes away mid-answer (the daemon stopping, a fetch cut
    at its deadline) is no error to print into the person's terminal."""

    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)):
            return
        super().handle_error(request, client_address)


class DemoSite:
    def __init__(self, port: int = 0):
        self.layouts = {p: 1 for p in PAGES}
        self.lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                path = self.path.split("?", 1)[0]
                with site.lock:
                    render = PAGES.get(path)
                    layout = site.layouts.get(path, 1)
                if path == "/":
                    body = (_HEAD.format(title="Demo League") + "<main><h1>Demo League</h1></main>" + _FOOT).encode()
                    status = 200
                elif path == "/robots.txt":
                    body, status = b"User-agent: *\nAllow: /\n", 200
                elif render is None:
                    body, status = b"<html><body>not found</body></html>", 404
                else:
                    body, status = render(layout).encode(), 200
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = _Server(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="demo-site", daemon=True)

    def start(self) -> DemoSite:
        self.thread.start()
        return self

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def set_layout(self, path: str, layout: int) -> None:
        with self.lock:
            self.layouts[path] = layout

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


BLUEPRINTS = {
    "stats": {"every": "2s", "items": "table.stats tr.player",
              "fields": {"player": {"css": "td.name a"}, "profile": {"css": "td.name a", "attr": "href"},
                         "score": {"css": "td.score", "type": "int"}, "games": {"css": "td.games", "type": "int"}}},
    "products": {"every": "2s", "items": "ul.products li.product",
                 "fields": {"title": {"css": "h2.title"}, "price": {"css": "span.price", "type": "float"},
                            "category": {"css": "span.cat"}}},
    "article": {"every": "2s", "fields": {"headline": {"css": "h1.headline"}, "author": {"css": "span.author"},
                                          "published": {"css": "time"}}},
}
