"""A simulated production day: does the real daemon ever store a wrong record?

    python bench/production_day.py [--minutes 4] [--sources 60] [--seed 1] [--every 3] [--keep DIR]

A real local site serves `--sources` sources, each on its own loopback address
(127.0.0.2, 127.0.0.3, ...: distinct hosts, as the daemon's breakers count them) and port.
The pages look like shops: product tables, price lists with positional columns, product
card grids, product pages, spec sheets. One real daemon (`healerd run`, subprocess, a
sources_dir holding one blueprint per source, every `--every` seconds) scrapes them for
`--minutes`, a day compressed. During it:

- every source but the quiet ones switches layout once, at a random moment, to a redesign
  of a real-world family: a "Sponsored" look-alike row inserted into a table (`promoted`),
  a "Recommended" card with the same classes before the real one (`decoy_before`), a field
  removed while a "recommended" block still carries one (`removed_decoy`), a column dropped
  under positional `td:nth-child(n)` selectors (`dropped_column`), a reordered field list
  (`reordered`), a placeholder such as "Log in to see the price" (`placeholder`), and the
  redesigns the healer should heal: CSS-module hashed classes and renamed classes
  (bench/heal_fuzz.py's mutators), a table rewritten as cards (`heal_*`);
- values change legitimately at random moments on every source (prices, stock);
- some sources have an outage (503 for a while), and once every host refuses connections
  for a few seconds (a network blip); some pages never change (`none`).

The site logs, for every answer it gives, the moment and the page version it served; it
knows each version's truth (the records a person reading the page would write down). At
the end the bench reads every stored scrape (the SQLite file, read-only) and joins it to
the last answer its source's host gave before the scrape was stored. A scrape is right
when its data equals that page's truth (records compared as a multiset, numbers as
numbers). If another version was also served in the seconds before (a Doctor or Deployer
fetch in between), a scrape equal to that one's truth is counted right but "ambiguous":
the count is printed, so the join's exactness is visible.

Prints: scrapes stored, WRONG stored scrapes (source, family, first/last, how long the
stretch lasted), sources healed / paged / quarantined, legit sources paged (false alarms),
alerts by event, and, last, one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heal_fuzz  # noqa: E402  (its class mutators, applied to a rendered page)

from healerd.core.blueprint import from_dict  # noqa: E402

ADJ = ["Trail", "Summit", "Alpine", "Harbor", "Canyon", "Cedar", "Nordic", "Urban", "Coastal", "Ridge", "Prairie",
       "Glacier", "Meadow", "Basalt", "Juniper", "Aspen"]
NOUN = ["Kettle", "Lantern", "Backpack", "Tent", "Mug", "Stove", "Jacket", "Boots", "Compass", "Bottle", "Hammock",
        "Headlamp", "Sleeping Bag", "Trekking Poles", "Cooler", "Camp Chair"]
VARIANT = ["2L", "Pro", "XL", "Mini", "Ultralight", "35L", "Deluxe", "Classic", "Plus", "Air"]
BRANDS = ["Northpeak", "Fjellvik", "Osprey Lane", "Kestrel", "Bluefin", "Stonebridge", "Wildmoor", "Halcyon"]
CATEGORIES = ["Cooking", "Shelter", "Lighting", "Footwear", "Packs", "Apparel", "Navigation", "Hydration"]
PLACEHOLDERS = ["Log in to see the price", "Sign in to view price", "Members only", "Call for price"]

# kind -> the families its pages may switch to (weights by repetition)
FAMILIES = {
    "table": ["promoted", "promoted", "heal_modules", "heal_cards", "placeholder", "values", "none", "outage"],
    "pricelist": ["dropped_column", "dropped_column", "reordered", "heal_rename", "values", "none", "outage"],
    "cards": ["decoy_before", "decoy_before", "heal_modules", "placeholder", "values", "none", "outage"],
    "product": ["decoy_before", "removed_decoy", "removed_decoy", "placeholder", "heal_rename", "values", "none",
                "outage"],
    "specs": ["reordered", "reordered", "heal_modules", "values", "none", "outage"],
}
LEGIT = ("values", "none", "outage")       # families whose pages never give wrong data to the old selectors


def _money(v: float) -> str:
    return f"${v:,.2f}"


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _page(title: str, shop: str, body: str, crumbs: list[str]) -> str:
    nav = "".join(f'<li class="nav-item"><a href="/c/{c.lower()}">{c}</a></li>' for c in CATEGORIES[:5])
    crumb = " / ".join(f'<a href="/{i}">{_esc(c)}</a>' for i, c in enumerate(crumbs))
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{_esc(title)} | {shop}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="stylesheet" href="/static/site.css"><script src="/static/app.js" defer></script></head>'
            f'<body><header class="site-header"><a class="logo" href="/">{shop}</a><form class="search" action="/s">'
            f'<input name="q" placeholder="Search gear"></form><ul class="nav">{nav}</ul>'
            f'<a class="cart" href="/cart">Cart (0)</a></header><nav class="breadcrumbs">{crumb}</nav>'
            f'{body}<footer class="site-footer"><p>Free shipping over $50 · 30-day returns</p>'
            f'<p>&copy; 2026 {shop}</p></footer></body></html>')


@dataclass
class Product:
    name: str
    sku: str
    brand: str
    category: str
    price: float
    stock: int
    weight: str
    warranty: str


def _product(rng: random.Random) -> Product:
    return Product(name=f"{rng.choice(ADJ)} {rng.choice(NOUN)} {rng.choice(VARIANT)}",
                   sku=f"{rng.choice('ABCDEFGHKMNPRT')}{rng.choice('ABCDEFGHKMNPRT')}-{rng.randrange(1000, 9999)}",
                   brand=rng.choice(BRANDS), category=rng.choice(CATEGORIES),
                   price=round(rng.uniform(6, 320), 2), stock=rng.randrange(0, 90),
                   weight=f"{rng.uniform(0.1, 4.5):.1f} kg", warranty=f"{rng.choice([1, 2, 3, 5])} years")


@dataclass
class Source:
    idx: int
    name: str
    kind: str
    family: str
    text_price: bool                      # the blueprint keeps the price as text ("$12.99")
    products: list[Product]               # epoch 0's
    extras: list[Product]                 # the look-alikes: sponsored rows, recommended cards
    switch_at: float                      # seconds into the day
    epochs: list[float]                   # moments the values change
    outage: tuple[float, float] | None
    seed: int
    host: str = ""
    port: int = 0
    server: ThreadingHTTPServer | None = None
    cache: dict = field(default_factory=dict)

    # -- the page at a moment ------------------------------------------------------------
    def version(self, t: float) -> tuple[int, int]:
        layout = 1 if (self.family not in LEGIT and t >= self.switch_at) else 0
        epoch = sum(1 for e in self.epochs if t >= e)
        return layout, epoch

    def items_at(self, epoch: int) -> list[Product]:
        rng = random.Random(self.seed * 7919 + epoch)
        out = []
        for p in self.products:
            q = Product(**p.__dict__)
            if epoch:
                if rng.random() < 0.5:
                    q.price = round(q.price * rng.uniform(0.8, 1.2), 2)
                q.stock = max(0, q.stock + rng.randrange(-5, 6))
            out.append(q)
        return out

    def blueprint(self) -> dict:
        price = {"css": "", "type": "str" if self.text_price else "float"}
        if self.kind == "table":
            f = {"name": {"css": "td.name a"}, "price": {**price, "css": "td.price"},
                 "stock": {"css": "td.stock", "type": "int"}}
            return {"items": "table.products tbody tr.product", "fields": f}
        if self.kind == "pricelist":
            f = {"name": {"css": "td:nth-child(1)"}, "brand": {"css": "td:nth-child(2)"},
                 "price": {**price, "css": "td:nth-child(4)"},
                 "stock": {"css": "td:nth-child(5)", "type": "int", "required": False}}
            return {"items": "table.listing tbody tr", "fields": f}
        if self.kind == "cards":
            f = {"name": {"css": "h3.title"}, "price": {**price, "css": "span.price"},
                 "url": {"css": "a.product-link", "attr": "href"}}
            return {"items": "article.product-card", "fields": f}
        if self.kind == "product":
            f = {"title": {"css": ".product .title"}, "price": {**price, "css": ".product .price"},
                 "sku": {"css": ".product .sku"}, "stock": {"css": ".stock", "type": "int"}}
            return {"fields": f}
        f = {"brand": {"css": "dl.specs dd:nth-of-type(1)"}, "model": {"css": "dl.specs dd:nth-of-type(2)"},
             "weight": {"css": "dl.specs dd:nth-of-type(3)"}, "warranty": {"css": "dl.specs dd:nth-of-type(4)"}}
        return {"fields": f}

    def price_value(self, p: Product) -> Any:
        return _money(p.price) if self.text_price else p.price

    # -- the truth: what a person reading the page writes down ---------------------------
    def truth(self, v: tuple[int, int]) -> Any:
        layout, epoch = v
        items = self.items_at(epoch)
        hidden = layout == 1 and self.family == "placeholder"

        def price(p: Product) -> Any:
            return None if hidden else self.price_value(p)
        if self.kind == "table":
            return [{"name": p.name, "price": price(p), "stock": p.stock} for p in items]
        if self.kind == "pricelist":
            gone = layout == 1 and self.family == "dropped_column" and self._dropped() == "Brand"
            return [{"name": p.name, "brand": None if gone else p.brand, "price": price(p), "stock": p.stock}
                    for p in items]
        if self.kind == "cards":
            return [{"name": p.name, "price": price(p), "url": f"/p/{p.sku.lower()}"} for p in items]
        p = items[0]
        if self.kind == "product":
            stock = None if (layout == 1 and self.family == "removed_decoy") else p.stock
            return {"title": p.name, "price": price(p), "sku": p.sku, "stock": stock}
        return {"brand": p.brand, "model": p.name, "weight": p.weight, "warranty": p.warranty}

    # -- the page ------------------------------------------------------------------------
    def html(self, v: tuple[int, int]) -> str:
        if v not in self.cache:
            self.cache[v] = self._render(*v)
        return self.cache[v]

    def _render(self, layout: int, epoch: int) -> str:
        fam = self.family if layout == 1 else "base"
        items = self.items_at(epoch)
        shop = f"{BRANDS[self.idx % len(BRANDS)]} Outfitters"
        body = getattr(self, f"_{self.kind}")(fam, items)
        html = _page(items[0].name if self.kind in ("product", "specs") else f"{items[0].category} gear", shop, body,
                     ["Home", items[0].category, items[0].name if self.kind in ("product", "specs") else "All"])
        if fam in ("heal_modules", "heal_rename"):
            bp = from_dict({"url": "http://x/", **self.blueprint()})
            w = heal_fuzz.Work(html, bp, random.Random(self.seed))
            (heal_fuzz.m_css_modules if fam == "heal_modules" else heal_fuzz.m_rename_classes)(w)
            html = w.tree.html or html
        return html

    def _shown_price(self, fam: str, p: Product, i: int) -> str:
        if fam == "placeholder":
            return PLACEHOLDERS[(self.idx + i) % len(PLACEHOLDERS)] if i >= 0 else _money(p.price)
        return _money(p.price)

    def _table(self, fam: str, items: list[Product]) -> str:
        def row(p: Product, i: int, cls: str = "product", badge: str = "") -> str:
            return (f'<tr class="{cls}"><td class="name"><a href="/p/{p.sku.lower()}">{_esc(p.name)}</a>{badge}</td>'
                    f'<td class="sku">{p.sku}</td><td class="price">{self._shown_price(fam, p, i)}</td>'
                    f'<td class="stock">{p.stock}</td></tr>')
        if fam == "heal_cards":
            cards = "".join(f'<li class="result"><a class="result-name" href="/p/{p.sku.lower()}">{_esc(p.name)}</a>'
                            f'<div class="result-meta"><span class="lbl">SKU</span> <span>{p.sku}</span></div>'
                            f'<div class="result-buy"><span class="lbl">Price</span> <b class="amount">'
                            f'{_money(p.price)}</b><span class="lbl">In stock</span> <em class="qty">{p.stock}</em>'
                            f'</div></li>' for p in items)
            return f'<main class="catalog"><h1>All gear</h1><ul class="results">{cards}</ul></main>'
        rows = "".join(row(p, i) for i, p in enumerate(items))
        if fam == "promoted":
            ad = self.extras[0]
            rows = row(ad, -1, "product promoted", ' <span class="badge">Sponsored</span>') + rows
        return (f'<main class="catalog"><h1>All gear</h1><p class="count">{len(items)} products</p>'
                f'<table class="products"><thead><tr><th>Product</th><th>SKU</th><th>Price</th><th>Stock</th></tr>'
                f'</thead><tbody>{rows}</tbody></table></main>')

    def _dropped(self) -> str:
        """The column a `dropped_column` price list loses: Category (no field reads it) or Brand (its
        data is then gone from the page)."""
        return "Category" if self.idx % 2 else "Brand"

    def _pricelist(self, fam: str, items: list[Product]) -> str:
        cols = ["Name", "Brand", "Category", "Price", "Stock"]
        if fam == "dropped_column":
            cols.remove(self._dropped())
        elif fam == "reordered":
            cols = ["Name", "Brand", "Category", "Stock", "Price"]
        cell = {"Name": lambda p: _esc(p.name), "Brand": lambda p: p.brand, "Category": lambda p: p.category,
                "Price": lambda p: _money(p.price), "Stock": lambda p: str(p.stock)}
        head = "".join(f"<th>{c}</th>" for c in cols)
        body = "".join("<tr>" + "".join(f"<td>{cell[c](p)}</td>" for c in cols) + "</tr>" for p in items)
        return (f'<main class="content"><h1>Price list</h1><table class="listing"><thead><tr>{head}</tr></thead>'
                f'<tbody>{body}</tbody></table><p class="note">Prices include VAT.</p></main>')

    def _cards(self, fam: str, items: list[Product], ) -> str:
        def card(p: Product, i: int) -> str:
            return (f'<article class="product-card"><a class="product-link" href="/p/{p.sku.lower()}">'
                    f'<img src="/img/{p.sku.lower()}.jpg" alt=""></a><h3 class="title">{_esc(p.name)}</h3>'
                    f'<div class="meta"><span class="price">{self._shown_price(fam, p, i)}</span>'
                    f'<span class="rating">{(i * 7) % 5 + 1}.0 ★</span></div>'
                    f'<button class="add">Add to cart</button></article>')
        grid = "".join(card(p, i) for i, p in enumerate(items))
        rec = ""
        if fam == "decoy_before":
            rec = ('<section class="recommended"><h2>Recommended for you</h2><div class="carousel">'
                   + "".join(card(p, -1) for p in self.extras[:3]) + "</div></section>")
        return f'<main class="shop">{rec}<h1>Our gear</h1><div class="product-grid">{grid}</div></main>'

    def _product(self, fam: str, items: list[Product]) -> str:
        p, other = items[0], self.extras[0]

        def block(q: Product, shown: str, stock: bool, cls: str = "product") -> str:
            st = f'<p class="stock">{q.stock} in stock</p>' if stock else ""
            return (f'<div class="{cls}"><h1 class="title">{_esc(q.name)}</h1><p class="sku">{q.sku}</p>'
                    f'<span class="price">{shown}</span>{st}<button>Add to cart</button></div>')
        shown = PLACEHOLDERS[self.idx % len(PLACEHOLDERS)] if fam == "placeholder" else _money(p.price)
        real = block(p, shown, fam != "removed_decoy")
        rec = ('<section class="recommended"><h2>Customers also bought</h2>'
               + block(other, _money(other.price), True) + "</section>")
        desc = f'<section class="description"><h2>About</h2><p>The {_esc(p.name)} by {p.brand}.</p></section>'
        if fam == "decoy_before":
            return f'<main class="pdp">{rec}{real}{desc}</main>'
        if fam == "removed_decoy":
            return f'<main class="pdp">{real}{desc}</main><aside class="sidebar">{rec}</aside>'
        return f'<main class="pdp">{real}{desc}</main>'

    def _specs(self, fam: str, items: list[Product]) -> str:
        p = items[0]
        pairs = [("Brand", p.brand), ("Model", _esc(p.name)), ("Weight", p.weight), ("Warranty", p.warranty)]
        if fam == "reordered":
            pairs = [pairs[1], pairs[0], pairs[3], pairs[2]] if self.idx % 2 else pairs[::-1]
        dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in pairs)
        return (f'<main class="spec-page"><h1>{_esc(p.name)}</h1><p class="lead">Technical data</p>'
                f'<dl class="specs">{dl}</dl><p class="price">{_money(p.price)}</p></main>')


def make_sources(n: int, seed: int, day: float) -> list[Source]:
    rng = random.Random(seed)
    kinds = list(FAMILIES)
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        family = rng.choice(FAMILIES[kind])
        count = 1 if kind in ("product", "specs") else rng.randrange(6, 13)
        products = [_product(rng) for _ in range(count)]
        extras = [_product(rng) for _ in range(3)]
        epochs = sorted(rng.uniform(0.1, 0.95) * day for _ in range(rng.randrange(1, 3)))
        outage = None
        if family == "outage":
            start = rng.uniform(0.2, 0.7) * day
            outage = (start, start + rng.uniform(12, 30))
        out.append(Source(idx=i, name=f"s{i:02d}-{kind}-{family}", kind=kind, family=family,
                          text_price=rng.random() < 0.5 or family == "placeholder", products=products,
                          extras=extras, switch_at=rng.uniform(0.15, 0.7) * day, epochs=epochs, outage=outage,
                          seed=seed * 1000 + i))
    return out


class World:
    """The site: one HTTP server per source on its own loopback address; the log of what was served."""

    def __init__(self, sources: list[Source], t0: float):
        self.sources = sources
        self.t0 = t0
        self.lock = threading.Lock()
        self.served: dict[str, list[tuple[float, tuple[int, int]]]] = defaultdict(list)
        self.refusing = False
        for s in sources:
            s.host = f"127.0.0.{2 + s.idx}"
            self._serve(s)

    def _serve(self, s: Source) -> None:
        world = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                now = time.time()
                t = now - world.t0
                if s.outage and s.outage[0] <= t < s.outage[1]:
                    body, status = b"<html><body><h1>503 Service Unavailable</h1></body></html>", 503
                else:
                    v = s.version(t)
                    body, status = s.html(v).encode(), 200
                    with world.lock:
                        world.served[s.name].append((now, v))
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                if status == 503:
                    self.send_header("Retry-After", "5")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        srv = ThreadingHTTPServer((s.host, s.port), Handler)
        srv.daemon_threads = True
        s.port = srv.server_address[1]
        s.server = srv
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()

    def blip(self, seconds: float) -> None:
        """Every host refuses connections for `seconds` (listening sockets closed, then reopened)."""
        for s in self.sources:
            if s.server is not None:
                s.server.shutdown()
                s.server.server_close()
                s.server = None
        time.sleep(seconds)
        for s in self.sources:
            for _ in range(50):
                try:
                    self._serve(s)
                    break
                except OSError:
                    time.sleep(0.1)

    def stop(self) -> None:
        for s in self.sources:
            if s.server is not None:
                s.server.shutdown()
                s.server.server_close()


def config_text(sources_dir: str) -> str:
    return f"""
