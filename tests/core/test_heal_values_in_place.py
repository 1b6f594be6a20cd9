"""Values changed in place while a copy of the old ones stays elsewhere (healerd.core.heal.checks.stale_values)."""

from __future__ import annotations

import re

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.checks.stale_values import kept_in_place
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.pipeline import heal

# An admin index: each row's model link, and a "Change" link that always carried the same URL.
BP = Blueprint(items="div.app-shop table tr", fields={
    "model": FieldSpec("model", "th a"),
    "list_url": FieldSpec("list_url", "th a", attr="href"),
    "add_url": FieldSpec("add_url", "a.addlink", attr="href"),
})
SLUGS = ("category", "product", "order")


def row(slug: str, name: str, href: str) -> str:
    return (f"<tr class='model-{slug}'><th scope='row'><a href='{href}'>{name}</a></th>"
            f"<td><a href='/admin/shop/{slug}/add/' class='addlink'>Add</a></td>"
            f"<td><a href='/admin/shop/{slug}/' class='changelink'>Change</a></td></tr>")


def page(rows: str, box: str = "app-shop") -> str:
    return (f"<html><body><h1>Site administration</h1><div class='{box} module'><table><caption>Shop</caption>"
            f"{rows}</table></div></body></html>")


BEFORE = page("".join(row(s, s.title() + "s", f"/admin/shop/{s}/") for s in SLUGS))
# the redesign changed the model links' text and URLs; the "Change" links kept the old URLs
AFTER = page("".join(row(s, s.title() + "s (new)", f"/admin/shop/{s}/?v=2") for s in SLUGS))


def test_a_field_whose_values_changed_in_place_keeps_its_selector():
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, AFTER)
    assert res.ok and res.unchanged, res.reason
    assert res.blueprint is BP
    assert "values changed in place: list_url" in res.reason
    assert [r["list_url"] for r in extract(AFTER, res.blueprint).data] == [f"/admin/shop/{s}/?v=2" for s in SLUGS]


def test_the_other_repairs_stay_and_the_stale_copy_is_not_taken():
    """The list's classes renamed too: the items selector is repaired, list_url stays where it was."""
    after = AFTER.replace("app-shop", "AppShop_box__e1a0c")
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, after)
    assert res.ok and res.blueprint is not None, res.reason
    assert res.blueprint.items != BP.items
    assert res.blueprint.fields["list_url"] == BP.fields["list_url"]
    assert "list_url" not in res.changed and "changelink" not in res.reason
    got = extract(after, res.blueprint).data
    assert [r["list_url"] for r in got] == [f"/admin/shop/{s}/?v=2" for s in SLUGS]


# API docs: the old selector told the parameter from the "class" keyword by a class that was renamed
DOC_BP = Blueprint(items="dl.class", fields={
    "name": FieldSpec("name", "dt > code.descname"),
    "first_param": FieldSpec("first_param", "dt > em:not(.property)"),
})


def doc(prop_class: str, names: tuple[str, str], params: tuple[str, str]) -> str:
    return "<html><body>" + "".join(
        f"<dl class='class'><dt><em class='{prop_class}'>class</em> <code class='descname'>{n}</code>"
        f"(<em>{p}</em>)</dt><dd><p>About {n}.</p></dd></dl>" for n, p in zip(names, params)) + "</body></html>"


def test_a_selector_slid_onto_another_node_of_the_record_is_no_change_in_place():
    before, after = Page(doc("property", ("Product", "Warehouse"), ("name", "code"))), \
        Page(doc("prop-x1", ("Product", "Warehouse"), ("name", "code")))
    old = extract(before.tree, DOC_BP).raw
    moved = Blueprint(items=DOC_BP.items, fields={**DOC_BP.fields,
                                                  "first_param": FieldSpec("first_param", "em:nth-of-type(2)")})
    new = extract(after.tree, moved).raw
    # the old selector now reads the "class" keyword: a node of the old record, not the parameter changed
    assert [r["first_param"] for r in extract(after.tree, DOC_BP).raw] == ["class", "class"]
    assert kept_in_place(DOC_BP, moved, before, after, old, new) == []


