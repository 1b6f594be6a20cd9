"""The static check of a code parser (healerd.adapters.sandbox.static_check): cases a mutation found no test for.

- a mapping pattern's rest (`case {**len}:`) binds a name like any capture: a built-in may not be rebound;
- `"_" * k` with `k` unknown may be any number of underscores: read as more than one, so a dunder
  name built around a word (`"_" * k + "class" + "_" * k`) is refused.
"""

from __future__ import annotations

import pytest

from healerd.adapters.sandbox import ParserRejected
from healerd.adapters.sandbox.static_check import check_static


def parser(body: str) -> str:
    return "def parse(html):\n" + "".join(f"    {line}\n" for line in body.splitlines())


@pytest.mark.parametrize("body, says", [
    ("match html:\n    case {**len}:\n        return []\nreturn []", "rebinds the built-in name 'len' as a match capture"),
    ("match html:\n    case {'a': 1, **str}:\n        return []\nreturn []", "rebinds the built-in name 'str'"),
    ("k = len(html)\nname = '_' * k + 'class' + '_' * k\nreturn [{'a': name}]", "dunder name"),
    ("k = len(html)\nname = k * '_' + 'globals' + k * '_'\nreturn [{'a': name}]", "dunder name"),
    ("name = '_' * 2 + 'class' + '_' * 2\nreturn [{'a': name}]", "dunder name '__class__'"),
])
def test_refused(body, says):
    with pytest.raises(ParserRejected, match=says):
        check_static(parser(body))


@pytest.mark.parametrize("body", [
    "match html:\n    case {**rest}:\n        return [rest]\nreturn []",
    "k = len(html)\nrule = '-' * k + 'class' + '-' * k\nreturn [{'a': rule}]",
    "name = '_' * 1 + 'class' + '_' * 1\nreturn [{'a': name}]",
    "name = 'card' + '_' * 2 + 'title'\nreturn [{'a': name}]",
])
def test_passed(body):
    check_static(parser(body))
