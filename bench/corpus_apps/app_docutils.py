"""docutils: one reStructuredText price sheet written by docutils 0.14 (html4css1 writer)
and docutils 0.21.2 (html5 writer, and its html4css1 writer as a control).

    python bench/corpus_apps/app_docutils.py            (render in the throwaway venvs, write the cases)
    python bench/corpus_apps/app_docutils.py render OUTDIR LABEL   (the render half, run by the venv)
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
APP = "docutils"
RELEASES = {
    "old": ("docutils-0.14", ["docutils==0.14"]),
    "new": ("docutils-0.21.2", ["docutils==0.21.2"]),
}

PRODUCTS = [
    ("HM-100", "Claw Hammer", "14.99", "120"),
    ("GH-025", "Garden Hose 25m", "32.50", "45"),
    ("CK-008", "Chef Knife 8in", "59.00", "12"),
    ("CD-018", "Cordless Drill", "129.95", "7"),
    ("PS-200", "Pruning Shears", "18.75", "64"),
    ("CS-010", "Cast Iron Skillet", "42.00", "30"),
]
TERMS = [
    ("Backorder", "An item ordered while out of stock, shipped when it is back."),
    ("Bundle", "Two or more products sold together at one price."),
    ("Clearance", "Stock sold below cost to make room for new lines."),
    ("Lead time", "Days between an order and its dispatch."),
]


def document(with_stock: bool = True, with_contact: bool = True) -> str:
    rows = [p if with_stock else p[:3] for p in PRODUCTS]
    head = ("SKU", "Name", "Price", "Stock") if with_stock else ("SKU", "Name", "Price")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    rule = "  ".join("=" * w for w in widths)

    def line(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    table = "\n".join("   " + x for x in [rule, line(head), rule, *[line(r) for r in rows], rule])
    terms = "\n\n".join(f"{t}\n    {d}" for t, d in TERMS)
    contact = ":Contact: sales@example.org\n" if with_contact else ""
    return f"""==================
Shoplib price sheet
==================

:Author: Ada Lovelace
:Version: 2.3
:Date: 2023-11-14
{contact}:Status: Final

Products
========

.. table:: Current prices

{table}

Shipping
========

:Carrier: Northwind Freight
:Free over: 75.00
:Dispatch: 2 working days

Glossary
========