# A blog index: each post's title link, and the dateline's permalink that repeated its URL.
BLOG_BP = Blueprint(items="div.postindex > article", fields={
    "title": FieldSpec("title", "h1 a"),
    "url": FieldSpec("url", "h1 a", attr="href"),
    "date": FieldSpec("date", "p.dateline time"),
})
POSTS = (("open-data", "Open data published", "2023-06-09"), ("low-flows", "Low-flow watch begins", "2023-06-02"),
         ("outage", "Telemetry outage", "2023-05-19"))


def blog(suffix: str, wrap: bool) -> str:
    posts = []
    for slug, title, day in POSTS:
        link = f"<a href='posts/{slug}.html{suffix}' class='u-url'>{title}{' (new)' if suffix else ''}</a>"
        posts.append(f"<article class='h-entry'><header><h1 class='p-name'>{f'<div class=inner>{link}</div>' if wrap else link}"
                     f"</h1><p class='dateline'><a href='posts/{slug}.html' rel='bookmark'><time>{day}</time></a></p>"
                     "</header><div class='e-content'><p>Body text of the post.</p></div></article>")
    return "<html><body><header><a href='/'>Blog</a></header><div class='postindex'>" + "".join(posts) + "</div></body></html>"


def test_a_wrapper_added_above_the_field_is_still_its_place():
    """The title links wrapped in a div and their URLs changed: the permalinks' old URLs are a stale copy."""
    before, after = blog("", wrap=False), blog("?v=2", wrap=True)
    old = extract(before, BLOG_BP).data
    res = heal(BLOG_BP, before, old, after)
    assert res.ok and res.blueprint is not None, res.reason
    assert res.blueprint.fields["url"] == BLOG_BP.fields["url"], res.reason
    assert [r["url"] for r in extract(after, res.blueprint).data] == [f"posts/{s}.html?v=2" for s, _, _ in POSTS]


# A documentation page: the active navigation link's text and href, and a sidebar link repeating the old title.
NAV_BP = Blueprint(fields={
    "current": FieldSpec("current", "ul.navbar-nav li.active a"),
    "current_href": FieldSpec("current_href", "ul.navbar-nav li.active a", attr="href"),
    "edit_url": FieldSpec("edit_url", "ul.navbar-right a[href*='/edit/']", attr="href"),
})


def nav(title: str, href: str, reordered: bool = False) -> str:
    items = ["<li><a href='../'>Home</a></li>", f"<li class='active'><a href='{href}'>{title}</a></li>",
             "<li><a href='../faq/'>FAQ</a></li>"]
    return ("<html><body><div class='navbar'><ul class='nav navbar-nav'>" + "".join(items[::-1] if reordered else items) +
            "</ul>"
            "<ul class='nav navbar-right'><li><a href='https://example.org/edit/main/docs/pricing.md'>Edit</a></li></ul></div>"
            "<div class='row'><div class='col-md-3'><ul class='bs-sidenav'><li class='main active'>"
            "<a href='#pricing'>Pricing</a></li><li><a href='#plans'>Plans</a></li></ul></div>"
            "<div class='col-md-9'><h1 id='pricing'>Pricing</h1><p>What each plan costs.</p></div></div></body></html>")


def test_a_field_read_from_the_same_node_goes_back_with_the_field_kept():
    """The navigation reordered too: the healer looked for the old title and found the sidebar's."""
    before, after = nav("Pricing", "./"), nav("Pricing 2nd ed.", "./?v=2", reordered=True)
    old = extract(before, NAV_BP).data
    res = heal(NAV_BP, before, old, after)
    assert res.ok and res.blueprint is not None, res.reason
    assert res.blueprint.fields == NAV_BP.fields, res.reason
    got = extract(after, res.blueprint).data
    assert (got["current"], got["current_href"]) == ("Pricing 2nd ed.", "./?v=2")


# The admin index again, the model link read by its class, which the redesign renamed.
LINK_BP = Blueprint(items="div.app-shop table tr", fields={
    "model": FieldSpec("model", "th a.model-link"),
    "list_url": FieldSpec("list_url", "th a.model-link", attr="href"),
})


