-- healerd: the whole SQLite schema.
--
-- Applied by healerd.store.db.open_db() at daemon start. The schema version is
-- PRAGMA user_version; this file always describes the newest version, and
-- healerd/store/migrations.py upgrades an older database in place, one step at
-- a time, inside a transaction.
--
-- All times are REAL seconds since the Unix epoch (UTC); the CLI and the JSON
-- shapes render them as ISO 8601 with a trailing Z.

-- Registered sources: what to scrape and when. Written by the StoreWriter on
-- behalf of the control plane (add/remove/pause) and the Scheduler (next run).
CREATE TABLE IF NOT EXISTS sources (
    name            TEXT PRIMARY KEY,
    url             TEXT NOT NULL,
    host            TEXT NOT NULL,
    blueprint       TEXT NOT NULL,          -- the human blueprint, JSON (the blueprint format)
    every_s         REAL NOT NULL,          -- schedule interval, seconds
    interval_factor REAL NOT NULL DEFAULT 1.0,  -- stretched by RATE_LIMIT, reset on success
    paused          INTEGER NOT NULL DEFAULT 0,
    next_run_at     REAL,
    origin          TEXT NOT NULL DEFAULT 'cli',  -- 'cli' | 'sources_dir'
    current_version INTEGER,                -- the production parser version
    etag            TEXT,                   -- conditional-request validators of the last 200
    last_modified   TEXT,
    review_approved_until REAL,             -- FLAGGED_FOR_REVIEW approval lasts until
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL
);

-- The health row, one per source; `state` is the persisted lifecycle state.
CREATE TABLE IF NOT EXISTS source_health (
    source_name          TEXT PRIMARY KEY REFERENCES sources(name) ON DELETE CASCADE,
    state                TEXT NOT NULL CHECK (state IN ('ACTIVE','DEGRADED','QUARANTINED','DEAD')),
    last_success_at      REAL,
    last_failure_at      REAL,
    success_count        INTEGER NOT NULL DEFAULT 0,
    failure_count        INTEGER NOT NULL DEFAULT 0,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    fix_attempts_today   INTEGER NOT NULL DEFAULT 0,  -- attempts inside the attempt window
    quarantine_until     REAL,
    last_error           TEXT,
    last_error_type      TEXT,
    host_unresolved_since REAL,                         -- NETWORK/DNS failures since (for DEAD)
    flagged_for_review   INTEGER NOT NULL DEFAULT 0,
    deferred_report      TEXT,                          -- JSON: what was tried, last error, options
    item_counts          TEXT NOT NULL DEFAULT '[]',    -- JSON: item counts of recent good scrapes
    failing_since        REAL,                          -- first failed scrape of the current episode
    last_fingerprint     TEXT,                          -- failure fingerprint of the last failed scrape
    attempts_since       REAL,                          -- fix attempts count from here (unquarantine resets)
    retry_only           INTEGER NOT NULL DEFAULT 0,    -- 1 after a quarantine expired: one automatic retry
    created_at           REAL NOT NULL,
    updated_at           REAL NOT NULL
);

-- Audit log: every lifecycle transition, written in the same transaction as the
-- state change it records.
CREATE TABLE IF NOT EXISTS source_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    source_name TEXT NOT NULL,
    from_state  TEXT NOT NULL,
    to_state    TEXT NOT NULL,
    trigger     TEXT NOT NULL,
    reason      TEXT NOT NULL DEFAULT '',
    at          REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS source_events_by_source ON source_events(source_name, id);

