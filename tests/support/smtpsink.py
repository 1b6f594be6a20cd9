"""A real SMTP server on 127.0.0.1 (aiosmtpd) that keeps every message it is sent, for the
`mailto://` notifications."""

from __future__ import annotations

import asyncio
import email
import socket
import threading
from email.message import Message


class SmtpSink:
    def __init__(self):
        from aiosmtpd.smtp import SMTP

        self.messages: list[Message] = []
        self.lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))   # bound here: no other process can take the port in between
        self.port = sock.getsockname()[1]
        sink = self

        class Handler:
            async def handle_DATA(self, server, session, envelope):
                with sink.lock:
                    sink.messages.append(email.message_from_bytes(envelope.original_content or envelope.content))
                return "250 OK"

        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        made = asyncio.run_coroutine_threadsafe(
            self.loop.create_server(lambda: SMTP(Handler(), hostname="sink.test"), sock=sock), self.loop)
        self.server = made.result(10)

    def received(self) -> list[Message]:
        with self.lock:
            return list(self.messages)

    def stop(self) -> None:
        async def close():
            self.server.close()
            await self.server.wait_closed()

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
