"""Record containers whose parents' classes became a utility-class soup (healerd.core.heal.records.containers)."""

from __future__ import annotations

from healerd.core.blueprint import Blueprint, FieldSpec
from healerd.core.extract import extract
from healerd.core.heal.page.fingerprint import Page
from healerd.core.heal.pipeline import heal
from healerd.core.heal.records.containers import _find_containers

GROUPS = [[("Anvil stand", "Holds a 50 kg anvil at working height"), ("Bench vice", "Cast iron, 125 mm jaws")],
          [("Chisel roll", "Waxed canvas, twelve pockets"), ("Dovetail saw", "Fine teeth for joinery")],
          [("Edge guide", "Clamps onto any router base")]]

BEFORE = ("<html><body><h1>Tools</h1><div class='catalogue'>" + "".join(
    "<ul class='shelf'>" + "".join(f"<li class='tool'><h3 class='name'>{n}</h3><p class='blurb'>{b}</p></li>"
                                   for n, b in g) + "</ul>" for g in GROUPS) + "</div></body></html>")

SOUPS = iter(["flex p-4", "grid gap-2 text-sm", "p-3 mt-2 rounded-lg", "shadow border", "px-4 py-2 bg-white",
              "text-lg font-bold", "mb-4 w-full", "items-center truncate", "leading-6 gap-4", "md:block hidden",
              "lg:flex text-gray-700", "font-medium p-2", "justify-between mt-4", "rounded shadow-lg", "gap-1 p-1",
              "text-xs px-2", "border-t py-4", "w-1/2 mx-auto", "grid-cols-2 gap-8", "text-center p-6"])


def soup() -> str:
    return next(SOUPS)


# every class of every element replaced by utility classes, different from one element to the next
AFTER = ("<html><body><h1>Tools</h1><div class='" + soup() + "'>" + "".join(
    f"<ul class='{soup()}'>" + "".join(f"<li class='{soup()}'><h3>{n}</h3><p>{b}</p></li>" for n, b in g) + "</ul>"
    for g in GROUPS) + "</div></body></html>")

BP = Blueprint(items="ul.shelf li.tool", fields={
    "name": FieldSpec("name", "h3.name", "str"),
    "blurb": FieldSpec("blurb", "p.blurb", "str"),
})


def test_records_under_parents_of_unlike_classes_are_found_and_healed():
    old = extract(BEFORE, BP).data
    res = heal(BP, BEFORE, old, AFTER)
    assert res.ok, res.reason
    got = extract(AFTER, res.blueprint).data
    assert [(r["name"], r["blurb"]) for r in got] == [t for g in GROUPS for t in g]


def test_the_containers_are_the_records_nodes():
    old = extract(BEFORE, BP).raw
    after = Page(AFTER)
    found = _find_containers(after, old, BP)
    assert isinstance(found, tuple)
    nodes, records = found
    assert records == [0, 1, 2, 3, 4]
    assert all(after.tags[n] == "li" for n in nodes)
