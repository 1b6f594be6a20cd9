"""The fix memory's bundles: what a promotion changed, made into a bundle (`make_selector_bundle`,
`make_parser_bundle`), and a bundle applied to another source's blueprint (`apply_bundle`), or
None when it does not fit there. Plain functions over blueprints: no SQL; the memory stores and
finds the bundles (healerd/store/memory.py).
"""

from __future__ import annotations

import dataclasses

from healerd.core.blueprint import Blueprint, BlueprintError, check_selector


def make_selector_bundle(old: Blueprint, new: Blueprint) -> dict:
    """What changed from `old` to `new`: the fields (css/attr) and the items selector.

    {"kind": "selectors", "items": {"from", "to"} | None,
     "fields": {name: {"from", "to", "attr_from", "attr_to"}}, "verification": [...]}.
    Fields only one side has are left out (there is nothing to map).
    """
    fields: dict[str, dict] = {}
    for name, f in old.fields.items():
        g = new.fields.get(name)
        if g is None or not f.css or not g.css:
            continue
        if f.css != g.css or f.attr != g.attr:
            fields[name] = {"from": f.css, "to": g.css, "attr_from": f.attr, "attr_to": g.attr}
    items = {"from": old.items, "to": new.items} if old.items != new.items and old.items and new.items else None
    changed = sorted(fields) + (["items"] if items else [])
    return {
        "kind": "selectors",
        "items": items,
        "fields": fields,
        "verification": [{"order": 1, "check": "validated on live page",
                          "expected": "the staged blueprint passed validation on the live page and was promoted",
                          "changed": changed}],
    }


def make_parser_bundle(old: Blueprint, new: Blueprint) -> dict | None:
    """The promoted code parser of `new`, or None when `new` brings no new parser.

    {"kind": "parser", "parser": source, "fields": [names it fills], "items": selector | None,
     "verification": [...]}. The source is stored as promoted: the memory's sanitization
    refuses it whole when it looks like it carries a secret.
    """
    if not new.parser or new.parser == old.parser:
        return None
    return {
        "kind": "parser",
        "parser": new.parser,
        "fields": sorted(new.fields),
        "items": new.items,
        "verification": [{"order": 1, "check": "validated on live page",
                          "expected": "the staged parser passed validation on the live page and was promoted",
                          "changed": ["parser"]}],
    }


def apply_parser_bundle(blueprint: Blueprint, bundle: dict) -> Blueprint | None:
    """Another source's blueprint running the bundle's parser, or None when it does not fit.

    It fits a source whose fields have the same names as the ones the parser fills
    (a parser that fills other fields would only fail there). Everything else of the source (url,
    headers, cookies, schedule, fields) stays. A parser the sandbox's static check
    refuses, or the source's own parser unchanged, gives None.
    """
    from healerd.adapters.sandbox import ParserRejected, check_parser_source

    code = bundle.get("parser")
    names = bundle.get("fields")
    if not isinstance(code, str) or not code.strip() or code == blueprint.parser:
        return None
    if not (isinstance(names, list) and set(map(str, names)) == set(blueprint.fields)):
        return None
    try:
        check_parser_source(code)
    except ParserRejected:
        return None
    return blueprint.with_parser(code)


def apply_bundle(blueprint: Blueprint, bundle: dict) -> Blueprint | None:
    """`bundle` applied to another source's blueprint, or None when it changes nothing there.

    A field's css (and attr, when it had the bundle's old attr) is replaced when its
    css equals the bundle's "from" for the same field name, or — when the names
    differ — equals the "from" of one bundle field (of several, the one whose old
    attr matches; ambiguous mappings are skipped). `items` likewise. Code parsers
    and malformed bundles are not touched. A parser bundle goes to `apply_parser_bundle`.
    """
    if isinstance(bundle, dict) and bundle.get("kind") == "parser":
        return apply_parser_bundle(blueprint, bundle)
    if not isinstance(bundle, dict) or bundle.get("kind", "selectors") != "selectors" or blueprint.parser:
        return None
    raw_fields = bundle.get("fields")
    if not isinstance(raw_fields, dict):
        raw_fields = {}
    entries: dict[str, dict] = {}
    for name, spec in raw_fields.items():
        if (isinstance(spec, dict) and isinstance(spec.get("from"), str) and isinstance(spec.get("to"), str)
                and spec["to"].strip()):
            entries[str(name)] = spec
    by_from: dict[str, list[dict]] = {}
    for spec in entries.values():
        by_from.setdefault(spec["from"], []).append(spec)

    new_fields = {}
    changed = False
    for name, f in blueprint.fields.items():
        spec = entries.get(name)
        if spec is None or spec["from"] != f.css:
            spec = _pick(by_from.get(f.css or "", []), f.attr)
        if spec is None:
            new_fields[name] = f
            continue
        attr = f.attr
        attr_to = spec.get("attr_to")
        if spec.get("attr_from") == f.attr and (attr_to is None or (isinstance(attr_to, str) and attr_to.strip())):
            attr = attr_to
        g = dataclasses.replace(f, css=spec["to"], attr=attr)
        new_fields[name] = g
        changed = changed or g != f

    items = blueprint.items
    raw_items = bundle.get("items")
    if (isinstance(raw_items, dict) and isinstance(raw_items.get("from"), str) and isinstance(raw_items.get("to"), str)
            and raw_items["to"].strip() and blueprint.items == raw_items["from"] and raw_items["to"] != items):
        items = raw_items["to"]
        changed = True
    if not changed:
        return None
    try:
        for name, f in new_fields.items():
            if f.css is not None:
                check_selector(f.css, f"fields.{name}.css")
        if items is not None:
            check_selector(items, "items")
    except BlueprintError:
        return None
    return blueprint.with_fields(new_fields, items=items)


def _pick(specs: list[dict], attr: str | None) -> dict | None:
    """The one mapping for a selector: unique target, or the one whose old attr matches."""
    if not specs:
        return None
    targets = {(s["to"], s.get("attr_to")) for s in specs}
    if len(targets) == 1:
        return specs[0]
    matching = [s for s in specs if s.get("attr_from") == attr]
    if len({(s["to"], s.get("attr_to")) for s in matching}) == 1:
        return matching[0]
    return None
