"""Pages of a shop whose values go behind a wall and come back: a listing of products (name,
price, stock status) and a single product page, for the value-profile tests."""

from __future__ import annotations

PRODUCTS = [("Trail Kettle", 24.0, "in stock"), ("Camp Mug", 9.5, "in stock"), ("Head Torch", 31.25, "low"),
            ("Dry Bag", 14.0, "in stock"), ("Tent Pegs", 6.75, "sold out"), ("Water Filter", 48.9, "low")]

SHOP_BP = {"every": "1h", "items": "ul.products li.product",
           "fields": {"name": {"css": "h3.name"}, "price": {"css": "span.price", "type": "float"},
                      "stock": {"css": "span.stock"}}}

ITEM_BP = {"every": "1h",
           "fields": {"title": {"css": "h1.title"}, "price": {"css": "span.price", "type": "float"}}}


def shop(day: int = 0, products=PRODUCTS, price_text: str | None = None, name_text: str | None = None,
         stock_text: str | None = None, prices: bool = True) -> str:
    """The listing on `day` (prices move a little each day); `*_text` puts that text in every
    record's field instead of its value (a wall, a teaser, a placeholder); `prices=False`: the
    cards lose their price entirely."""
    rows = []
    for i, (name, price, stock) in enumerate(products):
        moved = round(price * (1 + 0.03 * ((day + i) % 4)), 2)
        price_node = f'<span class="price">{price_text or f"${moved:.2f}"}</span>' if prices else ""
        rows.append(f'<li class="product"><h3 class="name">{name_text or name}</h3>{price_node}'
                    f'<span class="stock">{stock_text or stock}</span></li>')
    return ('<html><head><title>Outdoor shop</title></head><body><nav><a href="/">home</a></nav>'
            f'<h2>Our products</h2><ul class="products">{"".join(rows)}</ul><footer>Shop Ltd</footer></body></html>')


def item(day: int = 0, price_text: str | None = None) -> str:
    """A single product page; `price_text` replaces the price."""
    price = price_text or f"${24 + day * 0.5:.2f}"
    return ('<html><head><title>Trail Kettle</title></head><body><main><h1 class="title">Trail Kettle</h1>'
            f'<p class="desc">A light kettle for the trail.</p><div class="buy"><span class="price">{price}</span>'
            '<button>Add to cart</button></div></main></body></html>')
