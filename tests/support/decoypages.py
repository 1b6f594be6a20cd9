"""A class-less product table whose "Sponsored" row comes and goes (the completeness tests)."""

from __future__ import annotations

SIX = [("Trail Kettle", "Northpeak", "24.00", "TK-1"), ("Camp Mug", "Kestrel", "9.50", "CM-2"),
       ("Head Torch", "Lumo", "31.25", "HT-3"), ("Dry Bag", "Seal", "14.00", "DB-4"),
       ("Tent Pegs", "Anchor", "6.75", "TP-5"), ("Water Filter", "Clear", "48.90", "WF-6")]

PLIST_BP = {"every": "1h", "items": "#plist tbody tr",
            "fields": {"name": {"css": "td:nth-child(1)"}, "brand": {"css": "td:nth-child(2)"},
                       "price": {"css": "td:nth-child(3)", "type": "float"}, "sku": {"css": "td:nth-child(4)"}}}


def plist(sponsored: bool = False, rows=SIX) -> str:
    ad = ('<tr class="sponsored"><td>Mega Stove <span class="badge">Sponsored</span></td><td>Adco</td>'
          '<td>99.00</td><td>AD-0</td></tr>') if sponsored else ""
    body = "".join(f"<tr><td>{n}</td><td>{b}</td><td>{p}</td><td>{s}</td></tr>" for n, b, p, s in rows)
    return ('<html><head><title>Products</title></head><body><h1>Products</h1><table id="plist"><thead><tr>'
            '<th>Name</th><th>Brand</th><th>Price</th><th>SKU</th></tr></thead>'
            f'<tbody>{ad}{body}</tbody></table></body></html>')


def plist_without_price(rows=SIX) -> str:
    """The price column removed: the SKU column moves into its place (the third cell)."""
    body = "".join(f"<tr><td>{n}</td><td>{b}</td><td>{s}</td></tr>" for n, b, _p, s in rows)
    return ('<html><head><title>Products</title></head><body><h1>Products</h1><table id="plist"><thead><tr>'
            f'<th>Name</th><th>Brand</th><th>SKU</th></tr></thead><tbody>{body}</tbody></table></body></html>')