def test_copies_the_last_good_page_already_had_are_not_the_new_home():
    """The model links' class renamed and their values changed: only the Change links still say the old URLs."""
    before = BEFORE.replace("<th scope='row'><a ", "<th scope='row'><a class='model-link' ")
    after = AFTER.replace("<th scope='row'><a ", "<th scope='row'><a class='ModelLink_x3' ")
    old = extract(before, LINK_BP).data
    res = heal(LINK_BP, before, old, after)
    assert not res.ok, res.reason
    assert "copies the last good page had" in res.reason


def test_a_copy_the_redesign_dropped_does_not_stop_a_heal():
    """The model links' class renamed, values kept, and the Change links gone: one carrier fewer, a true move."""
    before = BEFORE.replace("<th scope='row'><a ", "<th scope='row'><a class='model-link' ")
    after = BEFORE.replace("<th scope='row'><a ", "<th scope='row'><a class='ModelLink_x3' ").replace("class='changelink'", "hidden")
    after = re.sub(r"<td><a href='[^']*' hidden>Change</a></td>", "", after)
    old = extract(before, LINK_BP).data
    res = heal(LINK_BP, before, old, after)
    assert res.ok, res.reason
    assert extract(after, res.blueprint).data == old


# An admin list page: the active menu entry (the view) and the active tab (the count), both `li.active a`.
MENU_BP = Blueprint(fields={
    "count": FieldSpec("count", "ul.actions-nav li.active a"),
    "view": FieldSpec("view", "ul.nav li.active a"),
})


def menu(count: str, view_in_menu: bool) -> str:
    view = "<a href='/admin/product/'>Products</a>" if view_in_menu else ""
    footer = "" if view_in_menu else "<footer><p>Posted by <a href='/admin/product/'>Products</a></p></footer>"
    return ("<html><body><div class='navbar'><ul class='nav'><li><a href='/admin/'>Home</a></li>"
            f"<li class='active'>{view}</li></ul></div><div class='container'><ul class='nav nav-tabs actions-nav'>"
            f"<li class='active'><a href='#'>{count}</a></li><li><a href='/admin/product/new/'>Create</a></li></ul>"
            f"<table><tr><td>Claw hammer</td></tr></table></div>{footer}</body></html>")


def test_a_selector_slid_onto_another_fields_node_is_no_change_in_place():
    """The view's menu entry emptied (moved into the footer): `ul.nav li.active a` now reads the count's tab."""
    before, after = Page(menu("List (7)", True)), Page(menu("List (8)", False))
    old = extract(before.tree, MENU_BP).raw
    moved = Blueprint(fields={**MENU_BP.fields, "view": FieldSpec("view", "footer a")})
    assert extract(after.tree, MENU_BP).raw["view"] == "List (8)"
    assert kept_in_place(MENU_BP, moved, before, after, old, extract(after.tree, moved).raw) == []


# A findings report: each finding's test name in the second <b>, after its label; the labels reworded and
# the children reordered, the old selector's <b> now says a label
FINDINGS = Blueprint(items="div.finding", fields={"test": FieldSpec("test", "b:nth-of-type(2)"),
                                                  "file": FieldSpec("file", "a")})


def finding(label: str, test: str, file: str, swap: bool = False) -> str:
    bs = [f"<b>{label}</b>", f"<b>{test}</b>"]
    return f"<div class='finding'>{''.join(reversed(bs) if swap else bs)}<a href='#'>{file}</a></div>"


def test_a_label_reworded_under_the_old_selector_is_no_value_changed_in_place():
    before = page("") .replace("<table>", "<table></table>" + finding("Test ID:", "blacklist", "db.py")
                               + finding("Test ID:", "shell_true", "run.py") + "<table>")
    for label in ("TEST ID:", "Your test id:", "Test ID (current)"):
        after = page("").replace("<table>", "<table></table>" + finding(label, "blacklist", "db.py", swap=True)
                                 + finding(label, "shell_true", "run.py", swap=True) + "<table>")
        healed = Blueprint(items=FINDINGS.items, fields={**FINDINGS.fields, "test": FieldSpec("test", "b:nth-of-type(1)")})
        old = extract(before, FINDINGS).raw
        new = extract(after, healed).raw
        assert [r["test"] for r in new] == ["blacklist", "shell_true"]
        assert kept_in_place(FINDINGS, healed, Page(before), Page(after), old, new) == [], label
