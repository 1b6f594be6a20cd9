"""Unicode format characters made visible like controls (healerd/core/terminal.py)."""

from __future__ import annotations

import json
import re
import sys
import unicodedata

from healerd.core.terminal import FORMAT_CHARS, escaped, json_text, visible


def test_every_format_character_and_separator_of_this_pythons_unicode_is_listed():
    listed = re.compile(f"[{FORMAT_CHARS}]")
    missing = [f"U+{c:04X}" for c in range(sys.maxunicode + 1)
               if unicodedata.category(chr(c)) in ("Cf", "Zl", "Zp") and not listed.match(chr(c))]
    assert missing == []


def test_a_right_to_left_override_and_zero_width_characters_are_shown_not_printed():
    # "invoice\u202efdp.exe" reads as "invoiceexe.pdf" on a terminal.
    assert visible("invoice\u202efdp.exe") == "invoice\\u202efdp.exe"
    assert visible("a\u200bb\u200dc\ufeffd\xade") == "a\\u200bb\\u200dc\\ufeffd\\xade"
    assert visible("tag\U000e0041") == "tag\\U000e0041"
    assert visible("a\u2028b\u2029c") == "a b c"                               # one line: folded
    assert visible("a\u2028b\u2029c", one_line=False) == "a\\u2028b\\u2029c"    # kept: shown
    assert escaped("\u2066x\u2069") == "\\u2066x\\u2069"
    assert visible("plain, ünïcode, 東京, emoji 🙂") == "plain, ünïcode, 東京, emoji 🙂"   # printable stays


def test_json_text_escapes_format_characters_and_reads_back_the_same():
    value = {"k\u202e": "x\u200by\U000e0041z\u2029", "ok": "東京 🙂"}
    text = json_text(value)
    assert not re.search(f"[{FORMAT_CHARS}]", text), text
    assert "\\u202e" in text and "\\udb40\\udc41" in text and "東京 🙂" in text
    assert json.loads(text) == value
    assert json.loads(json_text(value, indent=2)) == value
