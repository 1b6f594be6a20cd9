"""Known escape shapes against parsers as code: refused at `add`, harmless with the check off.

Each shape is a whole parser that tries, through one escape technique, to reach the real `os`
(or the C library) and then to read a canary file, create a file, spawn a process that would
create another, open a TCP connection, and return the environment. Two halves:

- through the real daemon: `healerctl add` refuses it with one line naming the construct, and
  so does the daemon itself when sent the same blueprint over its socket without healerctl;
- through the confined child with the static check switched off (`run_unchecked`): whatever
  the parser got to, nothing happened -- the canary was not read, no file was created, nothing
  was spawned, nobody connected to the listener, the environment's secret was not returned,
  no process was left -- and the outcome shows where it was stopped (the kernel's EPERM, or
  the child's own refusals: the guarded getattr, the missing built-ins, the import hook).
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading

import pytest

from healerd.adapters.sandbox import ParserRejected, run_unchecked
from healerd.control.client import ControlError, call
from tests.support.daemon import DaemonProc
from tests.support.parser_children import adopt_orphans, leftover_parser_children
from tests.support.site import Site

SECRET = "canary-escape-table-5d1e"
ENV_SECRET = "sk-escape-table-env-93ab"

# After parse(): what a parser does once it holds the os module's globals. Only plain
# subscripts, so the static check's one line names the shape's own technique, written above.
HARM = '''

def attempt(out, key, fn):
    try:
        out[key] = fn()
    except Exception as exc:
        out[key] = repr(exc)


def harm(os):
    out = {}
    attempt(out, "read", lambda: os["read"](os["open"](CANARY, 0), 200).decode())
    attempt(out, "write", lambda: os["open"](NEWFILE, os["O_CREAT"] | os["O_WRONLY"], 0o644))
    attempt(out, "spawn", lambda: os["system"]("touch " + SPAWNED))
    attempt(out, "env", lambda: repr(os["environ"]))
    attempt(out, "connect", lambda: connect(os))
    return out


def connect(os):
    gc = os["__builtins__"]["__import__"]("gc")
    libc = [o for o in gc.get_objects() if type(o).__name__ == "CDLL"][0]
    fd = libc.socket(2, 1, 0)
    addr = (2).to_bytes(2, "little") + PORT.to_bytes(2, "big") + bytes([127, 0, 0, 1]) + bytes(8)
    return repr([fd, libc.connect(fd, addr, 16)])


def os_of(obj):
    for c in obj.__subclasses__():
        if c.__name__ == "_wrap_close":
            return c.__init__.__globals__
'''

EPERM = r"Operation not permitted|\[Errno 1\]"
HARMED = r'"read": "PermissionError\(1, .Operation not permitted.\)"'
NO_NEW_CLASS = r"TypeError: (type\(\) takes one argument|class keywords \(metaclass=\.\.\.\) are not allowed)"

# name -> (the parser up to parse(), the static check's words, what the child's outcome shows)
SHAPES: dict[str, tuple[str, str, str]] = {
    # The bypass reported in the issue: a metaclass from type(), bound to the name `str`, whose
    # __match_args__ turns a class pattern into a read of the runner's globals.
    "metaclass-match-on-str": ('''
Meta = type("Meta", (type,), {"__instancecheck__": lambda c, o: True})
str = Meta("S", (), {"__match_args__": ("__globals__",)})
def parse(html):
    match getattr:
        case str(g):
            return harm(os_of(g["__builtins__"].object))
''', "calls type() with 3 arguments", NO_NEW_CLASS),
    # The same with the real `type` taken from an object, past the child's own type() guard.
    "metaclass-match-real-type": ('''
Meta = ().__class__.__class__("Meta", (().__class__.__class__,), {"__instancecheck__": lambda c, o: True})
str = Meta("S", (), {"__match_args__": ("__globals__",)})
def parse(html):
    match getattr:
        case str(g):
            return harm(os_of(g["__builtins__"].object))
''', "private attribute '__class__'", HARMED),
    # The two bypasses before it: a class pattern naming an attribute, a submodule from-import.
    "class-pattern-keyword": ('''
import json
def parse(html):
    match json.dumps:
        case object(__globals__=g):
            return harm(os_of(g["__builtins__"]["object"]))
''', "class pattern in match (case X(...))", HARMED),
    "submodule-from-import": ('''
from json import decoder
def parse(html):
    return harm(decoder.re.enum.sys.modules["os"].__dict__)
''', "imports the module json.decoder", r"ImportError"),
    "class-statement-metaclass": ('''
Meta = type(type)
class S(metaclass=Meta):
    pass
def parse(html):
    return harm(os_of(object))
''', "uses 'type' other than as type(x)", NO_NEW_CLASS),
    "walrus-rebinds-a-builtin": ('''
def parse(html):
    if (isinstance := lambda o, c: True):
        return harm(os_of(object))
''', "rebinds the built-in name 'isinstance' by assignment", HARMED),
    "subclasses-walk": ('''
def parse(html):
    return harm(os_of(().__class__.__base__))
''', "private attribute '__class__'", HARMED),
    "traceback-frame-walk": ('''
def parse(html):
    try:
        1 / 0
    except ZeroDivisionError as exc:
        frame = exc.__traceback__.tb_frame
    while "__builtins__" not in frame.f_globals or "_main" not in frame.f_globals:
        frame = frame.f_back
    return harm(os_of(frame.f_globals["__builtins__"].object))
''', "private attribute '__traceback__'", HARMED),
    "exception-traceback-f-builtins": ('''
def parse(html):
    try:
        {}["x"]
    except KeyError as exc:
        tb = exc.__traceback__
    return harm(os_of(tb.tb_frame.f_back.f_builtins["object"]))
''', "private attribute '__traceback__'", HARMED),
    "generator-gi-frame": ('''
def parse(html):
    def gen():
        yield me.gi_frame.f_back
    me = gen()
    frame = next(me)
    while "_main" not in frame.f_globals:
        frame = frame.f_back
    return harm(os_of(frame.f_globals["__builtins__"].object))
''', "attribute 'gi_frame'", HARMED),
    "coroutine-cr-frame": ('''
async def inner():
    return me.cr_frame.f_back
def parse(html):
    global me
    me = inner()
    try:
        me.send(None)
    except StopIteration as stop:
        frame = stop.value
    while "_main" not in frame.f_globals:
        frame = frame.f_back
    return harm(os_of(frame.f_globals["__builtins__"].object))
''', "async function (async def)", HARMED),
    "format-attribute-walk": ('''
def parse(html):
    return {"env": "{0.__init__.__globals__[environ]}".format(os_of(object)["_wrap_close"])}
''', "dunder name '__init__' in a string", r"environ\("),
    "format-map-walk": ('''
def parse(html):
    return {"env": "{w.__init__.__globals__[environ]}".format_map({"w": os_of(object)["_wrap_close"]})}
''', "dunder name '__init__' in a string", r"environ\("),
    "str-format-map-unbound": ('''
def parse(html):
    return {"env": str.format_map("{w.__init__}", {"w": object})}
''', ".format_map() other than on a string literal", r"slot wrapper"),
    "getattr-computed-name": ('''
def parse(html):
    cls = getattr(html, "_" + "_class__")
    return harm(os_of(getattr(cls, "_" + "_base__")))
''', "computed or missing attribute name", r"access to attribute .* is not allowed"),
    "getattr-frame-by-prefix": ('''
def parse(html):
    g = (x for x in [1])
    return {"f": str(getattr(g, "gi_" + "frame"))}
''', "computed or missing attribute name", r"access to attribute 'gi_frame' is not allowed"),
    "vars-of-a-function": ('''
import json
def parse(html):
    return harm(vars(json.dumps)["__globals__"])
''', "forbidden name 'vars'", r"NameError"),
    "globals-builtins": ('''
def parse(html):
    return harm(os_of(globals()["__builtins__"]["object"]))
''', "forbidden name 'globals'", r"NameError"),
    "builtins-lookup-import": ('''
def parse(html):
    return harm(__builtins__["__import__"]("os").__dict__)
''', "dunder name '__builtins__'", r"import of 'os' is not allowed"),
    "lambda-default-getattr": ('''
def parse(html):
    f = lambda g=getattr: g(html, "__class__")
    return harm(os_of(f().__base__))
''', "uses 'getattr' other than as a call", r"access to attribute '__class__' is not allowed"),
    "lambda-globals": ('''
def parse(html):
    return harm(os_of((lambda: 0).__globals__["__builtins__"]["object"]))
''', "private attribute '__globals__'", HARMED),
    "decorator-turns-a-class-into-os": ('''
@lambda c: [k for k in c.__base__.__subclasses__() if k.__name__ == "_wrap_close"][0].__init__.__globals__
class X:
    pass
def parse(html):
    return harm(X)
''', "uses a decorator other than", HARMED),
    "star-unpacking-of-a-builtin": ('''
def parse(html):
    first, *rest = [getattr, html]
    return harm(os_of(first(html, "__class__").__base__))
''', "uses 'getattr' other than as a call", r"access to attribute '__class__' is not allowed"),
    "string-built-dunder-via-join": ('''
def parse(html):
    name = "".join(["_", "_cla", "ss_", "_"])
    return harm(os_of(getattr(html, name).__base__))
''', "dunder name '__class__' in a string", r"access to attribute '__class__' is not allowed"),
    "type-three-args-subclass-hook": ('''
def parse(html):
    K = type("K", (object,), {"run": lambda self: os_of(object)})
    return harm(K().run())
''', "calls type() with 3 arguments", NO_NEW_CLASS),
    "builtin-rebound-by-argument": ('''
def parse(html, object=().__class__.__base__):
    return harm(os_of(object))
''', "rebinds the built-in name 'object' as an argument", HARMED),
    "fstring-subclasses-repr": ('''
def parse(html):
    return {"classes": f"{().__class__.__base__.__subclasses__()}"}
''', "private attribute '__class__'", r"_wrap_close"),
}


def _code(name: str, arena: dict) -> str:
    shape = SHAPES[name][0]
    consts = (f"CANARY = {arena['canary']!r}\nNEWFILE = {arena['newfile']!r}\nSPAWNED = {arena['spawned']!r}\n"
              f"PORT = {arena['port']}\n")
    return shape + HARM + consts




@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    adopt_orphans()
    root = tmp_path_factory.mktemp("escape-table")
    canary = root / "canary.txt"
    canary.write_text(SECRET)
    hits: list = []
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)

    def accept():
        while True:
            try:
                hits.append(srv.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    old = os.environ.get("HEALERD_ESCAPE_TABLE_SECRET")
    os.environ["HEALERD_ESCAPE_TABLE_SECRET"] = ENV_SECRET   # the parent's environment holds a secret
    yield {"root": root, "canary": str(canary), "newfile": str(root / "created.txt"),
           "spawned": str(root / "spawned.txt"), "port": srv.getsockname()[1], "hits": hits}
    if old is None:
        os.environ.pop("HEALERD_ESCAPE_TABLE_SECRET", None)
    else:
        os.environ["HEALERD_ESCAPE_TABLE_SECRET"] = old
    srv.close()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    site = Site()
    site.page("/list", "<table class='stats'></table>")
    d = DaemonProc(tmp_path_factory.mktemp("escape-daemon"))
    d.start()
    d.site = site
    yield d
    d.stop()
    site.stop()


def test_the_table_holds_at_least_twenty_shapes():
    assert len(SHAPES) >= 20


@pytest.mark.parametrize("name", list(SHAPES))
def test_the_shape_is_refused_at_add_with_one_line(name, daemon, arena):
    code, words, _ = SHAPES[name]
    bp = {"url": daemon.site.url("/list"), "parser": _code(name, arena), "fields": {"name": {}}}
    path = daemon.tmp / f"{name}.json"
    path.write_text(json.dumps(bp))
    r = daemon.ctl("add", name, "--blueprint", str(path))
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode != 0 and len(lines) == 1, r.stderr
    assert "parser" in lines[0] and words in lines[0], lines[0]
    assert re.search(r"\(line \d+\)", lines[0]), lines[0]
    # The daemon refuses it too when healerctl's own check is skipped (a raw request on its socket).
    with pytest.raises(ControlError) as info:
        call(daemon.socket, "add", {"name": name, "blueprint": bp})
    assert words in str(info.value), str(info.value)
    assert name not in [s["name"] for s in daemon.ctl_json("status")]
    assert daemon.proc.poll() is None and daemon.ctl("ping").returncode == 0


@pytest.mark.parametrize("name", list(SHAPES))
def test_the_shape_does_no_harm_with_the_static_check_off(name, arena):
    _, _, evidence = SHAPES[name]
    try:
        outcome = json.dumps(run_unchecked(_code(name, arena), "<p>page</p>", cpu_seconds=2, memory_mb=128,
                                           wall_seconds=10, max_output=500_000))
    except ParserRejected as exc:
        outcome = exc.reason
    # What actually happened: nothing read, written, spawned, connected, returned or left running.
    assert SECRET not in outcome and ENV_SECRET not in outcome, outcome
    assert not os.path.exists(arena["newfile"]), outcome
    assert not os.path.exists(arena["spawned"]), outcome
    assert arena["hits"] == [], outcome
    assert leftover_parser_children() == []
    # ...and where it was stopped: the kernel (EPERM on each attempt) or the child's own layer.
    assert re.search(evidence, outcome), outcome
    if evidence == HARMED:
        report = json.loads(outcome)
        for key in ("read", "write", "spawn"):
            assert re.search(EPERM, str(report[key])) or report[key] in (-1, 32512, 256), (key, report)
        assert report["connect"] == "[-1, -1]" or re.search(EPERM, report["connect"]), report
