"""Ports for tests that need a connection refused, without racing other processes for them.

A port found free, released and used later may be taken by anyone in between. Here the socket
stays bound (but never listens) for as long as the test needs the port: connecting to it is
refused, and nobody else can take it.
"""

from __future__ import annotations

import socket


def refusing_socket() -> socket.socket:
    """Bound to 127.0.0.1 at a port the system picks, not listening: close it when done."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    return s


def hold_port(port: int, host: str = "127.0.0.1") -> socket.socket:
    """Bind `port` again at once after its server closed (not listening: connections are refused);
    `listen()` on it brings the address back, with no moment where another process could take it."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    return s
