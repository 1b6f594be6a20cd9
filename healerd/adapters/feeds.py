"""Where a feed delivers stored scrapes: a webhook (one POST per scrape) or JSON Lines files.

A sink's `deliver(batch)` takes (source, JSON text) pairs in order and answers how many of
them, from the first, are delivered for good, and the error that stopped it (None: all of
them). The caller (healerd.actors.feeds) advances the feed's cursor by that many only.

- Webhook: each scrape is POSTed by `Fetcher.post`, under the bounds of every fetch (one total
  deadline every socket operation obeys, a cap on the answer read, the process's verifying TLS
  context); redirects are never followed, so the feed's headers (credentials) reach the URL's
  origin only. Delivered means a 2xx answer.
- JSON Lines: one line per scrape appended to the file (`{source}` in the path: one file per
  source), created 0600 by the daemon (`healerd.adapters.safe_files.open_for_append`: never
  through a symlink, never into a directory another user could shape, never another user's
  file or a FIFO; a refusal is the feed's error, one line naming the path and its owner),
  rotated before it would pass `max_bytes`
  (`path.1` … `path.N`). Delivered means written, flushed and fsynced; a batch that cannot be
  written whole (a full disk) is cut back to where it started, so a retry never follows a
  half line.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable

from healerd.adapters.fetch import FetchConfig, Fetcher, FetchError
from healerd.adapters.safe_files import open_for_append
from healerd.config import FeedSection
from healerd.core.sanitize import mask_text, mask_url, reveal
from healerd.private import UnsafePath

ANSWER_LIMIT = 65_536      # bytes of a webhook's answer read at most
OPEN_FILES = 128           # JSON Lines files kept open at once (one per source with "{source}")

Batch = list[tuple[str, str]]


class WebhookSink:
    def __init__(self, feed: FeedSection, fetch: FetchConfig):
        self.url = reveal(feed.url)
        self.shown = mask_url(self.url)
        self.headers = {k: reveal(v) for k, v in feed.headers.items()}
        self._secrets = [v for v in self.headers.values() if v]
        cfg = FetchConfig(timeout=feed.timeout, connect_timeout=min(feed.timeout, fetch.connect_timeout),
                          max_bytes=ANSWER_LIMIT, user_agent=fetch.user_agent, max_redirects=0)
        self.fetcher = Fetcher(cfg)

    def deliver(self, batch: Batch, stopping: Callable[[], bool] = lambda: False) -> tuple[int, str | None]:
        for i, (_source, text) in enumerate(batch):
            if stopping():   # the daemon stopped (or died): no more POSTs from this process
                return i, "stopped"
            try:
                status, answer = self.fetcher.post(self.url, text.encode("utf-8"), headers=self.headers,
                                                   limit=ANSWER_LIMIT)
            except FetchError as exc:
                return i, mask_text(" ".join(exc.message.split()), self._secrets)
            if not 200 <= status < 300:
                snippet = " ".join(answer[:120].decode("utf-8", "replace").split())
                said = f": {snippet}" if snippet else ""
                return i, mask_text(f"HTTP {status} from {self.shown}{said}", self._secrets)
        return len(batch), None

    def close(self) -> None:
        self.fetcher.close()


def _file_name(source: str) -> str:
    """A source name as a path part: names are letters, digits, '-', '_' and '.', never '.' or '..' here."""
    return "_" if source in (".", "..") else source


class JsonlSink:
    def __init__(self, feed: FeedSection):
        self.template = feed.path
        self.max_bytes = feed.max_bytes
        self.keep = feed.keep
        self.per_source = "{source}" in feed.path
        self._open: OrderedDict[str, int] = OrderedDict()   # path -> fd, least recently used first

    def path_for(self, source: str) -> str:
        return self.template.format(source=_file_name(source)) if self.per_source else self.template

    def _fd(self, path: str) -> int:
        fd = self._open.get(path)
        if fd is not None:
            self._open.move_to_end(path)
            return fd
        fd = open_for_append(path)
        self._open[path] = fd
        while len(self._open) > OPEN_FILES:
            _, old = self._open.popitem(last=False)
            os.close(old)
        return fd

    def _close(self, path: str) -> None:
        fd = self._open.pop(path, None)
        if fd is not None:
            os.close(fd)

    def _rotate(self, path: str) -> None:
        """path -> path.1 -> … -> path.keep (the oldest dropped); a new file is started on next write."""
        self._close(path)
        if self.keep < 1:
            os.unlink(path)
        else:
            for i in range(self.keep - 1, 0, -1):
                if os.path.exists(f"{path}.{i}"):
                    os.replace(f"{path}.{i}", f"{path}.{i + 1}")
            os.replace(path, f"{path}.1")
        dfd = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    def deliver(self, batch: Batch, stopping: Callable[[], bool] = lambda: False) -> tuple[int, str | None]:
        started: dict[str, int] = {}     # path -> its size before this batch (to cut a failed batch back)
        path = ""
        try:
            for source, text in batch:
                path = self.path_for(source)
                line = (text + "\n").encode("utf-8")
                fd = self._fd(path)
                size = os.fstat(fd).st_size
                if size and size + len(line) > self.max_bytes:
                    os.fsync(fd)
                    self._rotate(path)
                    started[path] = 0
                    fd = self._fd(path)
                    size = 0
                started.setdefault(path, size)
                view = memoryview(line)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
            for p in started:
                os.fsync(self._fd(p))
        except (OSError, UnsafePath) as exc:
            for p, size in started.items():
                try:
                    os.ftruncate(self._fd(p), size)
                except (OSError, UnsafePath):
                    self._close(p)
            if isinstance(exc, UnsafePath):   # a path another user could shape: one line naming it and whose
                return 0, str(exc)
            what = exc.strerror or str(exc)
            return 0, f"cannot write {path}: {what}"
        return len(batch), None

    def close(self) -> None:
        for path in list(self._open):
            self._close(path)


def make_sink(feed: FeedSection, fetch: FetchConfig) -> WebhookSink | JsonlSink:
    return WebhookSink(feed, fetch) if feed.kind == "webhook" else JsonlSink(feed)
