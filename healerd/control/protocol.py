"""The control-socket protocol between `healerctl` and the daemon.

Framing: each message is a 4-byte big-endian unsigned length followed by that many
bytes of UTF-8 JSON (an object). One request and one response per connection; the
client then closes.

Request:  {"op": "<name>", "args": {...}}
Response: {"ok": true, "result": <any JSON>}
      or  {"ok": false, "error": {"code": "...", "message": "...", "details": {...}}}

Error codes: bad_request, too_large, timeout, forbidden, busy, not_found, exists,
invalid_blueprint, illegal_transition, unavailable, internal_error.

Ops (args -> result):
  ping {} -> {"version", "pid", "started_at"}
  status {"name"?} -> without name {"sources": [status-object, ...], "summary": {"sources",
      "by_state", "fix_success_rate", "median_recovery_s", "systemic_halt", "halt_reason"}};
      with name one status-object plus "events" (newest first), "deferred_report",
      "metrics" {"fix_attempts", "fix_success_rate", "median_recovery_s"}, "blueprint",
      "last_error_type", "flagged_for_review".
      With {"table": true} (what healerctl sends) the sources come as {"columns": [key, ...],
      "rows": [[value, ...], ...]} instead of "sources": the same objects, less than half the bytes.
      A status-object has the keys of `healerctl status --json` (docs/REFERENCE.md).
  add {"name", "blueprint", "url"?, "wait"?} -> status-object, with the first scrape's outcome under "scrape"
      (as `run` gives it) unless "wait" is false
  remove {"name"} -> {"removed": name}
  pause / resume {"name"} -> status-object
  run {"name", "wait"} -> {"queued": true} | {"name", "ok", "error_type", "error",
      "item_count", "records", "state", "version", "not_modified", "duration_ms"}
  heal {"name"} -> {"name", "outcome", "strategy", "reason", "version", "state"}
  unquarantine {"name", "reason"?} -> status-object
  history {"name"} -> the `healerctl history --json` list (docs/REFERENCE.md); promoted fixes add
      "production" (null on probation, "passed", "false_positive", "site_changed") and "false_positive"; rollbacks
      (a person's or automatic) and merges are version entries with "event" ("rollback" | "merge") and "note"
  diff {"name"} -> {"diff", "last_good_at", "current_at"}
  rollback {"name", "to"?, "force"?} -> {"version", "previous", "checked", "check", "forced"}; a version
      that fails the live page is refused ("refused") unless "force"
  approve {"name", "version"} -> {"version"}
  records {"name", "limit"} -> the `healerctl records --json` list (docs/REFERENCE.md)
  alerts {"after_id"?, "limit"?} -> alert objects (the alert log's keys plus "id"), oldest first
  reload {} -> {"added", "changed", "removed"}
  resume_healing {} -> {"systemic_halt": false}
  memory_list {} -> list of issue summaries; memory_show {"id"} -> one issue;
  memory_forget {"id"} -> {"forgotten": id}; memory_stats {} -> the memory's usage statistics
  stats {"window_s"?} -> the fleet's success metrics (healerd.core.stats.compute)
  diff also carries "fix_at" when the source is not failing and the diff is its last fix attempt's
"""

from __future__ import annotations

import gc
import json
import socket
import struct
import time

from healerd.core.errors import CodedError

# typing only for the type checker: importing it costs healerctl's light path ~10 ms of CPU
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

HEADER = struct.Struct(">I")
MAX_REQUEST = 1_048_576          # what the server accepts
MAX_RESPONSE = 256 * 1_048_576   # what the client accepts
GC_PAUSE_BYTES = 65_536         # payloads larger than this are decoded with the cyclic GC paused

ERROR_CODES = (
    "bad_request",
    "too_large",
    "timeout",
    "forbidden",
    "busy",
    "not_found",
    "exists",
    "invalid_blueprint",
    "illegal_transition",
    "unavailable",
    "internal_error",
)


class ControlError(CodedError):
    """An error answered over the control socket (the uniform error shape)."""

    def to_dict(self) -> dict[str, Any]:
        return self.error_body()

    @classmethod
    def from_dict(cls, err: Any) -> ControlError:
        if not isinstance(err, dict):
            return cls("internal_error", f"malformed error from the daemon: {err!r}")
        details = err.get("details")
        return cls(
            str(err.get("code") or "internal_error"),
            str(err.get("message") or "unknown error"),
            details if isinstance(details, dict) else {},
        )


def ok(result: Any) -> dict[str, Any]:
    return {"ok": True, "result": result}


def error(code: str, message: str, details: dict | None = None) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message, "details": dict(details or {})}}


