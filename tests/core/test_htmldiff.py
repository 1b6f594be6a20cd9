"""The structural HTML diff: paths of elements, their own text, noise dropped, signatures."""

from __future__ import annotations

import difflib
import random

from healerd.core.htmldiff import NO_ORIGINAL, diff_signature, structural_diff, structure_lines, template_signature


def shop(products, item_class="product", price_class="price", wrap=False, extra=""):
    cards = "".join(f'<div class="{item_class} card"><h3 class="title">{name}</h3>'
                    f'<span class="{price_class}">${price:.2f}</span></div>' for name, price in products)
    grid = f'<section class="grid">{cards}</section>'
    if wrap:
        grid = f'<div class="container">{grid}</div>'
    return (f'<html><head><title>Shop</title><style>.x{{}}</style></head><body><header id="top">'
            f'<a href="/">Home</a></header>{extra}{grid}<footer>© shop</footer></body></html>')


PRODUCTS_A = [("Kettle", 19.99), ("Teapot", 24.5), ("Mug", 4.0)]
PRODUCTS_B = [("Lamp", 49.0), ("Desk", 199.0), ("Chair", 89.9), ("Shelf", 59.0), ("Rug", 120.0)]


def test_structure_lines_paths_own_text_and_ids():
    html = ('<html><body><div id="main" class="a  b"><p class="intro">Hello <b>big</b>   world</p>'
            '<span></span></div></body></html>')
    assert structure_lines(html) == [
        "div#main.a.b",
        "div#main.a.b > p.intro: Hello world",
        "div#main.a.b > p.intro > b: big",
        "div#main.a.b > span",
    ]


def test_structure_lines_cuts_text_and_caps_depth():
    deep = "<div>" * 12 + "x" * 80 + "</div>" * 12
    lines = structure_lines(f"<html><body>{deep}</body></html>", max_text=10)
    assert len(lines) == 12
    last = lines[-1]
    path, text = last.split(": ")
    assert text == "x" * 10
    assert path.count(">") == 7  # the last 8 levels


def test_class_rename_shows_removed_and_added_paths():
    before = shop(PRODUCTS_A)
    after = shop(PRODUCTS_A, price_class="cost")
    diff = structural_diff(before, after)
    lines = diff.splitlines()
    assert lines[0] == "--- last-good" and lines[1] == "+++ current"
    assert "-section.grid > div.product.card > span.price: $19.99" in lines
    assert "+section.grid > div.product.card > span.cost: $19.99" in lines
    # unchanged titles are context, never -/+
    assert not any(line[0] in "+-" and "h3.title" in line for line in lines[2:])


def test_scripts_styles_svg_noscript_template_and_comments_are_ignored():
    before = shop(PRODUCTS_A)
    noise = ('<script>var tracking = "a";</script><style>.y{color:red}</style><svg><path d="M0"/></svg>'
             '<noscript><img src="/pixel"></noscript><template><p>later</p></template><!-- build 1234 -->')
    after = shop(PRODUCTS_A, extra=noise)
    assert structural_diff(before, after) == ""


def test_identical_pages_give_empty_diff_and_missing_original_one_line():
    page = shop(PRODUCTS_A)
    assert structural_diff(page, page) == ""
    out = structural_diff(None, page)
    assert out == NO_ORIGINAL and "\n" not in out


def test_diff_matches_difflib_on_whole_listing_line_numbers_included():
    before = shop(PRODUCTS_B * 20)
    rows = list(PRODUCTS_B * 20)
    rows[57] = ("Changed", 1.0)
    after = shop(rows)
    expected = "\n".join(difflib.unified_diff(structure_lines(before), structure_lines(after),
                                              fromfile="last-good", tofile="current", n=2, lineterm=""))
    assert structural_diff(before, after, max_lines=10_000, max_chars=10**7) == expected


