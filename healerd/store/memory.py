"""healerd's local fix memory: a site change seen once heals everywhere.

A site usually changes one template behind many pages, so ten sources on one shop
break together. When one of them is healed and the fix promoted, the fix is
stored here as an issue with a *fix bundle*: which selectors changed to what
(kind "selectors"), or the promoted code parser that replaced the old one (kind
"parser", from a healer that rewrote parser.py).
The Doctor searches the memory first: a bundle that fits a sibling source's
blueprint is applied, validated on that source's live page, and confirmed — or
reported as failed, which lowers its confidence and keeps it from being offered
to that source again.

Tables: memory_issues, memory_confirmations, memory_usage (schema.sql). Every
public method that writes does so in one transaction (`with conn:`). Errors
raise FixMemoryError, whose `to_dict()` is a uniform error shape ({code, message, details}).

Confidence is the mean of a Beta(2, 2) prior updated by outcomes:
(successes + 2) / (successes + failures + 4), where successes is
verification_count (the promotion that created the issue counts as one). A new
issue starts at 0.6; each success raises it, each failure lowers it. An issue
whose confidence falls below INVALID_BELOW is marked "invalid" and no longer
offered.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import apsw

from healerd.core.errors import CodedError, Refusal
from healerd.core.sanitize import find_secrets, mask_mapping, mask_text
from healerd.core.timeutil import iso
from healerd.store.sql import row, rows, scalar

EVENT_TYPES = ("search", "fix_retrieved", "fix_applied", "fix_confirmed", "issue_submitted")
# Bundle keys that are the fix itself: stored as given (masking would break them), and
# refused whole when they still look like they carry a secret; so is a parser bundle's `parser`.
FUNCTIONAL_KEYS = ("kind", "items", "fields")
PRIOR_SUCCESS = 2.0
PRIOR_FAILURE = 2.0
INVALID_BELOW = 0.25
MAX_TEXT = 1000
DAY = 86400.0

# Relevance weights (sum 1.0): host and broken-selector overlap are what matter.
W_HOST = 0.35
W_SELECTORS = 0.35
W_DIFF = 0.15
W_TEMPLATE = 0.10
W_ERROR = 0.05


class FixMemoryError(Refusal, CodedError):
    """A fix-memory request that cannot be served; `to_dict()` is the uniform error shape."""

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.error_body()}


@dataclass
class MemoryMatch:
    issue_id: str
    canonical_title: str
    relevance_score: float
    confidence_score: float
    verification_count: int
    fix_bundle: dict


def issue_fingerprint(error_type: str, host: str, diff_sig: str, broken_selectors: Iterable[str]) -> str:
    """A stable id of "this kind of break on this host": error type, host, diff signature, selectors."""
    material = json.dumps([str(error_type or ""), str(host or "").lower(), str(diff_sig or ""),
                           sorted({str(s).strip() for s in broken_selectors or () if str(s).strip()})],
                          separators=(",", ":"))
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:32]


def confidence(successes: int, failures: int) -> float:
    """The Beta(2, 2) posterior mean, rounded to 4 places."""
    return round((successes + PRIOR_SUCCESS) / (successes + failures + PRIOR_SUCCESS + PRIOR_FAILURE), 4)


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def _loads(text: str | None, default: Any) -> Any:
    if not text:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


def _need_str(value: Any, key: str, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise FixMemoryError("validation_error", f"{key}: expected a non-empty string", {"key": key})
    return value.strip()


def _need_selectors(value: Any, key: str = "broken_selectors") -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not all(isinstance(s, str) for s in value):
        raise FixMemoryError("validation_error", f"{key}: expected a list of CSS selector strings", {"key": key})
    return sorted({s.strip() for s in value if s.strip()})


class FixMemory:
    """The fix memory on one apsw connection (the caller picks the connection and its thread)."""

    def __init__(self, conn: apsw.Connection, clock: Callable[[], float] = time.time):
        self.conn = conn
        self.clock = clock

    # -- reading helpers ------------------------------------------------------------------
    def _issue(self, issue_id: Any) -> dict:
        if not isinstance(issue_id, str) or not issue_id.strip():
            raise FixMemoryError("validation_error", "issue_id: expected a non-empty string", {"key": "issue_id"})
        wanted = issue_id.strip()
        found = row(self.conn, "SELECT * FROM memory_issues WHERE issue_id = ?", (wanted,))
        if found is None and len(wanted) >= 4:
            # A unique prefix is enough (ids are 36 characters; `healerctl memory` shows the start).
            like = wanted.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            matches = rows(self.conn, "SELECT * FROM memory_issues WHERE issue_id LIKE ? ESCAPE '\\' LIMIT 2",
                           (like,))
            if len(matches) > 1:
                raise FixMemoryError("validation_error", f"{wanted!r} is the start of more than one issue id: give more "
                                                       f"of it (`healerctl memory` lists them)", {"issue_id": wanted})
            found = matches[0] if matches else None
        if found is None:
            raise FixMemoryError("not_found", f"no issue {issue_id!r} in the fix memory", {"issue_id": issue_id})
        return found

    def _usage(self, event_type: str, issue_id: str | None, source_name: str | None,
               success: bool | None, at: float) -> None:
        self.conn.execute(
            "INSERT INTO memory_usage (event_type, issue_id, source_name, success, at) VALUES (?, ?, ?, ?, ?)",
            (event_type, issue_id, source_name, None if success is None else int(bool(success)), at))

    # -- search ---------------------------------------------------------------------------
    def search(self, *, error_type: str, host: str, broken_selectors: list[str], diff_sig: str,
               template_sig: str = "", source_name: str, limit: int = 5) -> list[MemoryMatch]:
        """Known fixes for this break, most relevant first (then most trusted).

        A candidate shares the host or the page template, and its broken selectors
        overlap this break's or its diff signature is the same. Issues that are not
        "active" and issues whose bundle failed on `source_name` before are never
        returned. Records one "search" usage event without an issue (the search) and
        one per issue returned.
        """
        error_type = _need_str(error_type, "error_type")
        host = str(host or "").strip().lower()
        source_name = _need_str(source_name, "source_name")
        wanted = set(_need_selectors(broken_selectors))
        diff_sig = str(diff_sig or "")
        template_sig = str(template_sig or "")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise FixMemoryError("validation_error", "limit: expected a whole number >= 1", {"key": "limit"})
        now = self.clock()
        with self.conn:
            candidates = rows(
                self.conn,
                "SELECT * FROM memory_issues WHERE status = 'active' "
                "AND (host = ? OR (? != '' AND template_sig = ?)) "
                "AND issue_id NOT IN (SELECT issue_id FROM memory_confirmations "
                "                     WHERE source_name = ? AND success = 0)",
                (host, template_sig, template_sig, source_name))
            scored: list[tuple[float, dict, dict]] = []
            for c in candidates:
                bundle = _loads(c["fix_bundle"], {})
                overlap = _overlap(wanted, set(_loads(c["broken_selectors"], [])), bundle)
                same_diff = bool(diff_sig) and c["diff_sig"] == diff_sig
                if overlap == 0.0 and not same_diff:
                    continue
                score = (W_HOST * (c["host"] == host) + W_SELECTORS * overlap + W_DIFF * same_diff
                         + W_TEMPLATE * (bool(template_sig) and c["template_sig"] == template_sig)
                         + W_ERROR * (c["error_type"] == error_type))
                scored.append((round(min(1.0, score), 4), c, bundle))
            scored.sort(key=lambda t: (-t[0], -t[1]["confidence_score"], -t[1]["verification_count"],
                                       t[1]["issue_id"]))
            out = [MemoryMatch(issue_id=c["issue_id"], canonical_title=c["canonical_title"], relevance_score=s,
                               confidence_score=c["confidence_score"], verification_count=c["verification_count"],
                               fix_bundle=bundle) for s, c, bundle in scored[:limit]]
            self._usage("search", None, source_name, None, now)
            for m in out:
                self._usage("search", m.issue_id, source_name, None, now)
        return out

    # -- get ------------------------------------------------------------------------------
    def get_fix_bundle(self, issue_id: str, source_name: str | None = None) -> dict:
        """The issue's fix bundle with its issue id and confidence; records "fix_retrieved"."""
        with self.conn:
            c = self._issue(issue_id)
            self._usage("fix_retrieved", c["issue_id"], source_name, None, self.clock())
        return {
            "issue_id": c["issue_id"],
            "canonical_title": c["canonical_title"],
            "root_cause": c["root_cause_category"],
            "fix_bundle": _loads(c["fix_bundle"], {}),
            "confidence_score": c["confidence_score"],
            "verification_count": c["verification_count"],
        }

    # -- submit ---------------------------------------------------------------------------
    def submit(self, *, error_type: str, host: str, diff_sig: str, template_sig: str, broken_selectors: list[str],
               fix_bundle: dict, source_name: str, title: str, root_cause: str, environment: dict | None = None,
               extra_secrets: Iterable[str] = ()) -> dict:
        """Store a fix that was promoted (the caller guarantees it); merge with a known issue.

        Texts are sanitized first. The bundle's selectors and a parser bundle's code
        cannot be masked without breaking them, so a bundle that still carries anything
        secret-looking is refused: {"status": "rejected", "reason": "sanitization_failed",
        ...}, nothing stored. The same fingerprint with the same bundle merges (the source joins
        affected_sources, verification_count + 1, confidence up); the same fingerprint
        with a different bundle is another validated fix for the change and becomes
        its own issue.
        """
        error_type = _need_str(error_type, "error_type")
        host = _need_str(host, "host").lower()
        source_name = _need_str(source_name, "source_name")
        title = _need_str(title, "title")
        root_cause = _need_str(root_cause, "root_cause", allow_empty=True)
        broken = _need_selectors(broken_selectors)
        if not isinstance(fix_bundle, dict) or not fix_bundle:
            raise FixMemoryError("validation_error", "fix_bundle: expected a non-empty object", {"key": "fix_bundle"})
        if environment is not None and not isinstance(environment, dict):
            raise FixMemoryError("validation_error", "environment: expected an object", {"key": "environment"})
        extra = [s for s in extra_secrets or () if isinstance(s, str)]
        parser = fix_bundle.get("parser") if fix_bundle.get("kind") == "parser" else None
        if fix_bundle.get("kind") == "parser" and (not isinstance(parser, str) or "def parse" not in parser):
            raise FixMemoryError("validation_error", "fix_bundle.parser: expected Python source defining parse(html)",
                               {"key": "fix_bundle.parser"})

        keep = FUNCTIONAL_KEYS + (("parser",) if parser is not None else ())
        functional = {k: v for k, v in fix_bundle.items() if k in keep}
        rest = mask_mapping({k: v for k, v in fix_bundle.items() if k not in functional}, extra)
        bundle = {**functional, **rest}
        try:
            bundle_text = _canonical(bundle)
        except (TypeError, ValueError) as exc:
            raise FixMemoryError("validation_error", f"fix_bundle: not JSON-serialisable ({exc})",
                               {"key": "fix_bundle"}) from None
        kinds = find_secrets(bundle_text, extra) + [f"selector:{k}" for k in find_secrets(" ".join(broken), extra)]
        if parser is not None:
            # Also the code as written: JSON escapes its quotes and newlines, which hides
            # `password = "..."` from the assignment rules.
            kinds += [f"parser:{k}" for k in find_secrets(parser, extra)]
        if kinds:
            return {"status": "rejected", "reason": "sanitization_failed",
                    "details": f"Detected {len(kinds)} potential secret kind(s) in the fix bundle "
                               f"({', '.join(sorted(set(kinds)))}); the fix was not stored. Remove sensitive "
                               "data and resubmit."}
        clean_title = mask_text(title, extra)[:200]
        clean_cause = mask_text(root_cause, extra)[:MAX_TEXT]
        clean_env = mask_mapping(environment or {}, extra)
        fp = issue_fingerprint(error_type, host, diff_sig, broken)
        now = self.clock()
        with self.conn:
            same_fp = rows(self.conn, "SELECT * FROM memory_issues WHERE fingerprint = ? OR fingerprint LIKE ?",
                           (fp, fp + "/%"))
            existing = next((c for c in same_fp if _canonical(_loads(c["fix_bundle"], {})) == bundle_text), None)
            if existing is not None:
                issue_id = existing["issue_id"]
                sources = _add_source(_loads(existing["affected_sources"], []), source_name)
                verified = existing["verification_count"] + 1
                conf = confidence(verified, existing["failure_count"])
                self.conn.execute(
                    "UPDATE memory_issues SET verification_count = ?, confidence_score = ?, affected_sources = ?, "
                    "status = 'active', last_confirmed_at = ?, updated_at = ? WHERE issue_id = ?",
                    (verified, conf, json.dumps(sources), now, now, issue_id))
                self.conn.execute("INSERT INTO memory_confirmations (issue_id, source_name, success, notes, at) "
                                  "VALUES (?, ?, 1, ?, ?)", (issue_id, source_name, "submitted again", now))
                merged = True
                message = "Issue submitted and merged with the known issue"
            else:
                issue_id = str(uuid.uuid4())
                stored_fp = fp if not same_fp else f"{fp}/{hashlib.sha256(bundle_text.encode()).hexdigest()[:12]}"
                conf = confidence(1, 0)
                verified = 1
                self.conn.execute(
                    "INSERT INTO memory_issues (issue_id, fingerprint, canonical_title, root_cause_category, "
                    "error_type, host, template_sig, diff_sig, broken_selectors, fix_bundle, environment, "
                    "confidence_score, verification_count, failure_count, affected_sources, status, "
                    "last_confirmed_at, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0, ?, 'active', ?, ?, ?)",
                    (issue_id, stored_fp, clean_title, clean_cause, error_type, host, str(template_sig or ""),
                     str(diff_sig or ""), json.dumps(broken), bundle_text, _canonical(clean_env), conf,
                     json.dumps([source_name]), now, now, now))
                merged = False
                message = "Issue submitted and stored as a new known issue"
            self._usage("issue_submitted", issue_id, source_name, None, now)
        return {"status": "created", "issue_id": issue_id, "merged": merged, "message": message,
                "confidence_score": conf, "verification_count": verified}

    # -- confirm --------------------------------------------------------------------------
    def confirm(self, issue_id: str, source_name: str, success: bool, notes: str = "") -> dict:
        """Record how a reuse went: success raises confidence, failure lowers it.

        A success adds the source to affected_sources and sets last_confirmed_at; a
        failure keeps the bundle from being offered to that source again.
        """
        source_name = _need_str(source_name, "source_name")
        if not isinstance(success, bool):
            raise FixMemoryError("validation_error", "success: expected true or false", {"key": "success"})
        now = self.clock()
        with self.conn:
            c = self._issue(issue_id)
            verified = c["verification_count"] + (1 if success else 0)
            failed = c["failure_count"] + (0 if success else 1)
            conf = confidence(verified, failed)
            status = c["status"]
            if status == "active" and conf < INVALID_BELOW:
                status = "invalid"
            sources = _loads(c["affected_sources"], [])
            if success:
                sources = _add_source(sources, source_name)
            self.conn.execute(
                "UPDATE memory_issues SET verification_count = ?, failure_count = ?, confidence_score = ?, "
                "affected_sources = ?, status = ?, last_confirmed_at = ?, updated_at = ? WHERE issue_id = ?",
                (verified, failed, conf, json.dumps(sources), status,
                 now if success else c["last_confirmed_at"], now, c["issue_id"]))
            self.conn.execute("INSERT INTO memory_confirmations (issue_id, source_name, success, notes, at) "
                              "VALUES (?, ?, ?, ?, ?)",
                              (c["issue_id"], source_name, int(success), mask_text(str(notes or ""))[:MAX_TEXT], now))
            self._usage("fix_confirmed", c["issue_id"], source_name, success, now)
        return {"status": "confirmed", "issue_id": c["issue_id"], "updated_confidence": conf,
                "updated_verification_count": verified}

    # -- usage ----------------------------------------------------------------------------
    def record_usage(self, event_type: str, issue_id: str | None, source_name: str | None,
                     success: bool | None = None) -> None:
        """One usage event (search, fix_retrieved, fix_applied, fix_confirmed, issue_submitted)."""
        if event_type not in EVENT_TYPES:
            raise FixMemoryError("validation_error", f"event_type: expected one of {', '.join(EVENT_TYPES)}; "
                               f"got {event_type!r}", {"key": "event_type"})
        if issue_id is not None and not isinstance(issue_id, str):
            raise FixMemoryError("validation_error", "issue_id: expected a string or null", {"key": "issue_id"})
        if source_name is not None and not isinstance(source_name, str):
            raise FixMemoryError("validation_error", "source_name: expected a string or null", {"key": "source_name"})
        with self.conn:
            self._usage(event_type, issue_id, source_name, success, self.clock())

    def issue_stats(self, issue_id: str) -> dict:
        """Usage statistics of one issue (times as ISO 8601 Z)."""
        c = self._issue(issue_id)
        return self._stats(c["issue_id"])

    def _stats(self, issue_id: str) -> dict:
        counts = {r["event_type"]: r for r in rows(
            self.conn,
            "SELECT event_type, count(*) AS n, sum(coalesce(success, 0)) AS ok, max(at) AS last, "
            "max(CASE WHEN success = 1 THEN at END) AS last_ok "
            "FROM memory_usage WHERE issue_id = ? GROUP BY event_type", (issue_id,))}

        def n(event: str) -> int:
            return int(counts[event]["n"]) if event in counts else 0

        applied = n("fix_applied")
        resolved = int(counts["fix_confirmed"]["ok"] or 0) if "fix_confirmed" in counts else 0
        return {
            "issue_id": issue_id,
            "total_queries": n("search"),
            "total_fix_retrieved": n("fix_retrieved"),
            "total_fix_applied": applied,
            "total_resolved": resolved,
            "resolution_rate": round(min(1.0, resolved / applied), 4) if applied else 0.0,
            "last_queried_at": iso(counts["search"]["last"]) if "search" in counts else None,
            "last_resolved_at": iso(counts["fix_confirmed"]["last_ok"]) if "fix_confirmed" in counts else None,
        }

    def global_stats(self) -> dict:
        """Usage statistics of the whole memory (`healerctl memory stats`)."""
        since = self.clock() - DAY

        def count(sql: str, params=()) -> int:
            return int(scalar(self.conn, sql, params) or 0)

        def top(sql: str) -> list[str]:
            return [r["issue_id"] for r in rows(self.conn, sql)]

        return {
            "total_queries": count("SELECT count(*) FROM memory_usage WHERE event_type = 'search' "
                                   "AND issue_id IS NULL"),
            "total_issues_resolved": count("SELECT count(*) FROM memory_usage WHERE event_type = 'fix_confirmed' "
                                           "AND success = 1"),
            "total_issues_submitted": count("SELECT count(*) FROM memory_usage WHERE event_type = 'issue_submitted'"),
            "active_sources_24h": count("SELECT count(DISTINCT source_name) FROM memory_usage WHERE at > ? "
                                        "AND source_name IS NOT NULL", (since,)),
            "queries_24h": count("SELECT count(*) FROM memory_usage WHERE event_type = 'search' "
                                 "AND issue_id IS NULL AND at > ?", (since,)),
            "resolutions_24h": count("SELECT count(*) FROM memory_usage WHERE event_type = 'fix_confirmed' "
                                     "AND success = 1 AND at > ?", (since,)),
            "top_queried_issues": top("SELECT issue_id, count(*) AS n FROM memory_usage WHERE event_type = 'search' "
                                      "AND issue_id IS NOT NULL GROUP BY issue_id ORDER BY n DESC, issue_id LIMIT 5"),
            "top_resolved_issues": top("SELECT issue_id, count(*) AS n FROM memory_usage "
                                       "WHERE event_type = 'fix_confirmed' AND success = 1 AND issue_id IS NOT NULL "
                                       "GROUP BY issue_id ORDER BY n DESC, issue_id LIMIT 5"),
        }

    # -- listing --------------------------------------------------------------------------
    def list_issues(self) -> list[dict]:
        """One summary per issue, most recently updated first (`healerctl memory --json`)."""
        return [_summary(c) for c in rows(self.conn, "SELECT * FROM memory_issues ORDER BY updated_at DESC, issue_id")]

    def show(self, issue_id: str) -> dict:
        """Everything about one issue: the summary, its bundle, confirmations and usage stats."""
        c = self._issue(issue_id)
        out = _summary(c)
        out.update({
            "fingerprint": c["fingerprint"],
            "root_cause_category": c["root_cause_category"],
            "template_sig": c["template_sig"],
            "diff_sig": c["diff_sig"],
            "broken_selectors": _loads(c["broken_selectors"], []),
            "fix_bundle": _loads(c["fix_bundle"], {}),
            "environment": _loads(c["environment"], {}),
            "created_at": iso(c["created_at"]),
            "updated_at": iso(c["updated_at"]),
            "confirmations": [
                {"source_name": r["source_name"], "success": bool(r["success"]), "notes": r["notes"],
                 "at": iso(r["at"])}
                for r in rows(self.conn, "SELECT source_name, success, notes, at FROM memory_confirmations "
                                         "WHERE issue_id = ? ORDER BY id DESC LIMIT 50", (c["issue_id"],))],
            "usage": self._stats(c["issue_id"]),
        })
        return out

    def forget(self, issue_id: str) -> None:
        """Remove an issue with its confirmations and usage events."""
        with self.conn:
            c = self._issue(issue_id)
            self.conn.execute("DELETE FROM memory_confirmations WHERE issue_id = ?", (c["issue_id"],))
            self.conn.execute("DELETE FROM memory_usage WHERE issue_id = ?", (c["issue_id"],))
            self.conn.execute("DELETE FROM memory_issues WHERE issue_id = ?", (c["issue_id"],))