{terms}
""".replace("==================\nShoplib", "===================\nShoplib").replace("sheet\n==================", "sheet\n===================")


def render(outdir: str, label: str) -> None:
    from docutils.core import publish_string

    settings = {"embed_stylesheet": False, "stylesheet_path": "", "stylesheet": "", "output_encoding": "unicode",
                "_disable_config": True, "datestamp": None, "generator": False}

    def out(name: str, writer: str, **doc) -> None:
        html = publish_string(document(**doc), writer_name=writer, settings_overrides=settings)
        if isinstance(html, bytes):
            html = html.decode("utf-8")
        with open(os.path.join(outdir, name), "w", encoding="utf-8") as fh:
            fh.write(html)

    if label == "old":
        out("sheet.html", "html4css1")
    else:
        out("sheet.html", "html5")
        out("sheet-html4.html", "html4css1")
        out("sheet-nostock.html", "html5", with_stock=False)
        out("sheet-nocontact.html", "html5", with_contact=False)
        out("sheet-html4-nocontact.html", "html4css1", with_contact=False)


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "render":
    render(sys.argv[2], sys.argv[3])
    sys.exit(0)


ORIGIN = ("docutils (public domain / BSD) HTML of one fixed reStructuredText price sheet, written by "
          "docutils 0.14's html4css1 writer (before) and docutils 0.21.2's {after} (after){extra}.")


def make_cases(w, page) -> None:
    from common import tidy

    old = tidy(page("old", "sheet.html"))
    h5 = tidy(page("new", "sheet.html"))
    h4 = tidy(page("new", "sheet-html4.html"))
    nostock = tidy(page("new", "sheet-nostock.html"))
    nocontact = tidy(page("new", "sheet-nocontact.html"))
    h4_nocontact = tidy(page("new", "sheet-html4-nocontact.html"))
    o5 = ORIGIN.format(after="html5 writer", extra="")
    docinfo = {"author": ("table.docinfo tr:nth-child(1) td", None, "str"),
               "version": ("table.docinfo tr:nth-child(2) td", None, "float"),
               "date": ("table.docinfo tr:nth-child(3) td", None, "str"),
               "status": ("table.docinfo tr:nth-child(5) td", None, "str")}
    docinfo_truth = {n: (f"dl.docinfo dd.{n}", None) for n in docinfo}
    w.case("docutils-docinfo-0.14-to-0.21-html5", o5 + " The docinfo table became a <dl> with a class per field.",
           None, docinfo, old, h5, None, docinfo_truth, "positive")
    table = {"sku": ("td:nth-child(1)", None, "str"), "name": ("td:nth-child(2)", None, "str"),
             "price": ("td:nth-child(3)", None, "float"), "stock": ("td:nth-child(4)", None, "int")}
    table_truth = {"sku": ("td:nth-child(1)", None), "name": ("td:nth-child(2)", None),
                   "price": ("td:nth-child(3)", None), "stock": ("td:nth-child(4)", None)}
    w.case("docutils-price-table-0.14-to-0.21-html5", o5 + " The table lost its docutils class and each cell got a <p>.",
           "div#products table.docutils tbody tr", table, old, h5, "section#products table tbody tr", table_truth, "positive")
    ship = {"carrier": ("table.field-list tr.field:nth-child(1) td.field-body", None, "str"),
            "free_over": ("table.field-list tr.field:nth-child(2) td.field-body", None, "float"),
            "dispatch": ("table.field-list tr.field:nth-child(3) td.field-body", None, "str")}
    ship_truth = {"carrier": ("dl.field-list dd:nth-of-type(1)", None), "free_over": ("dl.field-list dd:nth-of-type(2)", None),
                  "dispatch": ("dl.field-list dd:nth-of-type(3)", None)}
    w.case("docutils-fieldlist-0.14-to-0.21-html5", o5 + " The field-list table became <dl class=\"field-list\">.",
           None, ship, old, h5, None, ship_truth, "positive")
    gloss = {"term": ("div#glossary dl.docutils dt:nth-of-type(2)", None, "str"),
             "meaning": ("div#glossary dl.docutils dd:nth-of-type(2)", None, "str")}
    w.case("docutils-glossary-0.14-to-0.21-html5", o5 + " The section <div>s became <section>s and the list lost its class.",
           None, gloss, old, h5, None,
           {"term": ("section#glossary dt:nth-of-type(2)", None), "meaning": ("section#glossary dd:nth-of-type(2)", None)},
           "positive")
    # negatives: the author changed the document, the data is not on the page any more
    w.case("docutils-price-table-stock-dropped-0.21-html5",
           ORIGIN.format(after="html5 writer", extra=", the sheet's author having dropped the Stock column"),
           "div#products table.docutils tbody tr", table, old, nostock, "section#products table tbody tr",
           {**table_truth, "stock": None}, "negative")
    contact = {"author": ("table.docinfo tr:nth-child(1) td", None, "str"),
               "contact": ("table.docinfo tr:nth-child(4) td a", None, "str")}
    w.case("docutils-docinfo-contact-dropped-0.21-html5",
           ORIGIN.format(after="html5 writer", extra=", the sheet's author having removed the Contact field"),
           None, contact, old, nocontact, None, {"author": ("dl.docinfo dd.author", None), "contact": None}, "negative")
    w.case("docutils-docinfo-contact-dropped-0.21-html4css1",
           ORIGIN.format(after="html4css1 writer", extra=", the sheet's author having removed the Contact field: "
                         "the positional row selector now lands on Status"),
           None, {"author": docinfo["author"], "contact": ("table.docinfo tr:nth-child(4) td", None, "str")},
           old, h4_nocontact, None, {"author": ("table.docinfo tr:nth-child(1) td", None), "contact": None}, "negative")
    # controls: the same writer one release later keeps the markup the selectors use
    o4 = ORIGIN.format(after="html4css1 writer", extra="")
    w.case("docutils-price-table-0.14-to-0.21-html4css1", o4 + " Only the head and a link's class order changed.",
           "div#products table.docutils tbody tr", table, old, h4, "div#products table.docutils tbody tr", table_truth, "control")
    w.case("docutils-docinfo-0.14-to-0.21-html4css1", o4 + " Only the head and a link's class order changed.",
           None, docinfo, old, h4, None, {n: (s, a) for n, (s, a, _t) in docinfo.items()}, "control")


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    import common
    sys.exit(common.main(__file__, APP, RELEASES, make_cases))
