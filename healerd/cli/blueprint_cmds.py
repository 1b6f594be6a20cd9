"""healerctl's commands that write or try blueprints without registering anything: `export` (the
production blueprint as a file to keep), `try` (one fetch, the records and the verdict),
`suggest` (a blueprint from example values).
Registered on healerctl's group by `register(group)`."""

from __future__ import annotations

from typing import Any

import click

from healerd.cli.calls import RUN_TIMEOUT, _call, socket_option
from healerd.cli.output import CtlError, _print_json
from healerd.core.terminal import json_text, visible


@click.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the blueprint as JSON instead of TOML.")
@socket_option
@click.pass_context
def export(ctx, name, as_json, socket_path):
    """Print a source's production blueprint as a file `add` and a sources directory accept.

    The selectors are those in production now (healed ones included), so the file gives the
    same records. Secret values (secret headers, cookies, credentials in the URL) are left out,
    each named in a comment (with --json, on stderr): put yours back before using the file.
    """
    r = _call(ctx, socket_path, "export", {"name": name})
    left_out = list(r.get("left_out") or [])
    if as_json:
        for key in left_out:
            click.echo(f"healerctl: {visible(key)}: a secret value, left out; put yours back", err=True)
        _print_json(r["blueprint"])
        return
    from healerd.core.blueprint_export import to_toml

    header = f"{name}: production version {r.get('version')} (healerctl export)"
    click.echo(to_toml(r["blueprint"], left_out, header=visible(header)), nl=False)


def _load(blueprint_file: str, url: str | None) -> dict[str, Any]:
    from healerd.core.blueprint import BlueprintError, load_file  # lexbor: only the commands that read files

    try:
        return load_file(blueprint_file, url=url, require_url=True).to_dict()
    except BlueprintError as exc:
        raise CtlError(f"invalid blueprint {blueprint_file}: {exc}") from None


@click.command("try")
@click.option("--blueprint", "blueprint_file", required=True, metavar="FILE",
              type=click.Path(dir_okay=False), help="The blueprint: TOML, or the same structure in JSON.")
@click.option("--url", default=None, metavar="URL", help="The page to read (overrides the blueprint's url).")
@click.option("--json", "as_json", is_flag=True,
              help='Print {"ok": ..., "records": ..., "error": ...} as JSON.')
@socket_option
@click.pass_context
def try_(ctx, blueprint_file, url, as_json, socket_path):
    """Fetch (or render) a blueprint's page once and print its records and the verdict.

    Nothing is registered or stored: the daemon fetches the page as it would for a source
    (its fetch settings, a browser for fetch = "browser"), reads it and validates the records
    as the first scrape of a new source. Exits 1 when that scrape would fail, saying why.
    """
    args: dict[str, Any] = {"blueprint": _load(blueprint_file, url)}
    if url:
        args["url"] = url
    r = _call(ctx, socket_path, "try", args, timeout=RUN_TIMEOUT)
    ok = bool(r.get("ok"))
    if as_json:
        _print_json(r)
        ctx.exit(0 if ok else 1)
    data = r.get("records")
    items = data if isinstance(data, list) else ([] if data is None else [data])
    for item in items:
        click.echo(json_text(item, separators=(",", ":")))
    n = len(items)
    if ok:
        click.echo(f"ok: {n} record(s); it would pass as a first scrape", err=True)
        for w in r.get("warnings") or []:
            click.echo(f"  warning: {visible(str(w))}", err=True)
        return
    raise CtlError(f"it would fail: {visible(str(r.get('error') or 'unknown reason'))}")


def _example(value: str) -> tuple[str, str]:
    name, sep, text = value.partition("=")
    if not sep or not name.strip() or not text.strip():
        raise click.BadParameter(f"expected FIELD=VALUE, got {value!r}", param_hint="--example")
    return name.strip(), text


@click.command()
@click.argument("url")
@click.option("--example", "examples", multiple=True, required=True, metavar="FIELD=VALUE",
              help="A field of one record and its value as the page shows it (repeatable).")
@click.option("--browser", is_flag=True, help='Render the page in a browser (the blueprint gets fetch = "browser").')
@click.option("--json", "as_json", is_flag=True, help="Print the blueprint as JSON instead of TOML.")
@socket_option
@click.pass_context
def suggest(ctx, url, examples, browser, as_json, socket_path):
    """Write a blueprint from example values of one record on a page.

    The healer's value finding locates each example on the page; the examples' places closest
    together are the record; when it repeats (a listing) the blueprint reads every record, else
    the single record. Prints TOML ready for `healerctl add` (or JSON), with how many records it
    reads and the fields it could not place; exits 1, naming them, when the examples are
    ambiguous or not on the page. Nothing is registered.
    """
    pairs = [_example(e) for e in examples]
    names = [n for n, _ in pairs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise click.BadParameter(f"{twice[0]} is given twice", param_hint="--example")
    args = {"url": url, "examples": dict(pairs), **({"fetch": "browser"} if browser else {})}
    r = _call(ctx, socket_path, "suggest", args, timeout=RUN_TIMEOUT)
    unplaced = list(r.get("unplaced") or [])
    what = f"reads {r.get('records')} record(s)" + (" (a listing)" if r.get("listing") else " (a single record)")
    if as_json:
        click.echo(f"healerctl: {what}", err=True)
        for name in unplaced:
            click.echo(f"healerctl: {visible(name)}: could not be placed (not in the blueprint)", err=True)
        _print_json(r["blueprint"])
        return
    from healerd.core.blueprint_export import to_toml

    header = "\n".join([f"written by healerctl suggest: {what}",
                        *(f"{n}: could not be placed (not in the blueprint)" for n in unplaced)])
    click.echo(to_toml(r["blueprint"], header=visible(header, one_line=False)), nl=False)


def register(group: click.Group) -> None:
    group.add_command(export)
    group.add_command(try_)
    group.add_command(suggest)