def _add_source(sources: list, name: str) -> list[str]:
    out = [s for s in sources if isinstance(s, str)]
    if name not in out:
        out.append(name)
    return out


def _summary(c: dict) -> dict:
    return {
        "issue_id": c["issue_id"],
        "canonical_title": c["canonical_title"],
        "error_type": c["error_type"],
        "host": c["host"],
        "confidence_score": c["confidence_score"],
        "verification_count": c["verification_count"],
        "failure_count": c["failure_count"],
        "affected_sources": _loads(c["affected_sources"], []),
        "last_confirmed_at": iso(c["last_confirmed_at"]),
        "status": c["status"],
    }


def _overlap(wanted: set[str], their_broken: set[str], bundle: Any) -> float:
    """How well an issue fits this break, 0..1: mostly the share of the broken selectors
    the issue knows (its broken selectors or the ones its bundle replaces), a little
    the similarity of the two sets of broken selectors."""
    if not wanted:
        return 0.0
    known = their_broken | _bundle_from_selectors(bundle)
    coverage = len(wanted & known) / len(wanted)
    jaccard = len(wanted & their_broken) / len(wanted | their_broken) if their_broken else 0.0
    return 0.8 * coverage + 0.2 * jaccard


def _bundle_from_selectors(bundle: Any) -> set[str]:
    """The old selectors a bundle replaces (its fields' and items' "from")."""
    out: set[str] = set()
    if not isinstance(bundle, dict):
        return out
    fields = bundle.get("fields")
    if isinstance(fields, dict):
        for spec in fields.values():
            if isinstance(spec, dict) and isinstance(spec.get("from"), str):
                out.add(spec["from"].strip())
    items = bundle.get("items")
    if isinstance(items, dict) and isinstance(items.get("from"), str):
        out.add(items["from"].strip())
    return out
