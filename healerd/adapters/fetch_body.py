"""A fetched body's bytes and text: the decoded size cap and the charset.

`_BoundedBody` streams the body and counts *inflated* bytes against the cap: gzip/deflate
are decoded here, in steps that never produce more than the room left, so a compression
bomb costs at most `max_bytes` of memory. `decode_body` decodes without ever raising: BOM,
then the Content-Type charset, then a `<meta>` charset in the first 4 KB, else UTF-8
(labels as browsers read them).
"""

from __future__ import annotations

import codecs
import re
import zlib

_META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([a-zA-Z0-9_:.\-]+)""", re.I)
# Labels browsers decode as something else (WHATWG Encoding Standard).
_LABEL_ALIASES = {
    "iso-8859-1": "windows-1252", "iso8859-1": "windows-1252", "latin1": "windows-1252",
    "latin-1": "windows-1252", "l1": "windows-1252", "us-ascii": "windows-1252", "ascii": "windows-1252",
    "iso-8859-9": "windows-1254", "latin5": "windows-1254", "tis-620": "windows-874",
    "x-sjis": "shift_jis", "gb2312": "gbk", "x-gbk": "gbk",
}
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def _codec(label: str | bytes | None) -> str | None:
    """The Python codec name for a charset label, or None when unknown."""
    if not label:
        return None
    if isinstance(label, bytes):
        label = label.decode("ascii", "ignore")
    label = label.strip().strip("\"'").lower()
    label = _LABEL_ALIASES.get(label, label)
    try:
        return codecs.lookup(label).name
    except (LookupError, ValueError):
        return None


def _header_charset(content_type: str | None) -> str | None:
    if not content_type:
        return None
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip("\"'") or None
    return None


def detect_encoding(body: bytes, content_type: str | None) -> str:
    """The codec to decode `body` with: BOM, header charset, `<meta>` charset, else utf-8."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name
    codec = _codec(_header_charset(content_type))
    if codec:
        return codec
    m = _META_CHARSET.search(body[:4096])
    if m:
        codec = _codec(m.group(1))
        if codec and codec.startswith("utf-16"):
            codec = "utf-8"   # a page readable as ASCII to find the tag is not UTF-16
        if codec:
            return codec
    return "utf-8"


def decode_body(body: bytes, content_type: str | None) -> tuple[str, str]:
    """(text, codec used); never raises."""
    codec = detect_encoding(body, content_type)
    try:
        return body.decode(codec, errors="replace"), codec
    except (LookupError, UnicodeError, ValueError):
        return body.decode("utf-8", errors="replace"), "utf-8"


class _BoundedBody:
    """Decodes a body (identity, gzip, deflate) while counting the *decoded* bytes against
    `limit`: a chunk is never inflated past the room left plus one byte, so a compression
    bomb stops at `limit` with no more than that in memory."""

    def __init__(self, encoding: str, limit: int):
        codings = [c.strip().lower() for c in (encoding or "").split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise ValueError(f"unsupported Content-Encoding {encoding!r}")
        self.coding = codings[0] if codings else None
        self.limit = limit
        self.size = 0
        self.over = False
        self.parts: list[bytes] = []
        self._z = self._new() if self.coding else None
        self._deflate_first = self.coding == "deflate"

    def _new(self, raw_deflate: bool = False):
        if self.coding in ("gzip", "x-gzip"):
            return zlib.decompressobj(zlib.MAX_WBITS | 16)
        return zlib.decompressobj(-zlib.MAX_WBITS if raw_deflate else zlib.MAX_WBITS)

    def _keep(self, data: bytes) -> None:
        room = self.limit - self.size
        if len(data) > room:
            self.parts.append(data[:room])
            self.size = self.limit
            self.over = True
            return
        self.parts.append(data)
        self.size += len(data)

    def feed(self, raw: bytes) -> None:
        """Add raw bytes; sets `over` once the decoded body passes `limit`."""
        if self.over or not raw:
            return
        if self._z is None:
            self._keep(raw)
            return
        data = raw
        while data and not self.over:
            try:
                out = self._z.decompress(data, self.limit - self.size + 1)
            except zlib.error:
                if self._deflate_first:   # servers sending raw deflate under "deflate"
                    self._deflate_first = False
                    self._z = self._new(raw_deflate=True)
                    continue
                raise
            self._deflate_first = False
            self._keep(out)
            if self._z.eof:             # a gzip stream of several members
                data = self._z.unused_data
                if data:
                    self._z = self._new()
            else:
                data = self._z.unconsumed_tail

    def body(self) -> bytes:
        if self._z is not None and not self.over:
            try:
                self._keep(self._z.flush())
            except zlib.error:
                pass
        return b"".join(self.parts)