-- The task queue: SCRAPE_SOURCE / FIX_SOURCE / ADD_SOURCE work that must
-- survive a restart.
CREATE TABLE IF NOT EXISTS task_queue (
    task_id       INTEGER PRIMARY KEY AUTOINCREMENT,
    type          TEXT NOT NULL,
    target        TEXT NOT NULL,
    state         TEXT NOT NULL CHECK (state IN ('PENDING','IN_PROGRESS','COMPLETED','FAILED','QUARANTINED')),
    priority      INTEGER NOT NULL DEFAULT 5,
    created_at    REAL NOT NULL,
    started_at    REAL,
    completed_at  REAL,
    not_before    REAL,
    claimed_by    TEXT,
    error_message TEXT,
    retry_count   INTEGER NOT NULL DEFAULT 0,
    max_retries   INTEGER NOT NULL DEFAULT 3,
    context_json  TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS task_queue_pending ON task_queue(state, priority, task_id);
CREATE INDEX IF NOT EXISTS task_queue_target ON task_queue(target, type, state);

-- One row per fix attempt (what was tried, and how it went).
CREATE TABLE IF NOT EXISTS fix_history (
    fix_id            INTEGER PRIMARY KEY AUTOINCREMENT,
    source_name       TEXT NOT NULL,
    error_type        TEXT NOT NULL,
    strategy          TEXT NOT NULL,        -- memory | builtin | external | redirect | relocate | none
    outcome           TEXT NOT NULL,        -- promoted | rejected | declined | error | staged
    reason            TEXT NOT NULL DEFAULT '',
    diagnosis_context TEXT,                 -- JSON summary of the DiagnosisContext (sanitized)
    patch_generated   TEXT,                 -- the candidate (blueprint JSON or parser code)
    validation_result TEXT,                 -- JSON of the ValidationResult
    deployed_to       TEXT,                 -- STAGING | PRODUCTION | FAILED
    version           INTEGER,              -- the parser version it produced, if any
    fingerprint       TEXT,                 -- failure fingerprint (systemic breaker, memory)
    duration_ms       REAL,
    failure_started_at REAL,                -- first failed scrape of this episode (recovery time)
    created_at        REAL NOT NULL,
    production_verdict TEXT,                -- a promoted fix in production: NULL while on probation,
                                            -- 'passed', 'false_positive' (failed within its probation
                                            -- on the layout it was proved on) or 'site_changed' (the
                                            -- site changed again during its probation: a new episode)
    verdict_at        REAL,
    data_gone         INTEGER NOT NULL DEFAULT 0  -- a refusal that showed the data gone from the page
);
CREATE INDEX IF NOT EXISTS fix_history_by_source ON fix_history(source_name, created_at);
CREATE INDEX IF NOT EXISTS fix_history_by_fp ON fix_history(fingerprint, created_at);

-- Parser versions: the production one, archived ones, staged candidates.
CREATE TABLE IF NOT EXISTS parser_versions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    source_name TEXT NOT NULL REFERENCES sources(name) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    kind        TEXT NOT NULL DEFAULT 'selectors',  -- selectors | code
    body        TEXT NOT NULL,                      -- blueprint JSON (code parsers carry their code in it)
    origin      TEXT NOT NULL CHECK (origin IN ('human','builtin','memory','external')),
    status      TEXT NOT NULL CHECK (status IN ('production','staging','archived','rejected')),
    validation  TEXT,                               -- JSON of the ValidationResult that judged it
    note        TEXT NOT NULL DEFAULT '',
    created_at  REAL NOT NULL,
    promoted_at REAL,
    probation_scrapes INTEGER NOT NULL DEFAULT 0,   -- good scrapes since its last promotion
    promoted_by TEXT,                               -- who last promoted it: 'daemon' | 'person'
    production_verdict TEXT,                        -- an automatic version's probation: NULL (on it or
                                                    -- never judged), 'passed', 'false_positive'
    UNIQUE (source_name, version)
);
-- Production is always exactly one whole version per source.
CREATE UNIQUE INDEX IF NOT EXISTS parser_versions_one_production
    ON parser_versions(source_name) WHERE status = 'production';

-- Every answer an external healer gave for a source, by the hash of the normalized candidate
-- (healerd.core.selector_bounds.candidate_digest), noted in the transaction that stages it:
-- the same answer is never staged twice, whatever became of it (rejected, too slow on the
-- page, or interrupted by a crash while it was being tried).
CREATE TABLE IF NOT EXISTS healer_answers (
    source_name TEXT NOT NULL REFERENCES sources(name) ON DELETE CASCADE,
    digest      TEXT NOT NULL,
    version     INTEGER NOT NULL,                   -- the version it was staged as
    first_at    REAL NOT NULL,
    PRIMARY KEY (source_name, digest)
);

-- The last good page and the current page per source, zlib-compressed.
CREATE TABLE IF NOT EXISTS snapshots (
    source_name TEXT NOT NULL REFERENCES sources(name) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('last_good','current')),
    url         TEXT NOT NULL,
    status_code INTEGER,
    fetched_at  REAL NOT NULL,
    body        BLOB NOT NULL,
    sha256      TEXT NOT NULL,
    records     TEXT,                        -- JSON of what the production parser extracted from it
    PRIMARY KEY (source_name, kind)
);

-- The last page each parser version passed on (one per layout a site serves):
-- a merged parser is proved on these before it is promoted.
CREATE TABLE IF NOT EXISTS version_snapshots (
    source_name TEXT NOT NULL REFERENCES sources(name) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    url         TEXT NOT NULL,
    fetched_at  REAL NOT NULL,
    body        BLOB NOT NULL,
    sha256      TEXT NOT NULL,
    records     TEXT,                        -- JSON of what that version extracted from it
    PRIMARY KEY (source_name, version)
);

