"""healerctl starts fast: importing its command line (the click group) loads click, the control
client and the printing helpers, and none of the daemon's heavy modules (lexbor for blueprints, httpx, SQLite,
the actors), which the commands that need them import when they run. And the command line
stays in rooms that say what they hold, none over 600 lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import healerd.cli

HEAVY = ("selectolax", "httpx", "httpcore", "apsw", "pykka", "transitions", "protego",
         "healerd.store", "healerd.actors", "healerd.adapters", "healerd.daemon", "healerd.core.blueprint")


def _loaded_by(code: str) -> list[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


def test_healerctl_imports_nothing_heavy_at_start():
    loaded = _loaded_by("import healerd.cli.group")
    assert "click" in loaded and "healerd.control.client" in loaded   # the probe saw the import
    assert [m for m in loaded if m.startswith(HEAVY)] == []


def test_the_entry_point_and_the_common_queries_import_no_click():
    loaded = _loaded_by("import healerd.cli.healerctl, healerd.cli.light, healerd.cli.views")
    assert "healerd.control.client" in loaded and "healerd.cli.views" in loaded
    assert [m for m in loaded if m.startswith(HEAVY + ("click",))] == []


def test_the_commands_that_need_a_blueprint_load_it_when_they_run(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('url = "http://127.0.0.1:9/"\n[fields.title]\ncss = "td..x"\n')
    code = ("from click.testing import CliRunner\nfrom healerd.cli.healerctl import cli\n"
            f"r = CliRunner().invoke(cli, ['add', 'x', '--blueprint', {str(bad)!r}])\n"
            "assert r.exit_code == 1 and 'invalid blueprint' in r.output, r.output")
    loaded = _loaded_by(code)
    assert "healerd.core.blueprint" in loaded and "selectolax.lexbor" in loaded


def test_no_cli_module_is_over_600_lines():
    sizes = {p.name: len(p.read_text().splitlines()) for p in Path(healerd.cli.__file__).parent.glob("*.py")}
    assert "healerctl.py" in sizes and "sources_cmds.py" in sizes
    assert {name: n for name, n in sizes.items() if n > 600} == {}
