"""The error classes a failed scrape is sorted into (Doctor spec + NETWORK and BLOCKED)."""

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
