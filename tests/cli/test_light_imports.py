"""The modules a command line needs load no HTML parser, HTTP client or SQLite binding.

`healerctl status` runs often, from scripts too: what it imports is time spent before its
request is even sent. The blueprint module checks selectors with selectolax only when a
selector is checked, and the control client speaks to the socket with the standard library.
The common queries (`status NAME`, `ping`, `records NAME`) do not even import click, and print
exactly what the click commands print.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

HEAVY = ("selectolax", "httpx", "apsw", "pykka")


def loaded_after(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return [m for m in json.loads(out.splitlines()[-1]) if m.split(".")[0] in HEAVY]


def test_reading_blueprints_and_calling_the_daemon_load_no_heavy_module():
    assert loaded_after("import healerd.core.blueprint, healerd.control.client, healerd.core.sanitize") == []


def test_a_selector_check_still_asks_selectolax():
    code = ("from healerd.core.blueprint import BlueprintError, check_selector\n"
            "check_selector('td.name', 'items')\n"
            "try:\n    check_selector('td[', 'items')\nexcept BlueprintError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.startswith("items: selectolax cannot parse the selector 'td['"), out
    assert "selectolax" in loaded_after(code)


# -- the common queries without click, through the real daemon ----------------------------------

LISTING = "<ul>" + "".join(f'<li class="r"><b>Item {k}</b><i>{k}.50 \x1b[2J</i></li>' for k in range(3)) + "</ul>"
BLUEPRINT = 'every = "1h"\nitems = "li.r"\n[fields.name]\ncss = "b"\n[fields.price]\ncss = "i"\ntype = "float"\n'
# The click group, whatever the entry point does first: what every command printed before.
CLICK = "import sys; sys.argv[0] = 'healerctl'; from healerd.cli.group import main; main()"
# The entry point, telling on stderr's last line whether click was imported.
ENTRY = ("import sys, atexit; sys.argv[0] = 'healerctl'\n"
         "atexit.register(lambda: print('click loaded:', 'click' in sys.modules, file=sys.stderr))\n"
         "from healerd.cli.healerctl import main; main()")


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    from tests.support.daemon import DaemonProc
    from tests.support.site import Site

    site = Site()
    site.page("/list", LISTING)
    tmp = tmp_path_factory.mktemp("light")
    d = DaemonProc(tmp).start()
    (tmp / "shop.toml").write_text(f'url = "{site.url("/list")}"\n' + BLUEPRINT)
    assert d.ctl("add", "shop", "--blueprint", str(tmp / "shop.toml")).returncode == 0
    yield d
    d.stop()
    site.stop()


# Relative times ("3s ago", "in 59m", "just now") move between the two runs, a moment apart.
RELATIVE = re.compile(r"\b(?:\d+[smhd] ago|in \d+[smhd]|just now|now)\b")


def both(d, *args: str, env: dict | None = None):
    """(the entry point's run, its stderr, the click group's run, whether the entry point imported
    click), relative times in their outputs put as one word."""
    run = {"capture_output": True, "text": True, "timeout": 120, "env": {**d.env, **(env or {})}}
    light = subprocess.run([sys.executable, "-c", ENTRY, *args], **run)
    full = subprocess.run([sys.executable, "-c", CLICK, *args], **run)
    for r in (light, full):
        r.stdout = RELATIVE.sub("<when>", r.stdout)
    err, _, told = light.stderr.rstrip("\n").rpartition("\n")
    return light, err + ("\n" if err else ""), full, told == "click loaded: True"


@pytest.mark.parametrize("args", [
    ["status", "shop"], ["status", "shop", "--json"], ["status", "--json", "shop"],
    ["records", "shop"], ["records", "shop", "--limit", "2"], ["records", "--limit=1", "shop", "--json"],
    ["status", "nope"], ["records", "nope"],
])
def test_the_common_queries_print_what_the_click_commands_print_without_click(shop, args):
    light, light_err, full, clicked = both(shop, "--socket", shop.socket, *args)
    assert (light.returncode, light.stdout, light_err) == (full.returncode, full.stdout, full.stderr)
    assert light.stdout or light_err
    assert not clicked


def test_the_socket_comes_from_the_command_the_group_or_the_environment(shop):
    for args, env in ((["ping", "--socket", shop.socket], None), (["--socket=" + shop.socket, "ping"], None),
                      (["ping"], {"HEALERD_SOCKET": shop.socket})):
        light, _, _, clicked = both(shop, *args, env=env)
        assert light.returncode == 0 and light.stdout.startswith("healerd "), light
        assert not clicked


def test_a_daemon_that_cannot_be_reached_is_exit_3_as_with_click(shop, tmp_path):
    light, light_err, full, clicked = both(shop, "--socket", str(tmp_path / "none.sock"), "status", "shop")
    assert (light.returncode, light_err) == (full.returncode, full.stderr) == (3, full.stderr)
    assert "none.sock" in light_err and not clicked


@pytest.mark.parametrize("args", [["status", "shop", "--limit", "2"], ["records", "shop", "--limit", "0"],
                                  ["records", "shop", "--csv"], ["--timeout", "5", "status", "shop"], ["status", "--help"]])
def test_every_other_form_goes_to_click_and_says_the_same(shop, args):
    light, light_err, full, clicked = both(shop, "--socket", shop.socket, *args)
    assert (light.returncode, light.stdout, light_err) == (full.returncode, full.stdout, full.stderr)
    assert clicked
