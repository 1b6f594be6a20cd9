"""The modules a command line needs load no HTML parser, HTTP client or SQLite binding.

`healerctl status` runs often, from scripts too: what it imports is time spent before its
request is even sent. The blueprint module checks selectors with selectolax only when a
selector is checked, and the control client speaks to the socket with the standard library.
"""

from __future__ import annotations

import json
import subprocess
import sys

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
