"""Every argument of every control op, out of range or of the wrong type, on the real daemon's
socket: one `bad_request` (never an `internal_error`), and the daemon keeps answering."""

from __future__ import annotations

import inspect

import pytest

from healerd.control.client import call
from healerd.control.ops import ControlOps
from healerd.control.protocol import ControlError
from tests.support.sitepages import LISTING_BP, listing_v1, write_blueprint

HUGE = 10**30   # more than SQLite's 64-bit integers

# The whole-number arguments of the ops, with the smallest value each takes.
WHOLE = {("status", "limit"): 1, ("status", "offset"): 0, ("records", "limit"): 1, ("alerts", "after_id"): 0,
         ("alerts", "limit"): 1, ("records_since", "after_id"): 0, ("records_since", "limit"): 1,
         ("changes", "limit"): 1, ("rollback", "to"): 1, ("approve", "version"): 1}
# Ops a test does not start for their effect on the daemon (no argument of theirs reaches SQL).
LEFT_OUT = {"reload", "heal", "resume_healing", "ping", "memory_list", "memory_stats", "feeds"}


def _ops() -> dict[str, list[str]]:
    return {name[3:]: [p for p in inspect.signature(fn).parameters if p != "self"]
            for name, fn in inspect.getmembers(ControlOps, inspect.isfunction) if name.startswith("op_")}


def _valid(op: str, tmp_path) -> dict:
    """Arguments with which `op` gets as far as its other arguments."""
    args: dict = {}
    params = _ops()[op]
    if "name" in params and op != "status":   # status NAME takes no paging arguments
        args["name"] = "s"
    if op in ("add", "update"):
        args["blueprint"] = {**LISTING_BP, "every": "1h"}
    if op == "approve":
        args["version"] = 1
    if op.startswith("memory_"):
        args["id"] = "abcdef"
    return args


def _answer(d, op: str, args: dict) -> str:
    try:
        call(d.socket, op, args, timeout=60)
    except ControlError as exc:
        return exc.code
    return "ok"


def test_every_whole_number_argument_is_bounded(site, daemon_factory, tmp_path):
    site.page("/s", listing_v1())
    d = daemon_factory().start()
    assert d.ctl("add", "s", "--blueprint", write_blueprint(tmp_path / "s.json", site.url("/s"),
                                                          {**LISTING_BP, "every": "1h"})).returncode == 0
    ops = _ops()
    assert {(op, p) for op, params in ops.items() for p in params
            if p in ("limit", "offset", "after_id", "to", "version")} == set(WHOLE), "a new integer argument"
    for (op, param), least in WHOLE.items():
        for bad in (HUGE, -HUGE, least - 1, 2**63, 1.5, float(least), "3", True, None if op == "approve" else [1]):
            args = {**_valid(op, tmp_path), param: bad}
            assert _answer(d, op, args) == "bad_request", (op, param, bad)
    # The status the issue was filed for, through the real healerctl too.
    r = d.ctl("status", "--offset", str(HUGE), "--json")
    assert r.returncode != 0 and "internal" not in r.stderr and "offset" in r.stderr, r.stderr
    assert call(d.socket, "status", {"offset": 2**53 - 1, "limit": 5})["rows"] == []
    assert d.ctl("ping").returncode == 0


@pytest.mark.parametrize("value", [HUGE, -HUGE, 2**63, 1e308, "x" * 300, [HUGE], {"k": HUGE}])
def test_no_argument_of_any_op_is_an_internal_error(value, site, daemon_factory, tmp_path):
    site.page("/s", listing_v1())
    d = daemon_factory().start()
    assert d.ctl("add", "s", "--blueprint", write_blueprint(tmp_path / "s.json", site.url("/s"),
                                                          {**LISTING_BP, "every": "1h"})).returncode == 0
    for op, params in sorted(_ops().items()):
        if op in LEFT_OUT:
            continue
        for param in params:
            if param in ("wait", "table", "all", "force"):   # flags: any JSON value reads as true or false
                continue
            args = {**_valid(op, tmp_path), param: value}
            got = _answer(d, op, args)
            assert got != "internal_error", (op, param, value)
    assert d.ctl("ping").returncode == 0
