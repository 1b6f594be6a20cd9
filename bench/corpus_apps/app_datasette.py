"""Datasette: the pages of one fixed SQLite database (a shop's products table) served by
Datasette 0.45 (before) and Datasette 0.65.1 (after), read through the ASGI app in process
(no server, no port); and, by 0.65.1, the same database after its owner dropped a column.

    python bench/corpus_apps/app_datasette.py            (render in the throwaway venvs, write the cases)
    python bench/corpus_apps/app_datasette.py render OUTDIR LABEL   (the render half, run by the venv)

Datasette 0.45 pins PyYAML 5.x, whose source release no longer builds on Python 3.11, and an
old uvicorn with compiled extras; its venv is installed without dependency resolution, every
package pinned below (PyYAML 6.0.1 instead, uvicorn without its extras: pages are read
through the ASGI app, never served).
"""

from __future__ import annotations

import os
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
APP = "datasette"
RELEASES = {
    "old": ("datasette-0.45", [
        "--no-deps", "datasette==0.45", "aiofiles==0.5.0", "asgi-csrf==0.9", "click==7.1.2",
        "click-default-group==1.2.2", "h11==0.9.0", "hupper==1.12", "itsdangerous==1.1.0", "janus==0.5.0",
        "Jinja2==2.11.3", "MarkupSafe==2.0.1", "mergedeep==1.3.4", "Pint==0.9", "pluggy==0.13.1",
        "python-baseconv==1.2.2", "python-multipart==0.0.20", "PyYAML==6.0.1", "uvicorn==0.11.8"]),
    "new": ("datasette-0.65.1", ["datasette==0.65.1"]),
}

PRODUCTS = [
    (1, "Claw Hammer", "Tools", 14.99, 120),
    (2, "Garden Hose 25m", "Garden", 32.5, 45),
    (3, "Chef Knife 8in", "Kitchen", 59.0, 12),
    (4, "Cordless Drill", "Tools", 129.95, 7),
    (5, "Pruning Shears", "Garden", 18.75, 64),
    (6, "Cast Iron Skillet", "Kitchen", 42.0, 30),
    (7, "Spirit Level 60cm", "Tools", 24.5, 18),
]


def make_db(path: str, with_stock: bool = True) -> None:
    if os.path.exists(path):
        os.remove(path)
    conn = sqlite3.connect(path)
    cols = "id INTEGER PRIMARY KEY, name TEXT, category TEXT, price REAL" + (", stock INTEGER" if with_stock else "")
    conn.execute(f"CREATE TABLE products ({cols})")
    for p in PRODUCTS:
        row = p if with_stock else p[:4]
        conn.execute(f"INSERT INTO products VALUES ({','.join('?' * len(row))})", row)
    conn.execute("CREATE TABLE suppliers (id INTEGER PRIMARY KEY, name TEXT, country TEXT)")
    conn.executemany("INSERT INTO suppliers VALUES (?, ?, ?)",
                     [(1, "Northwind Tools", "UK"), (2, "Greenleaf", "NL"), (3, "Forge & Pan", "DE")])
    conn.commit()
    conn.close()


def get(app, path: str) -> str:
    import asyncio

    async def call() -> str:
        body: list[bytes] = []
        scope = {"type": "http", "http_version": "1.1", "method": "GET", "scheme": "http", "path": path,
                 "raw_path": path.encode(), "root_path": "", "query_string": b"",
                 "headers": [(b"host", b"localhost")], "client": ("127.0.0.1", 1), "server": ("localhost", 80)}
        sent = False

        async def receive():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await asyncio.sleep(3600)

        async def send(msg):
            if msg["type"] == "http.response.start" and msg["status"] != 200:
                raise SystemExit(f"{path}: HTTP {msg['status']}")
            if msg["type"] == "http.response.body":
                body.append(msg.get("body", b""))

        await app(scope, receive, send)
        return b"".join(body).decode("utf-8")

    return asyncio.run(call())


def render(outdir: str, label: str) -> None:
    from datasette.app import Datasette

    dbs = {"shop": True}
    if label == "new":
        dbs["shop2"] = False
    for name, stock in dbs.items():
        path = os.path.join(outdir, name + ".db")
        make_db(path, with_stock=stock)
        app = Datasette([path], immutables=[], cors=False).app()
        for page, url in (("table", "/{db}/products"), ("row", "/{db}/products/3"), ("database", "/{db}")):
            html = get(app, url.format(db=name))
            with open(os.path.join(outdir, f"{name}-{page}.html"), "w", encoding="utf-8") as fh:
                fh.write(html.replace("shop2", "shop"))


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "render":
    render(sys.argv[2], sys.argv[3])
    sys.exit(0)


