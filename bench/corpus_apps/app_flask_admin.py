"""Flask-Admin: the list and detail views of one fixed 7-row products table, rendered with
Flask's test client by Flask-Admin 1.5.8 (its default Bootstrap 2 templates, before) and
Flask-Admin 2.2.1 (its Bootstrap 4 theme, after); by 1.5.8's Bootstrap 3 templates with and
without a search box (a control), and by 2.2.1 with the stock column taken off the list and
the detail view (the negatives).

    python bench/corpus_apps/app_flask_admin.py            (render in the throwaway venvs, write the cases)
    python bench/corpus_apps/app_flask_admin.py render OUTDIR LABEL   (the render half, run by the venv)
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
APP = "flask-admin"
RELEASES = {
    "old": ("flask-admin-1.5.8", [
        "flask-admin==1.5.8", "flask==1.1.4", "jinja2==2.11.3", "markupsafe==2.0.1", "itsdangerous==1.1.0",
        "werkzeug==1.0.1", "wtforms==2.3.3", "flask-sqlalchemy==2.5.1", "sqlalchemy==1.4.52", "click==7.1.2"]),
    "new": ("flask-admin-2.2.1", ["flask-admin[sqlalchemy]==2.2.1", "flask==3.1.3", "flask-sqlalchemy==3.1.1",
                                  "sqlalchemy==2.1.9", "wtforms==3.3.2"]),
}

PRODUCTS = [
    ("Claw Hammer", "Tools", 14.99, 120),
    ("Garden Hose 25m", "Garden", 32.5, 45),
    ("Chef Knife 8in", "Kitchen", 59.0, 12),
    ("Cordless Drill", "Tools", 129.95, 7),
    ("Pruning Shears", "Garden", 18.75, 64),
    ("Cast Iron Skillet", "Kitchen", 42.0, 30),
    ("Spirit Level 60cm", "Tools", 24.5, 18),
]


def render(outdir: str, label: str) -> None:
    import warnings

    from flask import Flask
    from flask_admin import Admin
    from flask_admin.contrib.sqla import ModelView
    from flask_sqlalchemy import SQLAlchemy

    warnings.simplefilter("ignore", DeprecationWarning)  # 2.2.1 asks for the db object, 1.5.8 takes the session
    variants = {"": {}}
    if label == "old":
        variants["-search"] = {"column_searchable_list": ["name"]}
        variants["-bs3"] = {}
    else:
        variants["-nostock"] = {"column_list": ["name", "category", "price"],
                                "column_details_list": ["name", "category", "price"]}
    for suffix, extra in variants.items():
        db_path = os.path.join(outdir, f"shop{suffix}.db")
        if os.path.exists(db_path):
            os.remove(db_path)
        app = Flask("shop")
        app.config.update(SQLALCHEMY_DATABASE_URI="sqlite:///" + db_path, SQLALCHEMY_TRACK_MODIFICATIONS=False,
                          SECRET_KEY="corpus", TESTING=True)
        db = SQLAlchemy(app)

        class Product(db.Model):  # type: ignore[name-defined]
            __tablename__ = "product"
            id = db.Column(db.Integer, primary_key=True)
            name = db.Column(db.String(80))
            category = db.Column(db.String(40))
            price = db.Column(db.Float)
            stock = db.Column(db.Integer)

        class ProductView(ModelView):
            can_view_details = True
            column_list = extra.get("column_list", ["name", "category", "price", "stock"])
            column_details_list = extra.get("column_details_list", ["name", "category", "price", "stock"])
            column_searchable_list = extra.get("column_searchable_list")
            column_default_sort = "id"

        if label == "old":
            admin = Admin(app, name="Shop admin", template_mode="bootstrap2" if suffix == "" else "bootstrap3")
        else:
            from flask_admin.theme import Bootstrap4Theme
            admin = Admin(app, name="Shop admin", theme=Bootstrap4Theme())
        with app.app_context():
            db.create_all()
            for name, cat, price, stock in PRODUCTS:
                db.session.add(Product(name=name, category=cat, price=price, stock=stock))
            db.session.commit()
            admin.add_view(ProductView(Product, db.session, name="Products"))
        client = app.test_client()
        for page, url in (("list", "/admin/product/"), ("details", "/admin/product/details/?id=3")):
            resp = client.get(url)
            if resp.status_code != 200:
                raise SystemExit(f"{url}: HTTP {resp.status_code}")
            with open(os.path.join(outdir, f"{page}{suffix}.html"), "w", encoding="utf-8") as fh:
                fh.write(resp.get_data(as_text=True))


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "render":
    render(sys.argv[2], sys.argv[3])
    sys.exit(0)


ORIGIN = ("Flask-Admin (BSD-3-Clause) {page} of one fixed 7-row products table (SQLAlchemy model, SQLite), rendered "
          "with Flask's test client by {before} (before) and {after} (after){extra}.")
OLD, NEW = "Flask-Admin 1.5.8 with its default Bootstrap 2 templates", "Flask-Admin 2.2.1 with its Bootstrap 4 theme"


def make_cases(w, page) -> None:
    from common import tidy

    old_l, new_l, gone_l = (tidy(page(lbl, f"list{sfx}.html")) for lbl, sfx in (("old", ""), ("new", ""), ("new", "-nostock")))
    old_d, new_d, gone_d = (tidy(page(lbl, f"details{sfx}.html")) for lbl, sfx in (("old", ""), ("new", ""), ("new", "-nostock")))
    bs3_l, search_l = tidy(page("old", "list-bs3.html")), tidy(page("old", "list-search.html"))

    def o(pg: str, extra: str = "", before: str = OLD, after: str = NEW) -> str:
        return ORIGIN.format(page=pg, before=before, after=after, extra=extra)

    by_title = {"name": ("td[data-title=Name]", None, "str"), "price": ("td[data-title=Price]", None, "float"),
                "stock": ("td[data-title=Stock]", None, "int")}
    cols_truth = {"name": ("td.col-name", None), "price": ("td.col-price", None), "stock": ("td.col-stock", None)}
    w.case("flask-admin-list-datatitle-1.5-bs2-to-2.2-bs4", o("the list view", " The cells lost the data-title "
           "attributes the Bootstrap 2 templates gave them."), "table.model-list tbody tr", by_title, old_l, new_l,
           "table.model-list tbody tr", cols_truth, "positive")
    cols = {"name": ("td.col-name", None, "str"), "category": ("td.col-category", None, "str"),
            "price": ("td.col-price", None, "float")}
    w.case("flask-admin-list-wrapper-1.5-bs2-to-2.2-bs4", o("the list view", " The table's wrapper div#no-more-tables "
           "became div.table-responsive."), "div#no-more-tables > table > tbody > tr", cols, old_l, new_l,
           "div.table-responsive > table > tbody > tr", {n: (s, a) for n, (s, a, _t) in cols.items()}, "positive")
    header = {"site": ("div.navbar-inner a.brand", None, "str"), "count": ("ul.actions-nav li.active a", None, "int"),
              "view": ("ul.nav li.active a", None, "str")}
    w.case("flask-admin-list-header-1.5-bs2-to-2.2-bs4", o("the list view", " The navbar and the tabs are Bootstrap 4's: "
           "no navbar-inner, a.navbar-brand, the active tab marked on its link."), None, header, old_l, new_l, None,
           {"site": ("a.navbar-brand", None), "count": ("ul.nav-tabs a.nav-link.active", None),
            "view": ("ul.navbar-nav li.active a", None)}, "positive")
    # controls
    w.case("flask-admin-list-colclasses-1.5-bs2-to-2.2-bs4", o("the list view", " The column classes are unchanged."),
           "table.model-list tbody tr", cols, old_l, new_l, "table.model-list tbody tr",
           {n: (s, a) for n, (s, a, _t) in cols.items()}, "control")
    details = {"name": ("table.searchable tr:nth-child(1) td:nth-child(2)", None, "str"),
               "price": ("table.searchable tr:nth-child(3) td:nth-child(2)", None, "float"),
               "stock": ("table.searchable tr:nth-child(4) td:nth-child(2)", None, "int")}
    w.case("flask-admin-details-1.5-bs2-to-2.2-bs4", o("the detail view of product 3", " The details table is unchanged."),
           None, details, old_d, new_d, None, {n: (s, a) for n, (s, a, _t) in details.items()}, "control")
    w.case("flask-admin-list-search-box-1.5-bs3", o("the list view", " The site added a search box above the table.",
           before="Flask-Admin 1.5.8 with its Bootstrap 3 templates", after="the same with a name search"),
           "div.table-responsive table.model-list tbody tr", cols, bs3_l, search_l,
           "div.table-responsive table.model-list tbody tr", {n: (s, a) for n, (s, a, _t) in cols.items()}, "control")
    # negatives: the site took the stock column off the list and the detail view
    dropped = " The site has since removed stock from column_list and column_details_list."
    w.case("flask-admin-list-stock-dropped-1.5-bs2-to-2.2-bs4", o("the list view", dropped),
           "table.model-list tbody tr", by_title, old_l, gone_l, "table.model-list tbody tr",
           {**cols_truth, "stock": None}, "negative")
    w.case("flask-admin-details-stock-dropped-1.5-bs2-to-2.2-bs4", o("the detail view of product 3", dropped), None,
           details, old_d, gone_d, None,
           {"name": ("table.searchable tr:nth-child(1) td:nth-child(2)", None),
            "price": ("table.searchable tr:nth-child(3) td:nth-child(2)", None), "stock": None}, "negative")


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    import common
    sys.exit(common.main(__file__, APP, RELEASES, make_cases))