class RawJSON:
    """Text that is already JSON (e.g. built by SQLite's json functions), spliced into a frame unchanged.

    Saves encoding large results twice: `status` of 10,000 sources is built by SQLite."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


def _take_raw(obj: Any, found: list[str]) -> Any:
    if isinstance(obj, RawJSON):
        found.append(obj.text)
        return f"\x00raw{len(found) - 1}\x00"
    if isinstance(obj, dict):
        return {k: _take_raw(v, found) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_take_raw(v, found) for v in obj]
    return obj


def dumps(obj: Any) -> str:
    """Compact JSON, with RawJSON values spliced in as they are."""
    raws: list[str] = []
    obj = _take_raw(obj, raws)
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for i, raw in enumerate(raws):
        text = text.replace(f'"\\u0000raw{i}\\u0000"', raw, 1)
    return text


def encode(obj: Any) -> bytes:
    """One frame: length header plus compact UTF-8 JSON."""
    payload = dumps(obj).encode("utf-8")
    return HEADER.pack(len(payload)) + payload


def decode(payload: bytes) -> dict[str, Any]:
    """The JSON object in a frame's payload; ControlError(bad_request) otherwise."""
    # Decoding a large answer (status of 10,000 sources) allocates ~100k containers, which sets
    # off full cyclic-GC passes over all of them: a third of the decode time at the tail. JSON
    # cannot build cycles, so the collector is paused while a large payload is decoded.
    pause = len(payload) > GC_PAUSE_BYTES and gc.isenabled()
    if pause:
        gc.disable()
    try:
        obj = json.loads(payload.decode("utf-8"))
    except UnicodeDecodeError:
        raise ControlError("bad_request", "the message is not UTF-8") from None
    except ValueError as exc:
        raise ControlError("bad_request", f"the message is not JSON ({exc.msg})") from None
    except RecursionError:   # e.g. 200,000 nested `[`: an answer, not a dropped connection
        raise ControlError("bad_request", "the message nests arrays or objects too deeply") from None
    finally:
        if pause:
            gc.enable()
    if not isinstance(obj, dict):
        raise ControlError("bad_request", "the message must be a JSON object")
    return obj


def parse_request(obj: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(op, args) of a decoded request; ControlError(bad_request) when malformed."""
    op = obj.get("op")
    if not isinstance(op, str) or not op:
        raise ControlError("bad_request", 'the request needs "op": a non-empty string')
    args = obj.get("args", {})
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ControlError("bad_request", '"args" must be a JSON object')
    return op, args


def frame_length(header: bytes, max_size: int) -> int:
    """The payload length announced by a 4-byte header, checked against `max_size`."""
    (length,) = HEADER.unpack(header)
    if length > max_size:
        raise ControlError(
            "too_large",
            f"the message is {length} bytes; the limit is {max_size}",
            {"length": length, "limit": max_size},
        )
    if length == 0:
        raise ControlError("bad_request", "empty message")
    return length


class FrameReader:
    """Incremental frame parser for non-blocking reads: feed bytes, get the payload when complete."""

    def __init__(self, max_size: int = MAX_REQUEST):
        self.max_size = max_size
        self._buf = bytearray()
        self._length: int | None = None

    def feed(self, data: bytes) -> bytes | None:
        """Add received bytes; the payload once complete, else None. Raises ControlError."""
        self._buf += data
        if self._length is None and len(self._buf) >= HEADER.size:
            self._length = frame_length(bytes(self._buf[: HEADER.size]), self.max_size)
        if self._length is not None and len(self._buf) >= HEADER.size + self._length:
            if len(self._buf) > HEADER.size + self._length:
                raise ControlError("bad_request", "bytes after the end of the message")
            return bytes(self._buf[HEADER.size :])
        return None


def _recv_exact(sock: socket.socket, n: int, deadline: float) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("timed out reading a message")
        sock.settimeout(remaining)
        chunk = sock.recv(min(n - len(chunks), 1 << 20))
        if not chunk:
            raise EOFError("the connection closed before a whole message arrived")
        chunks += chunk
    return bytes(chunks)


def read_frame(sock: socket.socket, max_size: int, deadline: float) -> dict[str, Any]:
    """Read one frame from a blocking socket before `deadline` (time.monotonic()).

    Raises TimeoutError, EOFError, or ControlError (too_large / bad_request); never
    reads more than `max_size` payload bytes.
    """
    length = frame_length(_recv_exact(sock, HEADER.size, deadline), max_size)
    return decode(_recv_exact(sock, length, deadline))


def send_frame(sock: socket.socket, obj: Any, timeout: float) -> None:
    """Send one frame on a blocking socket, giving up after `timeout` seconds of no progress."""
    sock.settimeout(timeout)
    sock.sendall(encode(obj))
