"""Pages whose change passes validation but gives wrong data, and a legit redesign that does not."""

PLAYERS = [("Ada", "Owls", 31, 12, 1), ("Grace", "Hawks", 27, 11, 2), ("Linus", "Owls", 24, 10, 3),
           ("Margaret", "Lynx", 22, 9, 4), ("Ken", "Hawks", 19, 8, 5)]

TABLE_BP = {"every": "1h", "items": "table.stats tr.player",
            "fields": {"name": {"css": "td.name"}, "score": {"css": "td.score", "type": "int"}}}

POSITIONAL_BP = {"every": "1h", "items": "table.league tbody tr",
                 "fields": {"name": {"css": "td:nth-child(1)"}, "score": {"css": "td:nth-child(3)", "type": "int"},
                            "games": {"css": "td:nth-child(4)", "type": "int"}}}

PRODUCT_BP = {"every": "1h",
              "fields": {"title": {"css": ".product .title"}, "price": {"css": ".product .price", "type": "float"},
                         "stock": {"css": ".stock", "type": "int"}}}


def _page(body: str, head: str = "Stats") -> str:
    return (f'<html><head><title>{head}</title></head><body><nav><a href="/">home</a></nav>'
            f'{body}<footer>© the site</footer></body></html>')


def table(rows=PLAYERS, promoted: tuple | None = None, wrap: bool = False, teams: bool = False) -> str:
    """`wrap` changes the page around the table; `teams` adds a column to every row (a redesign
    the selectors' region shows)."""
    team = (lambda t: f'<td class="team"><img src="/{t}.png" alt="">{t}</td>') if teams else (lambda t: "")
    body = "".join(f'<tr class="player"><td class="name">{n}</td><td class="score">{s}</td>{team(t)}</tr>'
                   for n, t, s, _g, _r in rows)
    if promoted:
        n, s = promoted
        body = (f'<tr class="player promoted"><td class="name">{n} <span class="badge">Sponsored</span></td>'
                f'<td class="score">{s}</td></tr>') + body
    heads = "<th>Name</th><th>Score</th>" + ("<th>Team</th>" if teams else "")
    table = f'<table class="stats"><tr>{heads}</tr>{body}</table>'
    return _page(f'<div class="board">{table}</div>' if wrap else table)


def league(rows=PLAYERS, drop_team: bool = False) -> str:
    head = "<th>Name</th>" + ("" if drop_team else "<th>Team</th>") + "<th>Score</th><th>Games</th><th>Rank</th>"
    body = "".join(f"<tr><td>{n}</td>" + ("" if drop_team else f"<td>{t}</td>") +
                   f"<td>{s}</td><td>{g}</td><td>{r}</td></tr>" for n, t, s, g, r in rows)
    return _page(f'<table class="league"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')


def _card(title: str, price: str, stock: int | None) -> str:
    stock_html = f'<span class="stock">{stock} in stock</span>' if stock is not None else ""
    return f'<div class="product"><h2 class="title">{title}</h2><span class="price">{price}</span>{stock_html}</div>'


def product(decoy_before: bool = False, stock_removed: bool = False, price: str = "$24.00",
            placeholder: str | None = None, redesign: bool = False) -> str:
    real = _card("Trail Kettle", placeholder or price, None if stock_removed else 12)
    recommended = '<section class="recommended"><h3>Recommended</h3>' + _card("Camp Mug", "$9.00", 40) + "</section>"
    if decoy_before:
        body = f"<main>{recommended}{real}</main>"
    elif stock_removed:
        body = f"<main>{real}</main><aside>{recommended}</aside>"
    elif redesign:
        body = f'<main class="shop"><article class="item-view">{real}</article></main>'
    else:
        body = f"<main>{real}</main>"
    return _page(body, head="Trail Kettle")


SPECS_BP = {"every": "1h",
            "fields": {"brand": {"css": "dl.specs dd:nth-of-type(1)"}, "model": {"css": "dl.specs dd:nth-of-type(2)"},
                       "weight": {"css": "dl.specs dd:nth-of-type(3)"}}}


def specs(order=("Brand", "Model", "Weight"), weight: str = "1.2 kg") -> str:
    """A spec sheet read by position: `order` reorders its label/value pairs."""
    values = {"Brand": "Northpeak", "Model": "Trail Kettle", "Weight": weight}
    pairs = "".join(f"<dt>{k}</dt><dd>{values[k]}</dd>" for k in order)
    return _page(f'<main><h1>Trail Kettle</h1><dl class="specs">{pairs}</dl></main>', head="Trail Kettle")


def league_swapped(rows=PLAYERS) -> str:
    """The league table with its Score and Games columns swapped: every tag where it was."""
    head = "<th>Name</th><th>Team</th><th>Games</th><th>Score</th><th>Rank</th>"
    body = "".join(f"<tr><td>{n}</td><td>{t}</td><td>{g}</td><td>{s}</td><td>{r}</td></tr>" for n, t, s, g, r in rows)
    return _page(f'<table class="league"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')


GEAR = [("Trail Kettle", "Northpeak", "Cooking", "24.00"), ("Camp Mug", "Kestrel", "Cooking", "9.50"),
        ("Head Torch", "Bluefin", "Lighting", "31.00"), ("Day Pack", "Fjellvik", "Packs", "55.00"),
        ("Rain Shell", "Wildmoor", "Apparel", "120.00")]

PRICES_BP = {"every": "1h", "items": "table.prices tbody tr",
             "fields": {"name": {"css": "td:nth-child(1)"}, "brand": {"css": "td:nth-child(2)"},
                        "price": {"css": "td:nth-child(4)", "type": "float"}}}


def pricelist(drop: str | None = None, rows=GEAR) -> str:
    """A price list read by position (Name, Brand, Category, Price); `drop` removes one column."""
    cols = [c for c in ("Name", "Brand", "Category", "Price") if c != drop]
    at = {"Name": 0, "Brand": 1, "Category": 2, "Price": 3}
    head = "".join(f"<th>{c}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{'$' if c == 'Price' else ''}{r[at[c]]}</td>" for c in cols) + "</tr>"
                   for r in rows)
    return _page(f'<table class="prices"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>', head="Prices")
