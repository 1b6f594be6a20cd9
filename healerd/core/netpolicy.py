"""Where a page rendered for a source may send its requests (pure: no sockets, no DNS).

A scraped page's script is not trusted. Whatever it asks for (a navigation, fetch/XHR, a
subresource, a WebSocket), the browser fetch asks here first:
- the source's own origin (scheme, host and port, as for the HTTP fetcher's credentials) is
  always allowed: it is what the source was told to scrape;
- any other URL whose host resolves to an address that is not global is refused, unless
  `allow_private` is set: only what `ipaddress` calls global (IANA's special-purpose registries:
  not loopback, private, carrier-grade NAT 100.64.0.0/10, link-local such as the cloud metadata
  address 169.254.169.254, unique-local, documentation, benchmarking...) and is neither
  multicast nor site-local IPv6 (fec0::/10) passes. An IPv6 address carrying an IPv4 one is
  judged by that IPv4 address (IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16),
  so `64:ff9b::a00:1` is 10.0.0.1 through the NAT64 gateway; the local-use NAT64 prefix
  64:ff9b:1::/48 and the deprecated IPv4-compatible ::/96 are refused; an address that cannot be
  parsed is refused. The caller passes the addresses it resolved, so a name pointing at an
  internal address is refused like the address itself;
- schemes other than http(s) and ws(s) are refused (data: and blob: never reach the network
  and are not asked about).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from healerd.core.peers import normal_ip

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
# A WebSocket to the page's own host and port is the same origin for this purpose.
_SAME_AS = {"ws": "http", "wss": "https"}


def origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s)/ws(s) URL, ws mapped to http and wss to https; None otherwise."""
    try:
        parts = urlsplit(url)
        scheme = (parts.scheme or "").lower()
        host = (parts.hostname or "").lower()
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        return None
    if scheme not in DEFAULT_PORTS or not host or port is None:
        return None
    return _SAME_AS.get(scheme, scheme), host, port


def same_origin(first: str, other: str) -> bool:
    """True when `other` has `first`'s origin: the same scheme, host and port (default ports filled in)."""
    a = origin(first)
    return a is not None and a == origin(other)


def host_port(url: str) -> tuple[str, int] | None:
    """The host (brackets removed) and port a request to `url` connects to, or None."""
    o = origin(url)
    return None if o is None else (o[1], o[2])


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")            # RFC 6052: the IPv4 address is the last 32 bits
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")    # RFC 8215: a local-use translator, any mapping
_V4_COMPATIBLE = ipaddress.IPv6Network("::/96")           # deprecated IPv4-compatible addresses


def internal(address: str) -> bool:
    """True for an address a scraped page must not reach: whatever is not global (see the
    module's docstring; an IPv6 address carrying an IPv4 one judged by it), multicast,
    site-local, and anything that is not an address."""
    try:
        ip = normal_ip(address)
    except ValueError:
        return True   # not an address we can judge: refused
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _NAT64:
            return internal(str(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)))
        if ip.sixtofour is not None:
            return internal(str(ip.sixtofour))
        if ip in _NAT64_LOCAL or ip in _V4_COMPATIBLE or ip.is_site_local or ip.teredo is not None:
            return True
    return not ip.is_global or bool(ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_unspecified
                                    or ip.is_multicast or ip.is_reserved)


def refusal(url: str, source_url: str, addresses: list[str], allow_private: bool) -> str | None:
    """Why a page of `source_url` may not request `url` (one short phrase), or None when it may.

    `addresses` are what the URL's host resolved to (the host itself when it is an address)."""
    if same_origin(source_url, url):
        return None
    if origin(url) is None:
        return "not an http(s) or ws(s) URL"
    if allow_private:
        return None
    bad = [a for a in addresses if internal(a)]
    if bad:
        return f"an internal address ({bad[0]})"
    return None


def is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    return True
