"""The error classes a failed scrape is sorted into, and the base of healerd's exceptions.

Every exception healerd raises on purpose derives from `HealerdError` (most also from the
builtin they always were: a missing source is still a KeyError, a bad blueprint a
ValueError). `Refusal` marks the expected ones: a request the daemon turns down (a source
that exists, a transition its state forbids, an unknown version, a bad fix-memory call);
the StoreWriter answers them with one line and logs no traceback.
"""


class HealerdError(Exception):
    """The base of every exception healerd raises on purpose."""


class Refusal(HealerdError):
    """An expected refusal of a request: reported in one line, never logged as a crash."""


class CodedError(HealerdError):
    """An error a client is answered with in the uniform shape: a code, a message, details."""

    def __init__(self, code: str, message: str, details: dict | None = None):
        self.code = code
        self.message = message
        self.details = dict(details or {})
        super().__init__(message)

    def error_body(self) -> dict:
        return {"code": self.code, "message": self.message, "details": self.details}


HTTP_ERROR = "HTTP_ERROR"          # 4xx/5xx, redirect loop
PARSE_ERROR = "PARSE_ERROR"        # selectors match nothing / required fields null
SCHEMA_MISMATCH = "SCHEMA_MISMATCH"  # data shape changed: types, item count, value shape
TIMEOUT = "TIMEOUT"                # the page was too slow
RATE_LIMIT = "RATE_LIMIT"          # 429 (Retry-After honoured)
NETWORK = "NETWORK"                # DNS failure, connection refused/reset: never a reason to heal
BLOCKED = "BLOCKED"                # bot challenge or login wall: never a reason to heal
TOO_LARGE = "TOO_LARGE"            # over [fetch] max_bytes (inflated) or a work bound (items, elements, nesting): never healed
NOT_HTML = "NOT_HTML"              # a binary answer (PDF, image, archive...): never healed

ALL = (HTTP_ERROR, PARSE_ERROR, SCHEMA_MISMATCH, TIMEOUT, RATE_LIMIT, NETWORK, BLOCKED, TOO_LARGE, NOT_HTML)
HEALABLE_BY_SELECTORS = (PARSE_ERROR, SCHEMA_MISMATCH)
NEVER_HEAL = (NETWORK, BLOCKED, TIMEOUT, RATE_LIMIT, TOO_LARGE, NOT_HTML)
PAGE_PROBLEMS = (TOO_LARGE, NOT_HTML)   # about what one URL serves, never about our side: no systemic halt