ORIGIN = ("Datasette (Apache-2.0) {page} of one fixed 7-row SQLite products table, served by Datasette 0.45 "
          "(before) and {after} (after){extra}.")
SUBS = [(r"Quer(y|ies) took [0-9.]+ms", r"Quer\1 took 1.000ms")]


def make_cases(w, page) -> None:
    from common import tidy

    def p(label: str, name: str) -> str:
        return tidy(page(label, name), SUBS)

    old_t, new_t, gone_t = p("old", "shop-table.html"), p("new", "shop-table.html"), p("new", "shop2-table.html")
    old_r, new_r, gone_r = p("old", "shop-row.html"), p("new", "shop-row.html"), p("new", "shop2-row.html")
    old_d, new_d = p("old", "shop-database.html"), p("new", "shop-database.html")

    def o(pg: str, extra: str = "", after: str = "Datasette 0.65.1") -> str:
        return ORIGIN.format(page=pg, after=after, extra=extra)

    rows = {"name": ("td.col-name", None, "str"), "price": ("td.col-price", None, "float"),
            "stock": ("td.col-stock", None, "int")}
    rows_truth = {n: (s, a) for n, (s, a, _t) in rows.items()}
    w.case("datasette-table-rows-0.45-to-0.65", o("the table page", " The table is now wrapped in div.table-wrapper "
           "inside section.content; div.bd is gone."), "div.bd > table.rows-and-columns > tbody > tr", rows,
           old_t, new_t, "table.rows-and-columns tbody tr", rows_truth, "positive")
    head = {"table": ("div.bd > h1", None, "str"), "count": ("div.bd > h3", None, "int")}
    w.case("datasette-table-header-0.45-to-0.65", o("the table page", " The title moved into div.page-header."),
           None, head, old_t, new_t, None, {"table": ("div.page-header h1", None), "count": ("section.content > h3", None)},
           "positive")
    dbt = {"table": ("h2 a", None, "str"), "columns": ("p em", None, "str"), "rows": ("p:nth-of-type(2)", None, "int")}
    w.case("datasette-database-tables-0.45-to-0.65", o("the database page", " Each table's name is an <h3>, no longer an "
           "<h2>."), "div.bd div.db-table", dbt, old_d, new_d, "section.content div.db-table",
           {"table": ("h3 a", None), "columns": ("p em", None), "rows": ("p:nth-of-type(2)", None)}, "positive")
    row = {"name": ("div.bd > table td.col-name", None, "str"), "category": ("div.bd > table td.col-category", None, "str"),
           "price": ("div.bd > table td.col-price", None, "float")}
    row_truth = {"name": ("table.rows-and-columns td.col-name", None), "category": ("table.rows-and-columns td.col-category", None),
                 "price": ("table.rows-and-columns td.col-price", None)}
    w.case("datasette-row-0.45-to-0.65", o("the row page of product 3", " The table is now wrapped in div.table-wrapper."),
           None, row, old_r, new_r, None, row_truth, "positive")
    # controls: selectors written against Datasette's own column classes survive the upgrade
    w.case("datasette-table-colclasses-0.45-to-0.65", o("the table page", " The column classes are unchanged."),
           "table.rows-and-columns tbody tr", rows, old_t, new_t, "table.rows-and-columns tbody tr", rows_truth, "control")
    rowc = {"name": ("table.rows-and-columns td.col-name", None, "str"),
            "stock": ("table.rows-and-columns td.col-stock", None, "int")}
    w.case("datasette-row-colclasses-0.45-to-0.65", o("the row page of product 3", " The column classes are unchanged."),
           None, rowc, old_r, new_r, None, {n: (s, a) for n, (s, a, _t) in rowc.items()}, "control")
    # negatives: the database's owner dropped the stock column
    dropped = " The database's owner has since dropped the stock column."
    w.case("datasette-table-stock-dropped-0.65", o("the table page", dropped),
           "table.rows-and-columns tbody tr", rows, old_t, gone_t, "table.rows-and-columns tbody tr",
           {**rows_truth, "stock": None}, "negative")
    w.case("datasette-row-stock-dropped-0.65", o("the row page of product 3", dropped), None,
           {**row, "stock": ("div.bd > table td.col-stock", None, "int")}, old_r, gone_r, None,
           {**row_truth, "stock": None}, "negative")


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    import common
    sys.exit(common.main(__file__, APP, RELEASES, make_cases))
