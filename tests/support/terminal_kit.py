"""What healerctl writes on a real pseudo-terminal, and the check that no control character reaches it raw."""

from __future__ import annotations

import os
import re
import subprocess

from tests.support.daemon import bin_cmd

# ... and Unicode format characters: U+202E (right-to-left override: `abc` shown as `cba`), a
# zero-width space and joiner, a BOM, an invisible tag character, a line separator.
PAYLOAD = ("\x1b]0;pwned\x07 \x1b]52;c;SGVsbG8=\x07 \x1b[2J \x1bc bare\x1b \x9b31m \x07 cr\rover"
           " \u202egnp.exe\u200b\u200d\ufeff\U000e0041 ls\u2028ep")


# What a terminal acts on: ESC, BEL, a C1 control (UTF-8 encoded), a CR that is not the pty's own
# CR before LF, and the other C0 controls but LF and tab; and (UTF-8 encoded) the soft hyphen, the
# bidi controls and zero-width characters, the line and paragraph separators, the BOM and the tags.
RAW = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)|\xc2[\x80-\x9f\xad]|\xe2\x80[\x8b-\x8f\xa8-\xae]"
                 rb"|\xe2\x81[\xa0-\xa4\xa6-\xaf]|\xef\xbb\xbf|\xf3\xa0[\x80\x81][\x80-\xbf]")


def on_pty(d, *args: str, colour: bool = False) -> bytes:
    """The raw bytes healerctl writes (stdout and stderr) on a pseudo-terminal."""
    env = {k: v for k, v in d.env.items() if k != "NO_COLOR"}
    if not colour:
        env["NO_COLOR"] = "1"
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(bin_cmd("healerctl") + ["--socket", d.socket, *args], cwd=d.tmp, env=env,
                                stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    finally:
        os.close(slave)
    out = bytearray()
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:   # EIO: the child closed its end
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
        proc.wait(timeout=120)
    return bytes(out)


def assert_nothing_raw(out: bytes, what: str) -> None:
    raw = RAW.search(out)
    assert raw is None, f"{what}: raw control {raw.group(0)!r} in {out!r}"