-- Per source and field: the value profile learned from its good scrapes (JSON of
-- healerd.core.value_profile), widened as scrapes pass; a scrape whose values leave it is refused.
CREATE TABLE IF NOT EXISTS value_profiles (
    source_name TEXT NOT NULL REFERENCES sources(name) ON DELETE CASCADE,
    field       TEXT NOT NULL,
    profile     TEXT NOT NULL,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (source_name, field)
);

-- Scraped output, newest kept up to the retention limit per source.
CREATE TABLE IF NOT EXISTS records (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    source_name TEXT NOT NULL REFERENCES sources(name) ON DELETE CASCADE,
    scraped_at  REAL NOT NULL,
    version     INTEGER,
    data        TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_by_source ON records(source_name, id);

-- The alert log (also written to <log-dir>/alerts.jsonl).
CREATE TABLE IF NOT EXISTS alerts (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    ts      REAL NOT NULL,
    level   TEXT NOT NULL,
    source  TEXT,
    event   TEXT NOT NULL,
    message TEXT NOT NULL,
    details TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS alerts_by_source_event ON alerts(source, event, ts);

-- One row per alert target (the [alerts] webhook): `cursor` is the id of the last alerts row it
-- has dealt with (delivered, or not for it); every row above it is still to deliver, in id order,
-- across outages and restarts. Written by the StoreWriter on behalf of the Alerter.
CREATE TABLE IF NOT EXISTS alert_cursors (
    target            TEXT PRIMARY KEY,
    cursor            INTEGER NOT NULL,
    delivered         INTEGER NOT NULL DEFAULT 0,    -- alerts delivered (duplicates after a crash included)
    last_delivered_at REAL,
    failing_since     REAL,                          -- the outage in progress started then (NULL: none)
    last_error        TEXT,                          -- masked, one line
    last_error_at     REAL,
    updated_at        REAL NOT NULL
);

-- Calls to the external healer: response times, outcomes, the daily budget.
CREATE TABLE IF NOT EXISTS healer_calls (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    source_name TEXT NOT NULL,
    cycle       INTEGER NOT NULL,
    backend     TEXT NOT NULL,               -- code-healer | openai
    started_at  REAL NOT NULL,
    duration_ms REAL NOT NULL,
    http_status INTEGER,
    outcome     TEXT NOT NULL,               -- healed | timeout | http_error | bad_response | refused | error
    reason      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS healer_calls_by_time ON healer_calls(started_at);

-- The fix memory: known issues and their validated fix bundles.
CREATE TABLE IF NOT EXISTS memory_issues (
    issue_id           TEXT PRIMARY KEY,
    fingerprint        TEXT NOT NULL UNIQUE,
    canonical_title    TEXT NOT NULL,
    root_cause_category TEXT NOT NULL,
    error_type         TEXT NOT NULL,
    host               TEXT NOT NULL,
    template_sig       TEXT NOT NULL,
    diff_sig           TEXT NOT NULL,
    broken_selectors   TEXT NOT NULL,        -- JSON list
    fix_bundle         TEXT NOT NULL,        -- JSON: selector mapping / parser patch + verification
    environment        TEXT NOT NULL DEFAULT '{}',
    confidence_score   REAL NOT NULL,
    verification_count INTEGER NOT NULL DEFAULT 0,
    failure_count      INTEGER NOT NULL DEFAULT 0,
    affected_sources   TEXT NOT NULL DEFAULT '[]',
    status             TEXT NOT NULL DEFAULT 'active',
    last_confirmed_at  REAL,
    created_at         REAL NOT NULL,
    updated_at         REAL NOT NULL
);

-- Each reuse of a bundle on a source, success or failure.
CREATE TABLE IF NOT EXISTS memory_confirmations (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    issue_id    TEXT NOT NULL REFERENCES memory_issues(issue_id) ON DELETE CASCADE,
    source_name TEXT NOT NULL,
    success     INTEGER NOT NULL,
    notes       TEXT NOT NULL DEFAULT '',
    at          REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_confirmations_by_issue ON memory_confirmations(issue_id, source_name);

-- Usage events (search, fix_retrieved, fix_applied, fix_confirmed, issue_submitted).
CREATE TABLE IF NOT EXISTS memory_usage (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    event_type  TEXT NOT NULL,
    issue_id    TEXT,
    source_name TEXT,
    success     INTEGER,
    at          REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_usage_by_issue ON memory_usage(issue_id, event_type);

-- Daemon-wide flags that must survive a restart (systemic halt, ...).
CREATE TABLE IF NOT EXISTS daemon_state (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Sources whose row of the fleet's status may have changed, each with the newest
-- `rev` (increasing): a status answer re-reads only the sources noted since the rev
-- it last saw (healerd/store/status_rows.py). Kept by the triggers below, in the
-- same transaction as the change; one row per source name. The UPDATE OF lists are
-- the columns the status row shows: a column added to it must be added here too.
CREATE TABLE IF NOT EXISTS status_changes (
    source_name TEXT PRIMARY KEY,
    rev         INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS status_changes_by_rev ON status_changes(rev);
-- The fleet's status page by page, the sources needing attention first (store/status_pages.py).
CREATE INDEX IF NOT EXISTS source_health_by_state ON source_health(state, source_name);
-- Noting a source: one upsert, shared by the triggers (SQLite has no procedures).
CREATE VIEW IF NOT EXISTS status_note AS SELECT source_name FROM status_changes;
CREATE TRIGGER IF NOT EXISTS status_note_upsert INSTEAD OF INSERT ON status_note BEGIN
    INSERT INTO status_changes (source_name, rev)
        VALUES (NEW.source_name, (SELECT COALESCE(max(rev), 0) + 1 FROM status_changes))
        ON CONFLICT (source_name) DO UPDATE SET rev = excluded.rev;
END;
CREATE TRIGGER IF NOT EXISTS status_source_added AFTER INSERT ON sources BEGIN
    INSERT INTO status_note (source_name) VALUES (NEW.name);
END;
CREATE TRIGGER IF NOT EXISTS status_source_changed AFTER UPDATE OF name, url, paused, next_run_at, current_version ON sources BEGIN
    INSERT INTO status_note (source_name) VALUES (NEW.name);
END;
CREATE TRIGGER IF NOT EXISTS status_source_removed AFTER DELETE ON sources BEGIN
    INSERT INTO status_note (source_name) VALUES (OLD.name);
END;
CREATE TRIGGER IF NOT EXISTS status_health_added AFTER INSERT ON source_health BEGIN
    INSERT INTO status_note (source_name) VALUES (NEW.source_name);
END;
CREATE TRIGGER IF NOT EXISTS status_health_changed AFTER UPDATE OF source_name, state, last_success_at, last_failure_at,
        failure_count, quarantine_until, last_error, attempts_since ON source_health BEGIN
    INSERT INTO status_note (source_name) VALUES (NEW.source_name);
END;
CREATE TRIGGER IF NOT EXISTS status_fix_added AFTER INSERT ON fix_history BEGIN
    INSERT INTO status_note (source_name) VALUES (NEW.source_name);
END;
CREATE TRIGGER IF NOT EXISTS status_fix_changed AFTER UPDATE OF source_name, outcome, created_at ON fix_history BEGIN
    INSERT INTO status_note (source_name) VALUES (NEW.source_name);
    INSERT INTO status_note (source_name) VALUES (OLD.source_name);
END;
CREATE TRIGGER IF NOT EXISTS status_fix_removed AFTER DELETE ON fix_history BEGIN
    INSERT INTO status_note (source_name) VALUES (OLD.source_name);
END;

-- The change set of each stored scrape against the previous stored scrape of its source
-- (healerd/core/changes.py), written with the records row in the same transaction.
-- `size` counts the records it names (0: nothing changed); `body` is
-- {"added": [...], "removed": [...], "changed": [{"key", "before", "after"}]}.
CREATE TABLE IF NOT EXISTS record_changes (
    record_id   INTEGER PRIMARY KEY REFERENCES records(id) ON DELETE CASCADE,
    source_name TEXT NOT NULL,
    size        INTEGER NOT NULL,
    body        TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS record_changes_by_source ON record_changes(source_name, record_id) WHERE size > 0;

-- One row per configured feed ([[feeds]]): `cursor` is the id of the last records row it has
-- dealt with (delivered, or not for it); every row above it is still to deliver, in id order.
-- Records retention never deletes a row above the lowest cursor. Written by the StoreWriter on
-- behalf of the FeedDispatcher.
CREATE TABLE IF NOT EXISTS feed_cursors (
    feed              TEXT PRIMARY KEY,
    cursor            INTEGER NOT NULL,
    delivered         INTEGER NOT NULL DEFAULT 0,    -- scrapes delivered (duplicates after a crash included)
    last_delivered_at REAL,
    failing_since     REAL,                          -- the outage in progress started then (NULL: none)
    last_error        TEXT,                          -- masked, one line
    last_error_at     REAL,
    updated_at        REAL NOT NULL
);
