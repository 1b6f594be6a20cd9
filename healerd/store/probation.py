"""Production probation: the page each parser version last passed on, and the verdicts of promoted fixes."""

from __future__ import annotations

import hashlib
import json
import time

import apsw

from healerd.core.pagecodec import compress_bytes, decompress_page
from healerd.store.sql import row, scalar


def put_page(conn: apsw.Connection, name: str, version: int, url: str, html: str | None, records=None, *,
             sha256: str | None = None, body_z: bytes | None = None, now: float | None = None) -> bool:
    """Keep `html` (or the same page already compressed, `body_z` with its `sha256`) as the last
    page `version` passed on; a page already kept is not written again. Returns whether it wrote."""
    now = time.time() if now is None else now
    if html is not None:
        raw = html.encode("utf-8", errors="replace")
        sha = sha256 or hashlib.sha256(raw).hexdigest()
    elif body_z is not None and sha256:
        raw, sha = None, sha256
    else:
        raise ValueError("put_page needs the page, or its compressed body and hash")
    if scalar(conn, "SELECT sha256 FROM version_snapshots WHERE source_name = ? AND version = ?", (name, version)) == sha:
        return False
    with conn:
        conn.execute("INSERT OR REPLACE INTO version_snapshots (source_name, version, url, fetched_at, body, sha256, "
                     "records) VALUES (?, ?, ?, ?, ?, ?, ?)",
                     (name, version, url, now, compress_bytes(raw) if raw is not None else body_z,
                      sha, json.dumps(records) if records is not None else None))
    return True


def keep_good_page(conn: apsw.Connection, name: str, version: int, url: str, html: str | None, records=None, *,
                   sha256: str | None = None, body_z: bytes | None = None, now: float | None = None) -> bool:
    """After a good scrape: keep the page as `version`'s, but only for a version the daemon put in
    production (only such a version is ever rolled back or merged, so only its page is ever
    needed: a fleet on its people's blueprints writes nothing more), and only when it changed.

    The page comes as text, or compressed (`body_z`, from an extraction worker), or neither when
    it is unchanged since the last good snapshot, whose compressed body is then copied."""
    r = row(conn, "SELECT v.promoted_by, s.sha256 FROM parser_versions v LEFT JOIN version_snapshots s "
                  "ON s.source_name = v.source_name AND s.version = v.version "
                  "WHERE v.source_name = ? AND v.version = ?", (name, version))
    if r is None or r["promoted_by"] != "daemon":
        return False
    sha = sha256 or (hashlib.sha256(html.encode("utf-8", errors="replace")).hexdigest() if html is not None else None)
    if sha is None or r["sha256"] == sha:
        return False
    if html is None and body_z is None:
        good = row(conn, "SELECT body FROM snapshots WHERE source_name = ? AND kind = 'last_good' AND sha256 = ?",
                   (name, sha))
        if good is None:
            return False
        body_z = good["body"]
    return put_page(conn, name, version, url, html, records, sha256=sha, body_z=body_z, now=now)


def get_page(conn: apsw.Connection, name: str, version: int) -> dict | None:
    """{"url", "fetched_at", "html", "records"} of the last page `version` passed on, or None."""
    r = row(conn, "SELECT url, fetched_at, body, records FROM version_snapshots WHERE source_name = ? AND version = ?",
            (name, version))
    if r is None:
        return None
    r["html"] = decompress_page(r.pop("body"))
    r["records"] = json.loads(r["records"]) if r["records"] else None
    return r


def version_row(conn: apsw.Connection, name: str, version: int) -> dict | None:
    return row(conn, "SELECT version, origin, status, body, probation_scrapes, promoted_by, production_verdict "
                     "FROM parser_versions WHERE source_name = ? AND version = ?", (name, version))


def count_good_scrape(conn: apsw.Connection, name: str, version: int) -> None:
    conn.execute("UPDATE parser_versions SET probation_scrapes = probation_scrapes + 1 "
                 "WHERE source_name = ? AND version = ?", (name, version))


def set_verdict(conn: apsw.Connection, name: str, version: int, verdict: str, now: float) -> None:
    """The verdict on `version`, and on the promoted fix that brought it (if it is recorded yet)."""
    conn.execute("UPDATE parser_versions SET production_verdict = ? WHERE source_name = ? AND version = ?",
                 (verdict, name, version))
    adopt_verdict(conn, name, version, now)


def adopt_verdict(conn: apsw.Connection, name: str, version: int, now: float) -> None:
    """A promoted fix recorded after its version was already judged (a scrape can fail, and be
    rolled back, between the promotion and the Doctor's record of it) takes the version's verdict."""
    conn.execute("UPDATE fix_history SET production_verdict = (SELECT production_verdict FROM parser_versions "
                 "WHERE source_name = ? AND version = ?), verdict_at = ? WHERE source_name = ? AND version = ? "
                 "AND outcome = 'promoted' AND production_verdict IS NULL AND EXISTS (SELECT 1 FROM parser_versions "
                 "WHERE source_name = ? AND version = ? AND production_verdict IS NOT NULL)",
                 (name, version, now, name, version, name, version))


def audit(conn: apsw.Connection, name: str, state: str, trigger: str, reason: str, now: float) -> None:
    """A lifecycle audit row for an event that keeps the state (a rollback, a merge)."""
    conn.execute("INSERT INTO source_events (source_name, from_state, to_state, trigger, reason, at) "
                 "VALUES (?, ?, ?, ?, ?, ?)", (name, state, state, trigger, reason[:2000], now))


def version_with_body(conn: apsw.Connection, name: str, body: str) -> dict | None:
    """An existing version of `name` with exactly this blueprint (a merge made before is reused)."""
    return row(conn, "SELECT version, status FROM parser_versions WHERE source_name = ? AND body = ? "
                     "AND status IN ('archived', 'production') ORDER BY version DESC LIMIT 1", (name, body))


def rollback_reason(from_version: int, to_version: int, why: str) -> str:
    return f"rolled back from version {from_version} to {to_version}: {why}"


def took_turns(conn: apsw.Connection, name: str, a: int, b: int) -> bool:
    """Whether versions a and b already took turns: one was rolled back to the other."""
    return scalar(conn, "SELECT 1 FROM source_events WHERE source_name = ? AND trigger = 'rollback' "
                        "AND (reason LIKE ? OR reason LIKE ?) LIMIT 1",
                  (name, rollback_reason(a, b, "%"), rollback_reason(b, a, "%"))) is not None


def history_entries(conn: apsw.Connection, name: str) -> list[dict]:
    """Rollbacks, merges and approvals for `healerctl history`: a `version` entry each, at the
    time the version came (back) into production, with `event` saying which and `by` who."""
    from healerd.core.timeutil import iso
    from healerd.store.sources import audit_entries

    out = []
    events = audit_entries(conn, name, ("rollback", "manual_rollback", "merge", "approve"))   # since the newest registration
    for ev in events:
        promoted = row(conn, "SELECT version, origin, status FROM parser_versions WHERE source_name = ? "
                             "AND promoted_at <= ? ORDER BY promoted_at DESC, version DESC LIMIT 1", (name, ev["at"]))
        if promoted is None:
            continue
        out.append({"kind": "version", "at": iso(ev["at"]), "_t": ev["at"], "version": promoted["version"],
                    "origin": promoted["origin"], "status": promoted["status"],
                    "event": "rollback" if ev["trigger"] == "manual_rollback" else ev["trigger"],
                    "by": "person" if ev["trigger"] in ("manual_rollback", "approve") else "daemon",
                    "note": ev["reason"]})
    return out