def test_truncation_by_lines_and_chars_counts_what_was_left_out():
    rows = [(f"{name} {i}", price) for i, (name, price) in enumerate(PRODUCTS_B * 40)]
    before = shop(rows)
    after = shop([(name + " new" if i % 3 == 0 else name, price) for i, (name, price) in enumerate(rows)])
    full = structural_diff(before, after, max_lines=100_000, max_chars=10**8).splitlines()
    assert len(full) > 300 and not full[-1].startswith("... diff truncated")
    cut = structural_diff(before, after, max_lines=50).splitlines()
    assert cut[:50] == full[:50]
    assert cut[50] == f"... diff truncated: {len(full) - 50} more lines"
    assert len(cut) == 51
    by_chars = structural_diff(before, after, max_chars=2000)
    body, last = by_chars.rsplit("\n", 1)
    assert len(body) <= 2000
    kept = len(body.splitlines())
    assert last == f"... diff truncated: {len(full) - kept} more lines"


def test_a_long_run_of_changes_shows_both_sides():
    before = shop(PRODUCTS_B * 100)
    after = shop(PRODUCTS_B * 100, item_class="item")
    lines = structural_diff(before, after, max_lines=10_000, max_chars=10**7).splitlines()
    removed = [line for line in lines if line.startswith("-section")]
    added = [line for line in lines if line.startswith("+section")]
    assert len(removed) == len(added) == 100
    assert "... 1400 more removed lines" in lines and "... 1400 more added lines" in lines


def test_same_template_change_on_two_pages_same_signature():
    d1 = structural_diff(shop(PRODUCTS_A), shop(PRODUCTS_A, item_class="tile", wrap=True))
    d2 = structural_diff(shop(PRODUCTS_B), shop(PRODUCTS_B, item_class="tile", wrap=True))
    assert d1 != d2  # different texts and row counts
    s1, s2 = diff_signature(d1), diff_signature(d2)
    assert s1 and s1 == s2 and len(s1) == 16
    other = diff_signature(structural_diff(shop(PRODUCTS_A), shop(PRODUCTS_A, price_class="cost")))
    assert other and other != s1


def test_text_only_change_has_no_structural_signature():
    d = structural_diff(shop(PRODUCTS_A), shop([("Kettle", 21.99), ("Teapot", 24.5), ("Mug", 4.0)]))
    assert "-section.grid > div.product.card > span.price: $19.99" in d.splitlines()
    assert diff_signature(d) == ""
    assert diff_signature("") == ""


def test_digits_in_paths_are_normalised_in_the_signature():
    def page(n):
        return f'<html><body><div class="col-{n}"><p class="x">t</p></div></body></html>'

    def moved(n):
        return f'<html><body><div class="col-{n}"><p class="y">t</p></div></body></html>'

    assert diff_signature(structural_diff(page(3), moved(3))) == diff_signature(structural_diff(page(7), moved(7)))


def test_template_signature_same_template_different_content():
    assert template_signature(shop(PRODUCTS_A)) == template_signature(shop(PRODUCTS_B))
    assert template_signature(shop(PRODUCTS_A)) != template_signature(shop(PRODUCTS_A, wrap=True))
    assert template_signature("") == ""
    assert len(template_signature(shop(PRODUCTS_A))) == 16


def test_megabyte_page_completes_with_a_useful_diff():
    rnd = random.Random(7)
    products = [(f"Product {i}", rnd.randint(100, 99_999) / 100) for i in range(10_000)]
    before = shop(products)
    after = shop(products, item_class="tile")
    assert len(before) > 900_000
    diff = structural_diff(before, after)
    lines = diff.splitlines()
    assert any(line.startswith("-section.grid > div.product.card") for line in lines)
    assert any(line.startswith("+section.grid > div.tile.card") for line in lines)
    assert len(diff) <= 20_000 + 100


def test_big_scrambled_pages_fall_back_to_a_reduced_form():
    rnd = random.Random(3)

    def page():
        rows = "".join(f'<div class="c{rnd.randint(0, 60)}"><span class="s{rnd.randint(0, 30)}">'
                       f't{rnd.randint(0, 9)}</span></div>' for _ in range(20_000))
        return f"<html><body>{rows}</body></html>"

    diff = structural_diff(page(), page())
    assert diff.splitlines()[0].startswith("# reduced diff: ")
    assert "--- last-good" in diff


def test_garbage_input_does_not_crash():
    assert structure_lines("") == []
    assert structure_lines("not html at all <<<>>>") == []
    assert structural_diff("", "<p>x</p>").splitlines()[-1] == "+p: x"
    assert template_signature("\x00\x01") in ("", template_signature("\x00\x01"))
