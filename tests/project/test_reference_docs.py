"""docs/REFERENCE.md stays true to the code.

The reference is what users and scripts rely on, so each promise it makes that the code can
answer for is checked against the code itself, not against a copy:

- every `healerctl` and `healerd` command, argument and option registered in the click apps
  has its section (`### healerctl NAME`) and is named there;
- the example configuration parses, every key the code knows is in it, and each value (and
  the default column of the key tables) equals the code's default, read through the real
  config loader; keys the code does not know yet are left out of the comparison;
- every alert event the code can emit is one of the Alerter's events, and the events table
  lists exactly those;
- the blueprint examples load with the real blueprint loader, every blueprint key the loader
  accepts is documented, and the number table is what extraction gives;
- the `status --json` example has exactly the status object's keys, the records, history and
  alert examples have the shapes the store answers on a real database, and the `ALERT` stderr
  line shown is the one the Alerter prints for the JSON example.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib

import click
import pytest

from healerd import __version__
from healerd import config as config_mod
from healerd.actors.alerter import EVENTS, format_line
from healerd.cli.healerctl import cli as healerctl_app
from healerd.cli.healerd_cmd import main as healerd_app
from healerd.core.blueprint import BlueprintError, parse_text
from healerd.core.blueprint import from_dict as blueprint_from_dict
from healerd.core.extract import coerce
from healerd.store.sources import STATUS_KEYS
from tests.support.paths import ROOT
from tests.support.reference_doc import cell_value, section, table_rows

REFERENCE = ROOT / "docs" / "REFERENCE.md"
PACKAGE = ROOT / "healerd"


# -- reading the reference ------------------------------------------------------------------


def reference() -> str:
    return REFERENCE.read_text(encoding="utf-8")


def fenced(body: str, lang: str) -> list[str]:
    return [m.group(1) for m in re.finditer(rf"^```{lang}[ \t]*\n(.*?)^```[ \t]*$", body, re.M | re.S)]


def mentions(body: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", body) is not None


# -- commands and options -------------------------------------------------------------------


def command_sections() -> list[tuple[str, click.Command]]:
    """(heading, command) for every command of both apps, subcommands of groups included."""
    out: list[tuple[str, click.Command]] = []

    def walk(prefix: str, group: click.Group) -> None:
        for name, cmd in sorted(group.commands.items()):
            path = f"{prefix} {name}"
            out.append((f"### {path}", cmd))
            if isinstance(cmd, click.Group):
                walk(path, cmd)

    walk("healerctl", healerctl_app)
    walk("healerd", healerd_app)
    return out


def undocumented_params(body: str, cmd: click.Command) -> list[str]:
    missing = []
    for p in cmd.params:
        if isinstance(p, click.Argument):
            names = [p.human_readable_name]
        else:
            names = [o for o in p.opts + p.secondary_opts if o.startswith("--")] or list(p.opts)
        missing += [n for n in names if not mentions(body, n)]
    return missing


def test_every_command_and_option_is_documented():
    text = reference()
    assert len(command_sections()) >= 20   # the walk found the apps' commands
    missing = []
    for heading, cmd in command_sections():
        if heading not in (line.rstrip() for line in text.splitlines()):
            missing.append(f"{heading}: no section")
            continue
        missing += [f"{heading}: {n}" for n in undocumented_params(section(text, heading), cmd)]
    assert not missing, "commands or options missing from docs/REFERENCE.md:\n" + "\n".join(missing)


def test_healerctl_global_options_are_documented():
    body = section(reference(), "### healerctl (global options)")
    missing = undocumented_params(body, healerctl_app)
    missing += [h for h in healerctl_app.context_settings.get("help_option_names", []) if not mentions(body, h)]
    assert not missing, f"global options missing from 'healerctl (global options)': {missing}"


# -- configuration --------------------------------------------------------------------------


def code_config() -> dict[str, dict[str, object]]:
    """{section: {key: default}} as the code defines them."""
    defaults = config_mod.Config()
    return {s.name: {f.name: getattr(getattr(defaults, s.name), f.name)
                     for f in dataclasses.fields(getattr(defaults, s.name))}
            for s in dataclasses.fields(defaults)
            if dataclasses.is_dataclass(getattr(defaults, s.name))}   # not [[feeds]]: see test_feeds_reference


def example_config() -> str:
    blocks = fenced(section(reference(), "## Configuration file"), "toml")
    assert blocks, "the Configuration file section has no toml example"
    return blocks[0].replace("<version>", __version__)


def named_keys(block: str) -> set[tuple[str, str]]:
    """(section, key) of every key line in a TOML block, commented-out ones included."""
    keys, current = set(), None
    for line in block.splitlines():
        m = re.match(r"^\s*\[(\w+)\]\s*$", line)
        if m:
            current = m.group(1)
            continue
        m = re.match(r"^\s*#?\s*(\w+)\s*=", line)
        if m and current:
            keys.add((current, m.group(1)))
    return keys


def loaded(values: dict[str, dict[str, object]]) -> config_mod.Config:
    """`values` through the real loader, keeping only the sections and keys the code knows."""
    known = code_config()
    kept = {s: {k: v for k, v in keys.items() if k in known[s]} for s, keys in values.items() if s in known}
    return config_mod.from_dict(kept)


def test_every_config_key_is_in_the_example_configuration():
    named = named_keys(example_config())
    missing = [f"[{s}] {k}" for s, keys in code_config().items() for k in keys if (s, k) not in named]
    assert not missing, f"config keys missing from the reference's example configuration: {missing}"


def test_example_configuration_values_are_the_defaults():
    doc = tomllib.loads(example_config())
    cfg, defaults = loaded(doc), config_mod.Config()
    wrong = []
    for s, keys in code_config().items():
        for k in keys:
            if k in doc.get(s, {}) or keys[k] is None:   # a key without default must stay commented out
                got, want = getattr(getattr(cfg, s), k), getattr(getattr(defaults, s), k)
                if got != want:
                    wrong.append(f"[{s}] {k}: the reference says {got!r}, the code's default is {want!r}")
    assert not wrong, "\n".join(wrong)


def test_config_key_tables_give_the_defaults():
    text = reference()
    wrong = []
    for s, keys in code_config().items():
        rows = {r[0].strip("`"): r for r in table_rows(section(text, f"### [{s}]")) if len(r) >= 3}
        doc_values = {}
        for k in keys:
            if k not in rows:
                wrong.append(f"[{s}] {k}: no row in the '[{s}]' table")
                continue
            value = cell_value(rows[k][1])
            if value is None:
                if keys[k] is not None:
                    wrong.append(f"[{s}] {k}: the table says none, the code's default is {keys[k]!r}")
            else:
                doc_values[k] = value
        cfg = loaded({s: doc_values})
        for k in doc_values:
            got, want = getattr(getattr(cfg, s), k), keys[k]
            if got != want:
                wrong.append(f"[{s}] {k}: the table says {got!r}, the code's default is {want!r}")
    assert not wrong, "\n".join(wrong)


# -- alerts ---------------------------------------------------------------------------------

EMIT = re.compile(r"""(?:\.alert|\bAlert)\(\s*["']([A-Z][A-Z_]+)["']""")


def emitted_events() -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        found |= set(EMIT.findall(path.read_text(encoding="utf-8")))
    return found


def test_every_emitted_alert_event_is_documented():
    emitted = emitted_events()
    assert len(emitted) >= 5, f"the scan for emitted alerts found too little: {emitted}"
    assert emitted <= set(EVENTS), f"alerts emitted but not in the Alerter's EVENTS: {emitted - set(EVENTS)}"
    rows = table_rows(section(reference(), "### Events"))
    documented = {m.group(1) for r in rows if (m := re.fullmatch(r"`([A-Z_]+)`", r[0]))}
    assert documented == set(EVENTS), (
        f"events table vs code: undocumented {sorted(set(EVENTS) - documented)}, "
        f"documented but unknown {sorted(documented - set(EVENTS))}")


def test_alert_examples_are_what_the_alerter_writes():
    body = section(reference(), "## Alerts")
    example = json.loads(fenced(body, "json")[0])
    assert set(example) == {"ts", "level", "source", "event", "message", "details"}
    assert example["event"] in EVENTS
    assert format_line(example) in body, f"the ALERT line for the JSON example is {format_line(example)!r}"


# -- blueprints -----------------------------------------------------------------------------


def test_blueprint_examples_load():
    blocks = fenced(section(reference(), "## Blueprints"), "toml")
    assert len(blocks) >= 2
    for block in blocks:
        bp = parse_text(block, "toml")
        assert bp.fields
    main = parse_text(blocks[0], "toml")
    assert main.items and main.fields["profile"].attr == "href" and main.fields["score"].required is False


def _known_keys(data: dict) -> set[str]:
    with pytest.raises(BlueprintError) as err:
        blueprint_from_dict(data)
    m = re.search(r"known: ([^)]*)\)", str(err.value))
    assert m, str(err.value)
    return {k.strip() for k in m.group(1).split(",")}


def test_every_blueprint_key_is_documented():
    rows = {r[0].strip("`") for r in table_rows(section(reference(), "### Keys"))}
    top = _known_keys({"no_such_key": 1, "fields": {"a": {"css": "p"}}})
    per_field = {f"fields.NAME.{k}" for k in _known_keys({"fields": {"a": {"css": "p", "no_such_key": 1}}})}
    missing = sorted((top | per_field) - rows)
    assert not missing, f"blueprint keys missing from the Keys table: {missing}"


def test_number_table_is_what_extraction_gives():
    rows = [r for r in table_rows(section(reference(), "#### Numbers")) if r[0].startswith("`")]
    assert len(rows) >= 5

    def doc(cell: str) -> object:
        return None if cell == "null" else json.loads(cell)

    wrong = []
    for text, as_int, as_float in (r[:3] for r in rows):
        raw = text.strip("`")
        for ftype, cell in (("int", as_int), ("float", as_float)):
            got = coerce(raw, ftype)
            if got != doc(cell) or type(got) is not type(doc(cell)):
                wrong.append(f"{raw!r} as {ftype}: the reference says {cell}, extraction gives {got!r}")
    assert not wrong, "\n".join(wrong)


# -- JSON shapes ----------------------------------------------------------------------------


def test_status_example_has_the_status_object_keys():
    body = section(reference(), "### healerctl status")
    example = json.loads(fenced(body, "json")[0])
    assert list(example) == list(STATUS_KEYS)
    rows = {r[0].strip("`") for r in table_rows(body)}
    described = {k for row in rows for k in re.split(r"`?,\s*`?", row)}
    assert set(STATUS_KEYS) <= described, f"status keys not described: {set(STATUS_KEYS) - described}"


def test_records_history_and_alert_examples_have_the_stored_shapes(tmp_path):
    """The --json examples of records, history and alerts against what the store answers, on a
    real database: records and alerts exactly (alerts with their `id`), history at least."""
    from healerd.store import alerts as alerts_store
    from healerd.store import fixes, records, sources, versions
    from healerd.store.db import open_db

    text = reference()
    conn = open_db(tmp_path / "healerd.db")
    try:
        bp = parse_text(fenced(section(text, "## Blueprints"), "toml")[0], "toml")
        sources.add(conn, "scores", bp, now=1000.0)
        records.insert(conn, "scores", [{"name": "Ada", "profile": "/p/ada", "score": 31}], 1, 500, now=1001.0)
        fixes.record(conn, source_name="scores", error_type="PARSE_ERROR", strategy="builtin", outcome="promoted",
                     reason="2 selectors re-found", version=1, duration_ms=850.0, now=1002.0)
        example_alert = json.loads(fenced(section(text, "## Alerts"), "json")[0])
        alerts_store.insert(conn, example_alert, 1003.0)

        doc_record = json.loads(fenced(section(text, "### healerctl records"), "json")[0])[0]
        assert set(doc_record) == set(records.latest(conn, "scores")[0])

        doc_history = {e["kind"]: e for e in json.loads(fenced(section(text, "### healerctl history"), "json")[0])}
        stored = {e["kind"]: e for e in versions.history_entries(conn, "scores") + fixes.history_entries(conn, "scores")}
        assert set(doc_history) == set(stored) == {"version", "fix"}
        for kind, example in doc_history.items():
            missing = set(example) - set(stored[kind]) - {"_t"}
            assert not missing, f"history {kind} entries have no {sorted(missing)}"

        assert set(alerts_store.since(conn)[0]) == set(example_alert) | {"id"}
    finally:
        conn.close()