[daemon]
scrapers = 4
tick = "0.2s"
politeness_delay = 0
jitter = 0.1
log_level = "INFO"
sources_dir = "{sources_dir}"
[fetch]
timeout = "4s"
connect_timeout = "2s"
respect_robots = false
[doctor]
max_fix_attempts = 3
attempt_window = "1h"
quarantine_for = "1h"
[alerts]
dedupe_window = "1h"
"""


def _num(v: Any) -> Any:
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        return round(float(v), 2)
    return " ".join(str(v).split())


def _key(rec: Any) -> tuple:
    return tuple(sorted((k, _num(v)) for k, v in rec.items())) if isinstance(rec, dict) else (repr(rec),)


def same(data: Any, truth: Any) -> bool:
    if isinstance(truth, list):
        return isinstance(data, list) and Counter(map(_key, data)) == Counter(map(_key, truth))
    return isinstance(data, dict) and _key(data) == _key(truth)


def read_db(state: Path, sql: str, params: tuple = ()) -> list[dict]:
    import apsw

    conn = apsw.Connection(str(state / "healerd.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        cur = conn.execute(sql, params)
        out, desc = [], None
        for r in cur:
            desc = desc or [d[0] for d in cur.getdescription()]
            out.append(dict(zip(desc, r)))
        return out
    finally:
        conn.close()


def judge(world: World, sources: list[Source], records: list[dict]) -> dict:
    by_name = {s.name: s for s in sources}
    verdicts = []
    ambiguous = unjoined = 0
    for r in records:
        s = by_name.get(r["source_name"])
        if s is None:
            continue
        served = world.served.get(s.name, [])
        before = [x for x in served if x[0] <= r["scraped_at"]]
        if not before:
            unjoined += 1
            verdicts.append((r, s, None, False))
            continue
        data = json.loads(r["data"])
        at, v = before[-1]
        if same(data, s.truth(v)):
            verdicts.append((r, s, v, True))
            continue
        window = {x[1] for x in before if x[0] >= r["scraped_at"] - 8.0} - {v}
        alt = next((w for w in window if same(data, s.truth(w))), None)
        if alt is not None:
            ambiguous += 1
            verdicts.append((r, s, alt, True))
        else:
            verdicts.append((r, s, v, False))
    return {"verdicts": verdicts, "ambiguous": ambiguous, "unjoined": unjoined}


def stretches(verdicts: list, t0: float, every: float) -> list[dict]:
    """Consecutive wrong stored scrapes of one source, as stretches."""
    out: list[dict] = []
    by_src: dict[str, list] = defaultdict(list)
    for r, s, v, ok in verdicts:
        by_src[s.name].append((r, s, v, ok))
    for name, rows in by_src.items():
        rows.sort(key=lambda x: x[0]["id"])
        cur: dict | None = None
        for r, s, v, ok in rows:
            if not ok:
                if cur is None:
                    cur = {"source": name, "family": s.family, "first_s": round(r["scraped_at"] - t0, 1),
                           "scrapes": 0, "example": r["data"][:160], "truth": json.dumps(s.truth(v))[:160]}
                    out.append(cur)
                cur["scrapes"] += 1
                cur["last_s"] = round(r["scraped_at"] - t0, 1)
                cur["lasted_s"] = round(cur["last_s"] - cur["first_s"] + every, 1)
            else:
                cur = None
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=4.0)
    ap.add_argument("--sources", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--every", type=float, default=3.0, help="each source's schedule, seconds")
    ap.add_argument("--blip", type=float, default=8.0, help="seconds every host refuses connections")
    ap.add_argument("--keep", help="keep the daemon's state and log in this folder")
    args = ap.parse_args(argv)
    if not 1 <= args.sources <= 250:
        print("error: --sources must be 1..250 (one loopback address each)", file=sys.stderr)
        return 2
    day = args.minutes * 60.0
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="prodday-"))
    tmp.mkdir(parents=True, exist_ok=True)
    sources = make_sources(args.sources, args.seed, day)
    rng = random.Random(args.seed + 99)
    blip_at = rng.uniform(0.35, 0.65) * day
    sdir = tmp / "sources.d"
    sdir.mkdir(exist_ok=True)
    state = tmp / "state"
    sock = str(tmp / "healerd.sock")
    (tmp / "healerd.toml").write_text(config_text(str(sdir)))
    t0 = time.time() + 3.0   # the day starts once the daemon is up (sources first scraped then)
    world = World(sources, t0)
    for s in sources:
        bp = {"url": f"http://{s.host}:{s.port}/", "every": args.every, **s.blueprint()}
        (sdir / f"{s.name}.json").write_text(json.dumps(bp))
    log = open(tmp / "daemon.log", "ab")
    env = {k: v for k, v in os.environ.items() if k != "HEALERD_SOCKET"}
    proc = subprocess.Popen([sys.executable, "-m", "healerd", "run", "--config", str(tmp / "healerd.toml"),
                             "--state-dir", str(state), "--socket", sock], cwd=tmp, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    print(f"day: {day:.0f} s, {len(sources)} sources every {args.every:g} s, seed {args.seed}, "
          f"blip at {blip_at:.0f} s for {args.blip:g} s; state in {tmp}", flush=True)
    print("families: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(s.family for s in sources).items())),
          flush=True)
    load_start = os.getloadavg()

    def stop(signum, frame):   # a TERM (or an INT in the background) ends the day: the daemon is stopped
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        while time.time() < t0:
            if proc.poll() is not None:
                raise RuntimeError(f"healerd exited with {proc.returncode}")
            time.sleep(0.1)
        blipped = False
        while time.time() - t0 < day:
            if proc.poll() is not None:
                raise RuntimeError(f"healerd exited with {proc.returncode}")
            if not blipped and time.time() - t0 >= blip_at:
                blipped = True
                world.blip(args.blip)
            time.sleep(0.2)
    finally:
        load_end = os.getloadavg()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        world.stop()
    records = read_db(state, "SELECT id, source_name, scraped_at, version, data FROM records ORDER BY id")
    alerts = read_db(state, "SELECT ts, source, event, message FROM alerts ORDER BY id")
    fixes = read_db(state, "SELECT source_name, outcome, strategy, reason FROM fix_history ORDER BY fix_id")
    health = read_db(state, "SELECT source_name, state FROM source_health")
    j = judge(world, sources, records)
    wrong = [x for x in j["verdicts"] if not x[3]]
    runs = stretches(j["verdicts"], t0, args.every)
    fam_of = {s.name: s.family for s in sources}
    healed = sorted({f["source_name"] for f in fixes if f["outcome"] == "promoted"})
    paged_events = ("HEAL_FAILED", "QUARANTINED", "FLAGGED_FOR_REVIEW", "DEAD")
    paged = sorted({a["source"] for a in alerts if a["event"] in paged_events and a["source"]})
    quarantined = sorted({a["source"] for a in alerts if a["event"] == "QUARANTINED" and a["source"]}
                         | {h["source_name"] for h in health if h["state"] == "QUARANTINED"})
    legit_paged = [n for n in paged if fam_of.get(n) in LEGIT]
    drift_lines = sum(1 for line in (tmp / "daemon.log").read_text(errors="replace").splitlines()
                      if "drifted" in line)
    print(f"\nscrapes stored: {len(records)}   WRONG stored scrapes: {len(wrong)}   "
          f"(joins ambiguous: {j['ambiguous']}, unjoined: {j['unjoined']})")
    for run in sorted(runs, key=lambda x: (x["source"], x["first_s"])):
        print(f"  WRONG {run['source']:<28} {run['family']:<15} {run['scrapes']:>3} scrapes from {run['first_s']:>6.1f}s "
              f"to {run['last_s']:>6.1f}s (lasted {run['lasted_s']:.1f}s)\n      stored {run['example']}\n"
              f"      truth  {run['truth']}")
    by_family: dict[str, dict] = defaultdict(lambda: {"sources": 0, "wrong_scrapes": 0, "healed": 0, "paged": 0})
    for s in sources:
        f = by_family[s.family]
        f["sources"] += 1
        f["healed"] += s.name in healed
        f["paged"] += s.name in paged
    for _r, s, _v, ok in j["verdicts"]:
        by_family[s.family]["wrong_scrapes"] += not ok
    print(f"\n{'family':<16} {'sources':>7} {'wrong':>6} {'healed':>6} {'paged':>6}")
    for fam, f in sorted(by_family.items()):
        print(f"{fam:<16} {f['sources']:>7} {f['wrong_scrapes']:>6} {f['healed']:>6} {f['paged']:>6}")
    print(f"\nsources healed: {len(healed)}   paged: {len(paged)}   quarantined: {len(quarantined)}   "
          f"legit sources paged (false alarms): {len(legit_paged)} {legit_paged}")
    events = Counter(a["event"] for a in alerts)
    print("alerts by event: " + (", ".join(f"{k} {v}" for k, v in sorted(events.items())) or "none"))
    print(f"scrapes refused as drift (log lines): {drift_lines}")
    print(f"load average: start {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}, "
          f"end {load_end[0]:.2f} {load_end[1]:.2f} {load_end[2]:.2f}")
    result = {"seed": args.seed, "sources": len(sources), "minutes": args.minutes, "scrapes_stored": len(records),
              "wrong_scrapes": len(wrong), "wrong_sources": sorted({r["source"] for r in runs}),
              "wrong_stretches": len(runs), "longest_wrong_s": max((r["lasted_s"] for r in runs), default=0),
              "ambiguous_joins": j["ambiguous"], "healed": len(healed), "paged": len(paged),
              "quarantined": len(quarantined), "legit_paged": len(legit_paged), "alerts": dict(sorted(events.items())),
              "drift_refusals": drift_lines, "load_end": [round(x, 2) for x in load_end]}
    print(json.dumps(result))
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
