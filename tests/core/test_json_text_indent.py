"""`json_text(obj, indent=N)` is json.dumps's indented text, built faster.

`healerctl status --json` prints 100,000 objects indented; json.dumps with an indent runs the
json module's pure-Python encoder. json_text encodes each object or array without a nested
container by the C encoder, the newline and indent as its separator: the text must be the
very same for every shape, nesting depth and indent (C1 characters and DEL escaped as before).
"""

from __future__ import annotations

import json
import unicodedata

import pytest

from healerd.core.terminal import json_text

SHAPES = [
    {}, [], (), "text", 3, 2.5, None, True,
    {"name": "src-1", "state": "ACTIVE", "version": 1, "paused": False, "next_run_at": None, "rate": 0.25},
    [1, 2, [3, {}], {"x": []}],
    {"a": {"b": [1, 2.5, float("nan"), float("inf"), -0.0, None, True]}, "c": "\u009b\x7f\xe9\n\"'\t\\", "d": []},
    {"k": {"k": {"k": {"k": [[[]]]}}}},
    [{"a": 1}, {"b": [{"c": "deep"}]}, "tail"],
    (1, (2, 3), [4]),
    {2: 2, None: 3, True: 4, 1.5: 5},            # keys json.dumps turns into strings, no container below
    {1: {"a": 1}, "x": [1]},                      # such keys above a container: json.dumps does it
    {"emoji \U0001f600": "\u2028 line sep", "ctl \x1b[2J": "\x00"},
]


def reference(obj, indent: int) -> str:
    """json.dumps's text with DEL, C1 and Unicode's format characters and separators escaped."""
    text = json.dumps(obj, ensure_ascii=False, indent=indent)
    shown = (c if not ("\x7f" <= c <= "\x9f" or unicodedata.category(c) in ("Cf", "Zl", "Zp"))
             else json.dumps(c)[1:-1] for c in text)
    return "".join(shown)


@pytest.mark.parametrize("indent", [0, 1, 2, 4])
@pytest.mark.parametrize("obj", SHAPES, ids=range(len(SHAPES)))
def test_the_same_text_as_json_dumps(obj, indent):
    assert json_text(obj, indent=indent) == reference(obj, indent)


def test_what_json_dumps_refuses_is_still_refused():
    with pytest.raises(TypeError):
        json_text({"a": {1, 2}}, indent=2)
    with pytest.raises(TypeError):
        json_text({"a": [object()]}, indent=2)


def test_default_and_separators_are_still_honoured():
    assert json_text({"a": {1}}, indent=2, default=sorted) == '{\n  "a": [\n    1\n  ]\n}'
    assert json_text({"a": [1, 2]}, indent=1, separators=(";", "=")) == '{\n "a"=[\n  1;\n  2\n ]\n}'
