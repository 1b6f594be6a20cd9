"""Parsers as code: the static check and the limited child process (real subprocesses)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from healerd.adapters.sandbox import (
    ChildResult,
    ParserRejected,
    _limits,
    check_parser_source,
    interpret,
    run_parser,
    run_unchecked,
    runner_argv,
    spawn_child,
)

PAGE = """<html><body><table class="stats">
<tr class="player"><td class="name"><a href="/p/1">Ann Lee</a></td><td class="score">1,204 pts</td></tr>
<tr class="player"><td class="name"><a href="/p/2">Bo  Kim</a></td><td class="score">987 pts</td></tr>
</table></body></html>"""

GOOD = '''
import re
from selectolax.lexbor import LexborHTMLParser
from urllib.parse import urljoin

def parse(html):
    tree = LexborHTMLParser(html)
    out = []
    for row in tree.css("tr.player"):
        name = row.css_first("td.name a")
        score = re.search(r"[\\d,]+", row.css_first("td.score").text())
        out.append({"name": " ".join(name.text().split()),
                    "profile": urljoin("http://x.test/", name.attributes["href"]),
                    "score": int(score.group(0).replace(",", ""))})
    return out
'''


def test_a_good_parser_runs_with_selectolax():
    assert run_parser(GOOD, PAGE) == [
        {"name": "Ann Lee", "profile": "http://x.test/p/1", "score": 1204},
        {"name": "Bo Kim", "profile": "http://x.test/p/2", "score": 987},
    ]


def test_a_single_record_parser_and_bytes_input():
    code = "import json\ndef parse(html):\n    return {'n': len(html), 'ok': True, 'none': None, 'f': 1.5}\n"
    assert run_parser(code, b"<p>hi</p>") == {"n": 9, "ok": True, "none": None, "f": 1.5}


def test_print_in_the_parser_does_not_corrupt_the_result():
    code = "def parse(html):\n    print('garbage {{{ not json')\n    print(']]]')\n    return {'a': 'b'}\n"
    assert run_parser(code, PAGE) == {"a": "b"}


def test_an_infinite_loop_is_killed_at_the_wall_limit():
    with pytest.raises(ParserRejected, match=r"ran longer than 1s \(wall clock\) and was killed"):
        run_parser("def parse(html):\n    while True:\n        pass\n", PAGE, wall_seconds=1)


def test_a_cpu_hog_is_killed_by_the_cpu_limit():
    code = "def parse(html):\n    n = 0\n    while True:\n        n += 1\n"
    with pytest.raises(ParserRejected, match="CPU time"):
        run_parser(code, PAGE, cpu_seconds=1, wall_seconds=30)


@pytest.mark.parametrize("code", [
    "def parse(html):\n    x = 'a' * (10 ** 10)\n    return {}\n",
    "def parse(html):\n    hoard = []\n    while True:\n        hoard.append('x' * 10 ** 6)\n",
])
def test_a_memory_bomb_is_rejected(code):
    with pytest.raises(ParserRejected, match=r"out of memory \(limit 128 MB\)"):
        run_parser(code, PAGE, memory_mb=128)


def test_huge_output_is_cut_and_rejected():
    code = "def parse(html):\n    return [{'v': 'x' * 1000} for _ in range(100000)]\n"
    with pytest.raises(ParserRejected, match="output exceeds 50000 bytes"):
        run_parser(code, PAGE, max_output=50_000)


def _report(**changes) -> dict:
    """What a fully confined child reports on its first line (before it reads anything)."""
    limits = {name: [soft, hard] for name, soft, hard in _limits(5, 256)}
    report = {"confined": True, "uid": 65534, "euid": 65534, "gid": 65534, "egid": 65534, "groups": [],
              "seccomp": 2, "no_new_privs": 1, "dumpable": 0, "limits": limits,
              "denied": {"open": True, "socket": True, "kill": True, "setuid": True}}
    report.update(changes)
    return report


def _interpret(stdout: bytes):
    return interpret(ChildResult(0, stdout, "", False, False), cpu_seconds=5, memory_mb=256, wall_seconds=10,
                     max_output=10_000)


def test_garbage_on_the_runner_stdout_is_rejected():
    child = spawn_child("import sys\nsys.stdout.write('<<garbage>> not json')\n", b"", [],
                        wall_seconds=10, max_output=1000)
    assert child.returncode == 0 and child.stdout.startswith(b"<<garbage>>")
    with pytest.raises(ParserRejected, match="sent no confinement report"):
        interpret(child, cpu_seconds=5, memory_mb=256, wall_seconds=10, max_output=1000)
    good = json.dumps(_report()).encode() + b"\n"
    assert _interpret(good + b'{"ok": true, "result": {"a": "1"}}\n') == {"a": "1"}
    with pytest.raises(ParserRejected, match="not valid JSON"):
        _interpret(good + b"<<garbage>> not json")
    with pytest.raises(ParserRejected, match="not a result envelope"):
        _interpret(good + b"[1, 2]\n")


@pytest.mark.parametrize("changes, missing", [
    ({"seccomp": 0}, "seccomp filter"),
    ({"no_new_privs": 0}, "no_new_privs"),
    ({"denied": {"open": False, "socket": True, "kill": True, "setuid": True}}, "open denied"),
    ({"uid": 0}, "unprivileged uid/gid"),
    ({"groups": [0]}, "unprivileged uid/gid"),
    ({"limits": {"cpu": [5, 6]}}, "as limit"),
    ({"confined": False, "error": "seccomp unavailable: Unable to find libseccomp"}, "Unable to find libseccomp"),
])
def test_a_child_that_is_not_fully_confined_is_refused_before_its_result_is_read(changes, missing):
    stdout = json.dumps(_report(**changes)).encode() + b'\n{"ok": true, "result": {"a": "1"}}\n'
    if os.geteuid() != 0 and "uid" in missing:
        pytest.skip("the uid drop is only required of a root parent")
    with pytest.raises(ParserRejected) as info:
        _interpret(stdout)
    assert missing in info.value.reason


@pytest.mark.parametrize("code, reason", [
    ("def parse(html):\n    raise ValueError('layout unknown')\n", "raised ValueError: layout unknown"),
    ("def parse(html):\n    return 3\n", "value of type int"),
    ("def parse(html):\n    return [{'a': 1}, 'x']\n", "item 1: a value of type str"),
    ("def parse(html):\n    return {'a': [1, 2]}\n", "field 'a' of type list"),
    ("def parse(html):\n    return {'a': float('nan')}\n", "not JSON"),
    ("def parse(html):\n    return {'a': {1, 2}}\n", "not JSON"),
    ("def parse(html):\n    return parse(html)\n", "RecursionError"),
])
def test_bad_results_and_exceptions_are_rejected_with_a_reason(code, reason):
    with pytest.raises(ParserRejected) as info:
        run_parser(code, PAGE)
    assert reason in info.value.reason


@pytest.mark.parametrize("code, reason", [
    ("def parse(html:\n    return {}\n", "does not parse: line 1"),
    ("def parsed(html):\n    return {}\n", "top-level function parse"),
    ("def parse():\n    return {}\n", "first argument"),
    ("import os\ndef parse(html):\n    return {}\n", "imports 'os'"),
    ("import sys\ndef parse(html):\n    return {}\n", "imports 'sys'"),
    ("import subprocess\ndef parse(html):\n    return {}\n", "imports 'subprocess'"),
    ("from os import path\ndef parse(html):\n    return {}\n", "imports 'os'"),
    ("import urllib.request\ndef parse(html):\n    return {}\n", "imports 'urllib.request'"),
    ("from urllib import request\ndef parse(html):\n    return {}\n", "imports 'urllib'"),
    ("import importlib\ndef parse(html):\n    return {}\n", "imports 'importlib'"),
    ("import builtins\ndef parse(html):\n    return {}\n", "imports 'builtins'"),
    ("from . import x\ndef parse(html):\n    return {}\n", "relative import"),
    ("from re import *\ndef parse(html):\n    return {}\n", "import *"),
    ("def parse(html):\n    return {'a': open('/etc/passwd').read()}\n", "forbidden name 'open'"),
    ("def parse(html):\n    return eval('1')\n", "forbidden name 'eval'"),
    ("def parse(html):\n    exec('x=1')\n", "forbidden name 'exec'"),
    ("def parse(html):\n    return __import__('os')\n", "dunder name '__import__'"),
    ("def parse(html):\n    return globals()\n", "forbidden name 'globals'"),
    ("def parse(html):\n    return vars()\n", "forbidden name 'vars'"),
    ("def parse(html):\n    breakpoint()\n", "forbidden name 'breakpoint'"),
    ("def parse(html):\n    return {'a': input()}\n", "forbidden name 'input'"),
    ("def parse(html):\n    return ().__class__.__bases__[0].__subclasses__()\n", "private attribute '__"),
    ("def parse(html):\n    return parse.__globals__\n", "'__globals__'"),
    ("def parse(html):\n    return __builtins__\n", "'__builtins__'"),
    ("def parse(html):\n    return getattr(html, '__class__')\n", "getattr() on the attribute '__class__'"),
    ("def parse(html):\n    g = (x for x in [1])\n    return g.gi_frame\n", "'gi_frame'"),
    ("import collections\ndef parse(html):\n    return collections._sys\n", "private attribute '_sys'"),
    ("from json import decoder\ndef parse(html):\n    return {}\n", "imports the module json.decoder"),
    ("from re import enum\ndef parse(html):\n    return {}\n", "imports the module re.enum"),
    ("from string import Formatter\ndef parse(html):\n    return {}\n", "'Formatter' from 'string'"),
    ("import string\ndef parse(html):\n    return {'a': string.Formatter().format(html)}\n",
     "uses string.Formatter, which is not allowed"),
    ("import json\ndef parse(html):\n    match json.dumps:\n        case object(__globals__=g): pass\n",
     "class pattern in match (case X(...))"),
    ("import json\ndef parse(html):\n    match json:\n        case object(x): pass\n", "class pattern in match"),
    ("def parse(html):\n    match html:\n        case str(s): pass\n", "class pattern in match"),
    ("import json\ndef parse(html):\n    return {'x': '{0.__globals__}'.format(json.dumps)}\n",
     "dunder name '__globals__' in a string"),
    ("import json\ndef parse(html):\n    return {'x': '{0.real}'.format(1)}\n", "formats the field {0.real}"),
    ("def parse(html):\n    return {'x': '{0[k]}'.format({'k': 1})}\n", "formats the field {0[k]}"),
    ("def parse(html):\n    t = '{0}'\n    return {'x': t.format(1)}\n", "other than on a string literal"),
    ("def parse(html):\n    return {'x': str.format_map('{a}', {})}\n", ".format_map() other than"),
    ("class A:\n    def __reduce__(self):\n        return ()\ndef parse(html):\n    return {}\n",
     "defines the dunder name '__reduce__'"),
    # The allow-list: what a parser may not bind, name, or build, each refused naming its line.
    ("def parse(html):\n    str = 1\n    return {}\n", "rebinds the built-in name 'str' by assignment (line 2)"),
    ("def len(x):\n    return 1\ndef parse(html):\n    return {}\n", "rebinds the built-in name 'len'"),
    ("def parse(html):\n    for str in []:\n        pass\n", "rebinds the built-in name 'str' by assignment (line 2)"),
    ("def parse(html):\n    if (len := 3):\n        pass\n", "rebinds the built-in name 'len'"),
    ("import re as str\ndef parse(html):\n    return {}\n", "rebinds the built-in name 'str' by an import"),
    ("from json import loads as min\ndef parse(html):\n    return {}\n", "rebinds the built-in name 'min'"),
    ("def parse(html, str=None):\n    return {}\n", "rebinds the built-in name 'str' as an argument"),
    ("def parse(html):\n    f = lambda id: id\n    return {}\n", "rebinds the built-in name 'id'"),
    ("def parse(html):\n    try:\n        pass\n    except ValueError as type:\n        pass\n",
     "rebinds the built-in name 'type'"),
    ("def parse(html):\n    global max\n    return {}\n", "rebinds the built-in name 'max'"),
    ("def parse(html):\n    del str\n", "rebinds the built-in name 'str' by deleting it"),
    ("def parse(html):\n    match html:\n        case [*str]: pass\n", "rebinds the built-in name 'str'"),
    ("class dict:\n    pass\ndef parse(html):\n    return {}\n", "rebinds the built-in name 'dict'"),
    ("def parse(html):\n    M = type('M', (), {})\n", "calls type() with 3 arguments"),
    ("def parse(html):\n    t = type\n", "uses 'type' other than as type(x)"),
    ("def parse(html):\n    return type(type)('M', (), {})\n", "calls what type() returned"),
    ("class M(type):\n    pass\ndef parse(html):\n    return {}\n", "uses 'type' other than as type(x)"),
    ("class A(object, metaclass=M):\n    pass\ndef parse(html):\n    return {}\n",
     "class statement keywords (metaclass=...)"),
    ("class A(dict(a=1).__class__):\n    pass\ndef parse(html):\n    return {}\n", "computed base"),
    ("def parse(html):\n    return {'a': getattr(html, 'up' + 'per')()}\n", "computed or missing attribute name"),
    ("def parse(html):\n    f = getattr\n", "uses 'getattr' other than as a call"),
    ("def parse(html):\n    return {'a': getattr(*[html, 'upper'])}\n", "computed or missing attribute name"),
    ("def parse(html):\n    return {'a': getattr(html, 'gi_frame')}\n", "getattr() on the attribute 'gi_frame'"),
    ("def parse(html):\n    return {'a': getattr(html, 'format')}\n", "getattr() on the attribute 'format'"),
    ("def parse(html):\n    return {'a': '__globals__'}\n", "dunder name '__globals__' in a string"),
    ("def parse(html):\n    return {'a': b'__class__'}\n", "dunder name '__class__' in a string"),
    ("def parse(html):\n    return {'a': '__glob' + 'als__'}\n", "dunder name '__globals__' in a string"),
    ("def parse(html):\n    return {'a': '_' * 2 + 'class' + '_' * 2}\n", "dunder name '__class__' in a string"),
    ("def parse(html):\n    return {'a': f'__{html}__'}\n", "dunder name '__…__' in a string"),
    ("def parse(html):\n    return {'a': ''.join(['_', '_mro_', '_'])}\n", "dunder name '__mro__' in a string"),
    ("def parse(html):\n    return {'a': '{}{}{}'.format('__', 'dict', '__')}\n", "dunder name '__dict__'"),
    ("def parse(html):\n    return {'a': '__%s__' % 'class'}\n", "dunder name '__class__' in a string"),
    ("def parse(html):\n    return {'a': 'x__class__'[1:]}\n", "dunder name '__class__' in a string"),
    ("def parse(html):\n    return {'a': chr(95) + chr(95) + 'class' + chr(95) * 2}\n", "dunder name '__class__'"),
    ("def parse(html):\n    return {'a': f'{html.__class__}'}\n", "private attribute '__class__'"),
    ("def parse(html):\n    return dict(__x__=1)\n", "dunder name '__x__' as a keyword argument"),
    ("if __name__ == 'x':\n    pass\ndef parse(html):\n    return {}\n", "dunder name '__name__'"),
    ("def parse(html):\n    return {'a': vars()}\n", "forbidden name 'vars'"),
    ("def parse(html):\n    return {'a': [*globals()]}\n", "forbidden name 'globals'"),
    ("@print\ndef f():\n    pass\ndef parse(html):\n    return {}\n", "uses a decorator other than"),
    ("async def f():\n    pass\ndef parse(html):\n    return {}\n", "async function (async def)"),
    ("def parse(html):\n    try:\n        pass\n    except* ValueError:\n        pass\n", "uses except*"),
    ("def parse(html):\n    def g():\n        yield 1\n    return g().gi_frame\n", "attribute 'gi_frame'"),
    ("def parse(html):\n    return {'a': html.f_lasti}\n", "attribute 'f_lasti'"),
    ("def parse(html):\n    return {'a': '{:,}'.format(1)}\n    x = y.__dict__\n", "(line 3)"),
])
def test_the_static_check_refuses_dangerous_code(code, reason):
    with pytest.raises(ParserRejected) as info:
        check_parser_source(code)
    assert reason in info.value.reason
    with pytest.raises(ParserRejected):   # run_parser checks first, so nothing dangerous ever starts
        run_parser(code, PAGE)


def test_the_static_check_accepts_ordinary_parsers():
    check_parser_source(GOOD)
    check_parser_source("import datetime, json, math, string, itertools, collections, functools, decimal, html\n"
                        "import unicodedata, urllib.parse, selectolax, selectolax.lexbor\n"
                        "from collections import Counter\nfrom urllib import parse as up\nfrom json import dumps\n"
                        "def parse(html):\n    match html:\n        case 'a' | None:\n            pass\n"
                        "        case [x, *rest] if x:\n            pass\n        case {'k': v, **others}:\n"
                        "            pass\n"
                        "    return {'t': getattr(html, 'upper')(), 'f': '{0} {n:>{w}}'.format(1, n=2, w=3)}\n")
    # What parsers commonly write: counters, helpers, classes with properties, generators, f-strings,
    # BEM class names in selectors, cached helpers, type(x) checks, % formatting.
    check_parser_source(
        "import re, functools\nfrom collections import Counter, defaultdict\n"
        "from selectolax.lexbor import LexborHTMLParser\n\n"
        "@functools.lru_cache(maxsize=None)\ndef clean(text):\n    return ' '.join(text.split())\n\n"
        "class Row:\n    def setup(self, node):\n        self.node = node\n        return self\n\n"
        "    @property\n    def name(self):\n        return clean(self.node.text())\n\n"
        "    @staticmethod\n    def number(text):\n        m = re.search(r'\\d+', text or '')\n"
        "        return int(m.group(0)) if m else None\n\n"
        "def rows(tree):\n    yield from (Row().setup(n) for n in tree.css('li.card__item, div.menu__item__link'))\n\n"
        "def parse(html):\n    tree = LexborHTMLParser(html)\n    seen = Counter()\n    groups = defaultdict(list)\n"
        "    out = []\n    for i, row in enumerate(rows(tree)):\n        seen[row.name] += 1\n"
        "        groups[type(row.name) is str].append(i)\n"
        "        label = f'{i:>3}: {row.name!r}' if row.name else '%d-%s' % (i, 'none')\n"
        "        out.append({'name': row.name, 'n': Row.number(label), 'label': label})\n"
        "    try:\n        total = sum(v for v in seen.values())\n    except (ValueError, TypeError) as exc:\n"
        "        raise ValueError(f'bad page: {exc}') from None\n    assert total >= 0\n"
        "    return out\n")


def test_the_runtime_refuses_what_the_static_check_would_have(tmp_path):
    # These reach the child without the static check: the child's own defences stop them.
    cases = {
        "import os\ndef parse(html):\n    return {}\n": "import of 'os' is not allowed",
        "def parse(html):\n    return {'x': str(open)}\n": "NameError",
        "import datetime\ndef parse(html):\n    return {'x': str(datetime.sys)}\n": "has no attribute 'sys'",
        "import string\ndef parse(html):\n    return {'x': str(string.Formatter)}\n": "has no attribute 'Formatter'",
        "def parse(html):\n    return {'x': str(getattr(html, '_' + '_class__'))}\n": "not allowed",
        "import selectolax.lexbor as lx\ndef parse(html):\n    return {'x': str(lx.logger)}\n": "no attribute 'logger'",
        "def parse(html):\n    return {'x': str(type('M', (), {}))}\n": "type() takes one argument",
        "def parse(html):\n    return {'x': str(type(int)('M', (), {}))}\n": "type() takes one argument",
        "class M(type(int)):\n    pass\ndef parse(html):\n    return {}\n": "metaclasses are not allowed",
        "class A(metaclass=type(int)):\n    pass\ndef parse(html):\n    return {}\n": "class keywords",
        "def parse(html):\n    return {'x': getattr(html, 'gi_' + 'frame')}\n": "'gi_frame' is not allowed",
    }
    for code, reason in cases.items():
        with pytest.raises(ParserRejected) as info:
            run_unchecked(code, PAGE)
        assert reason in info.value.reason, (code, info.value.reason)


def test_type_of_a_value_and_plain_classes_still_work_in_the_child():
    code = ("class Box(dict):\n    pass\n\nclass Row:\n    pass\n\n"
            "def parse(html):\n    b = Box(a=1)\n    r = Row()\n    r.size = len(html)\n"
            "    return {'s': type(html) is str, 'i': type(r.size) is int, 'box': isinstance(b, dict),\n"
            "            'row': type(r) is Row, 'n': r.size}\n")
    assert run_parser(code, PAGE) == {"s": True, "i": True, "box": True, "row": True, "n": len(PAGE)}


def test_the_child_sees_an_empty_environment_and_a_fresh_cwd(monkeypatch, tmp_path):
    monkeypatch.setenv("HEALERD_TEST_SECRET", "sk-should-never-be-seen")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "marker.txt").write_text("parent's directory")
    script = ("import os, json, sys, resource\n"
              "print(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd(), 'files': os.listdir('.'),\n"
              "                  'isolated': sys.flags.isolated, 'site': 'site' in sys.modules}))\n")
    child = spawn_child(script, b"", [], wall_seconds=10, max_output=100_000)
    info = json.loads(child.stdout)
    assert "HEALERD_TEST_SECRET" not in info["env"]
    assert set(info["env"]) <= {"LC_CTYPE"}  # Python itself may set LC_CTYPE when coercing the C locale
    assert info["cwd"] != str(tmp_path) and info["files"] == []
    assert info["isolated"] == 1 and info["site"] is False
    assert not os.path.exists(info["cwd"])  # the temp dir is removed afterwards


def test_the_runner_confines_itself_before_reading_and_reports_it():
    from healerd.adapters.sandbox import RUNNER

    payload = json.dumps({"code": "def parse(html):\n    return {}\n", "html": ""}).encode()
    child = spawn_child(RUNNER, payload, runner_argv(2, 100), wall_seconds=10, max_output=10_000)
    report_line, envelope_line = child.stdout.decode().splitlines()
    report, envelope = json.loads(report_line), json.loads(envelope_line)
    assert envelope == {"ok": True, "result": {}}
    limits = report["limits"]
    assert limits["cpu"] == [2, 3]
    assert limits["as"] == [100 * 1024 * 1024] * 2
    assert limits["fsize"] == [0, 0] and limits["core"] == [0, 0] and limits["nproc"] == [0, 0]
    assert limits["nofile"][0] <= 8
    assert report["seccomp"] == 2 and report["no_new_privs"] == 1 and report["dumpable"] == 0
    assert report["denied"] == {"open": True, "socket": True, "kill": True, "setuid": True}
    if os.geteuid() == 0:
        assert 0 not in (report["uid"], report["euid"], report["gid"], report["egid"]) and report["groups"] == []


def test_a_parser_cannot_write_files_even_past_the_checks(tmp_path):
    # Runtime only: `open` is not among the builtins the parser gets.
    with pytest.raises(ParserRejected, match="NameError"):
        run_unchecked(f"def parse(html):\n    open({str(tmp_path / 'x')!r}, 'w').write('x')\n    return {{}}\n", PAGE)
    assert not (tmp_path / "x").exists()


def test_the_daemon_process_is_unaffected():
    before = sys.getrecursionlimit(), dict(os.environ), os.getcwd()
    with pytest.raises(ParserRejected):
        run_parser("def parse(html):\n    x = 'a' * (10 ** 10)\n", PAGE)
    assert run_parser("def parse(html):\n    return {'ok': 'yes'}\n", PAGE) == {"ok": "yes"}
    assert (sys.getrecursionlimit(), dict(os.environ), os.getcwd()) == before


def test_a_child_still_dumpable_is_refused():
    # A dumpable child can be ptrace'd or have its memory read by a process of the same uid.
    stdout = json.dumps(_report(dumpable=1)).encode() + b'\n{"ok": true, "result": {"a": "1"}}\n'
    with pytest.raises(ParserRejected, match="non-dumpable"):
        _interpret(stdout)
