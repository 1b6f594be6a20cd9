"""The blueprint files of the sources directory, read off the caller's thread, each under a deadline.

A reload used to read every file whole on the main loop: a FIFO there blocked the reload (and,
at start, readiness) forever, a 1 GB file was read into memory. Here one reader thread goes
through the files in order with `safe_files.read_capped` (lstat first, regular files only, at
most `limit` bytes) and hands the results over in batches; the caller waits at most `deadline` seconds
for any one file. A file not read by then (a stalled network mount) is reported as such and
left to its thread, and a new reader goes on from the next file: one bad file never holds up
the others.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from healerd.adapters.safe_files import Refused, read_capped
from healerd.core.blueprint import Blueprint, BlueprintError, parse_file_bytes

# (file name, path, bytes) -> (the blueprint's JSON, the Blueprint or None): a cache's parse
Parse = Callable[[str, str, bytes], tuple[str, "Blueprint | None"]]

READ_DEADLINE_S = 5.0     # the longest one file may take to read
AHEAD = 64                # files read ahead of the caller at most (their bytes held meanwhile)


@dataclass(frozen=True)
class Read:
    """One file: its bytes, or `error` (one line, no contents); `owner_trusted`: the file is
    root's or the daemon's user's, so an error about its contents may quote them."""
    name: str
    data: bytes | None
    error: str | None
    owner_trusted: bool


def _read_one(folder: str, name: str, limit: int) -> Read:
    path = os.path.join(folder, name)
    try:
        data, trusted = read_capped(path, limit)
    except Refused as exc:
        return Read(name, None, str(exc), exc.owner_trusted)
    except OSError as exc:
        return Read(name, None, f"cannot read {path}: {exc.strerror or exc}", False)
    return Read(name, data, None, trusted)


class _Reader(threading.Thread):
    """Reads names[start:] in order into `ready` (at most AHEAD waiting), under `cond`."""

    def __init__(self, folder: str, names: list[str], start: int, limit: int):
        super().__init__(name="healerd-sources-reader", daemon=True)
        self.folder, self.names, self.index, self.limit = folder, names, start, limit
        self.cond = threading.Condition()
        self.ready: list[Read] = []
        self.abandoned = False

    def run(self) -> None:
        while True:
            with self.cond:
                self.cond.wait_for(lambda: self.abandoned or len(self.ready) < AHEAD)
                if self.abandoned or self.index >= len(self.names):
                    return
                name = self.names[self.index]
            read = _read_one(self.folder, name, self.limit)
            with self.cond:
                if self.abandoned:
                    return
                self.ready.append(read)
                self.index += 1
                self.cond.notify_all()

    def take(self, deadline: float) -> list[Read]:
        """What was read since the last take, waiting up to `deadline` for one file; [] when none came."""
        with self.cond:
            self.cond.wait_for(lambda: self.ready, timeout=deadline)
            batch, self.ready = self.ready, []
            self.cond.notify_all()
            return batch

    def abandon(self) -> int:
        """Stop this reader; the index of the file it is stuck on."""
        with self.cond:
            self.abandoned = True
            self.cond.notify_all()
            return self.index


def read_files(folder: str, names: list[str], limit: int, deadline: float = READ_DEADLINE_S) -> Iterator[Read]:
    """A Read per name of `names` (files of `folder`), in order."""
    done = 0
    reader = _Reader(folder, names, 0, limit)
    reader.start()
    try:
        while done < len(names):
            batch = reader.take(deadline)
            if not batch:
                # The reader is stuck on one file: given up, and a new one starts after it.
                stuck = reader.abandon()
                path = os.path.join(folder, names[stuck])
                batch = [Read(names[stuck], None, f"refusing the blueprint file {path}: not read within "
                                                  f"{deadline:g}s (skipped)", False)]
                reader = _Reader(folder, names, stuck + 1, limit)
                reader.start()
            for read in batch:
                yield read
                done += 1
    finally:
        reader.abandon()


def _parse_text(raw: bytes, path: str) -> tuple[str, Blueprint | None]:
    """The plain parse: the blueprint's JSON and the blueprint (`blueprint_json_of`'s default)."""
    bp = parse_file_bytes(raw, path, require_url=True)
    return bp.to_json(), bp


def blueprint_json_of(read: Read, folder: str, parse: Parse | None = None) -> tuple[str, Blueprint | None]:
    """The source's blueprint from its Read, as `parse` gives it (its JSON, and the Blueprint when
    the bytes were parsed: a cache of parsed files may answer with the JSON alone); BlueprintError
    with one line otherwise. The error quotes the file (a key name, a value) only when root or the
    daemon's user owns it: a file of anyone else's may be something they could not read themselves."""
    path = os.path.join(folder, read.name)
    if read.error is not None or read.data is None:
        raise BlueprintError("", read.error or f"cannot read {path}")
    try:
        if parse is None:
            return _parse_text(read.data, path)
        return parse(read.name, path, read.data)
    except BlueprintError:
        if read.owner_trusted:
            raise
        raise BlueprintError("", f"{path} is not a valid blueprint (details withheld: the file is not "
                                 f"root's or healerd's own)") from None

