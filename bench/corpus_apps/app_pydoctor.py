"""pydoctor: the API documentation of one fixed demo package, written by pydoctor 21.2.2
(before) and pydoctor 24.11.2 (after); and by 24.11.2 again with one function and the
constant hidden from the docs (`--privacy HIDDEN:...`, the negatives).

    python bench/corpus_apps/app_pydoctor.py            (render in the throwaway venvs, write the cases)
    python bench/corpus_apps/app_pydoctor.py render OUTDIR LABEL   (the render half, run by the venv)
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
APP = "pydoctor"
RELEASES = {
    "old": ("pydoctor-21.2.2", ["pydoctor==21.2.2"]),
    "new": ("pydoctor-24.11.2", ["pydoctor==24.11.2"]),
}

PRICING = '''"""Prices, discounts and taxes for the shop."""

VAT_RATE = 0.2
"""The value-added tax rate applied to every sale."""


def net_price(gross, rate=VAT_RATE):
    """Return the price without tax.

    @param gross: the price a customer pays
    @param rate: the tax rate
    @return: the net price, rounded to cents
    """
    return round(gross / (1 + rate), 2)


def discount(price, percent):
    """Return C{price} less C{percent} per cent."""
    return round(price * (100 - percent) / 100, 2)


def BULK(price, quantity):
    """Return the total for C{quantity} items, ten per cent off above twenty."""
    total = price * quantity
    return total * 0.9 if quantity > 20 else total


class PriceList:
    """A named list of products and their prices."""

    currency = "EUR"
    """The currency every price is in."""

    def __init__(self, name):
        """Make an empty price list called C{name}."""
        self.name = name
        self.items = {}

    def add(self, sku, price):
        """Add a product, or change its price."""
        self.items[sku] = price

    def total(self):
        """Return the sum of every price."""
        return sum(self.items.values())

    def cheapest(self):
        """Return the SKU with the lowest price."""
        return min(self.items, key=self.items.get)
'''


def render(outdir: str, label: str) -> None:
    import subprocess

    src = os.path.join(outdir, "src", "shoplib")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "__init__.py"), "w", encoding="utf-8") as fh:
        fh.write('"""A small shop library used to demonstrate API docs."""\n')
    with open(os.path.join(src, "pricing.py"), "w", encoding="utf-8") as fh:
        fh.write(PRICING.replace("BULK", "bulk_total"))
    runs = {"html": []}
    if label == "new":
        runs["html-hidden"] = ["--privacy", "HIDDEN:shoplib.pricing.bulk_total", "--privacy", "HIDDEN:shoplib.pricing.VAT_RATE"]
    for variant, extra in runs.items():
        out = os.path.join(outdir, variant)
        exe = os.path.join(os.path.dirname(sys.executable), "pydoctor")
        # pydoctor exits non-zero on docstring warnings; the page written is checked below
        subprocess.run([exe, "--quiet", "--html-output", out, "--project-name", "shoplib", "--docformat", "epytext",
                        *extra, src], check=False, cwd=os.path.dirname(src))
        if not os.path.exists(os.path.join(out, "shoplib.pricing.html")):
            raise SystemExit("pydoctor wrote no shoplib.pricing.html")


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "render":
    render(sys.argv[2], sys.argv[3])
    sys.exit(0)


ORIGIN = ("pydoctor (MIT) API documentation of one fixed demo package (shoplib.pricing: a constant, three functions, "
          "a class), written by pydoctor 21.2.2 (before) and {after} (after){extra}.")


def make_cases(w, page) -> None:
    from common import tidy

    subs = [(r"pydoctor</a>(\s*)[0-9.]+ at [0-9-]+ [0-9:]+", r"pydoctor</a>\1VERSION at DATE")]
    old = tidy(page("old", "html/shoplib.pricing.html"), subs)
    new = tidy(page("new", "html/shoplib.pricing.html"), subs)
    hidden = tidy(page("new", "html-hidden/shoplib.pricing.html"), subs)
    o = ORIGIN.format(after="pydoctor 24.11.2", extra="")
    summary = {"name": ("td:nth-child(2) code a", None, "str"), "summary": ("td:nth-child(3) span", None, "str")}
    w.case("pydoctor-summary-table-21-to-24", o + " The summary table is sorted by kind then name; summaries lost their "
           "<span>.", "table.children tr.function", summary, old, new, "table.children tr.function",
           {"name": ("td:nth-child(2) code a", None), "summary": ("td:nth-child(3)", None)}, "positive")
    fields = {"param": ("div.docstring table.fieldTable td.fieldArg", None, "str"),
              "param_doc": ("div.docstring table.fieldTable tr.fieldStart td:nth-child(3)", None, "str"),
              "returns": ("div.docstring table.fieldTable tr.fieldStart:nth-child(3) td:nth-child(2)", None, "str")}
    w.case("pydoctor-field-table-21-to-24", o + " The parameters table puts its heading on a row of its own, each "
           "argument in span.fieldArg and its text in td.fieldArgDesc.", None, fields, old, new, None,
           {"param": ("table.fieldTable span.fieldArg", None), "param_doc": ("table.fieldTable td.fieldArgDesc", None),
            "returns": ("table.fieldTable tr:nth-child(5) td", None)}, "positive")
    const = {"name": ("div.basevariable span.py-defname", None, "str"),
             "doc": ("div.basevariable div.functionBody p", None, "str"),
             "type": ("div.basevariable div.functionBody > code", None, "str")}
    w.case("pydoctor-constant-21-to-24", o + " The module variable is now a constant (div.baseconstant), its type "
           "in the header.", None, const, old, new, None,
           {"name": ("div.baseconstant span.py-defname", None), "doc": ("div.baseconstant div.functionBody p", None),
            "type": ("div.baseconstant div.functionHeader code", None)}, "positive")
    funcs = {"name": ("span.py-defname", None, "str"), "doc": ("div.docstring > div > p", None, "str")}
    w.case("pydoctor-functions-21-to-24", o + " The functions are in another order; the markup the selectors use is kept.",
           "div#childList div.basefunction", funcs, old, new, "div#childList div.basefunction",
           {"name": ("span.py-defname", None), "doc": ("div.docstring > div > p", None)}, "control")
    w.case("pydoctor-module-doc-21-to-24", o, None,
           {"doc": ("div.moduleDocstring p", None, "str"), "module": ("h1.module code code:nth-of-type(2) a", None, "str")},
           old, new, None, {"doc": ("div.moduleDocstring p", None), "module": ("h1.module code code:nth-of-type(2) a", None)},
           "control")
    gone = ORIGIN.format(after="pydoctor 24.11.2 run with --privacy HIDDEN: for bulk_total and VAT_RATE",
                         extra=": neither is documented any more")
    w.case("pydoctor-hidden-function-21-to-24", gone, None,
           {"name": ("div#childList div.basefunction:nth-child(4) span.py-defname", None, "str"),
            "doc": ("div#childList div.basefunction:nth-child(4) div.docstring p", None, "str")},
           old, hidden, None, {"name": None, "doc": None}, "negative")
    w.case("pydoctor-hidden-constant-21-to-24", gone, None, const, old, hidden, None,
           {"name": None, "doc": None, "type": None}, "negative")


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    import common
    sys.exit(common.main(__file__, APP, RELEASES, make_cases))
