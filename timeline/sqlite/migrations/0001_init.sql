-- 0001: the timeline. See SCHEMA.md for what each table holds and why.

-- Strings that repeat millions of times (users, user agents, resources,
-- namespaces, names, verbs) are stored once here and referenced by id.
-- Id 0 is the empty string, so "not known" is 0 and never NULL.
CREATE TABLE strs (
    id INTEGER PRIMARY KEY,
    s  TEXT NOT NULL UNIQUE
);
INSERT INTO strs (id, s) VALUES (0, '');

-- Key/value facts about the database itself (created, per-database salt).
CREATE TABLE meta (
    k TEXT PRIMARY KEY,
    v TEXT NOT NULL
) WITHOUT ROWID;

-- One row per pass over one source. Every record points at its run.
CREATE TABLE ingest_run (
    id          INTEGER PRIMARY KEY,
    source      TEXT    NOT NULL,
    path        TEXT    NOT NULL,
    size        INTEGER NOT NULL DEFAULT 0,
    sha256      TEXT    NOT NULL DEFAULT '',
    started_ns  INTEGER NOT NULL,
    finished_ns INTEGER NOT NULL DEFAULT 0,
    first_ns    INTEGER NOT NULL DEFAULT 0,
    last_ns     INTEGER NOT NULL DEFAULT 0,
    lines       INTEGER NOT NULL DEFAULT 0,
    records     INTEGER NOT NULL DEFAULT 0,
    merged      INTEGER NOT NULL DEFAULT 0,
    duplicates  INTEGER NOT NULL DEFAULT 0,
    versions    INTEGER NOT NULL DEFAULT 0,
    bad_lines   INTEGER NOT NULL DEFAULT 0,
    status      TEXT    NOT NULL,
    error       TEXT    NOT NULL DEFAULT ''
);

-- Everything that happened at a time. Columns named *_id-less but holding
-- integers (api_group .. level) are ids into strs.
CREATE TABLE record (
    id          INTEGER PRIMARY KEY,
    key         INTEGER NOT NULL,           -- 64-bit hash of the natural key
    time_ns     INTEGER NOT NULL,           -- UTC nanoseconds
    source      INTEGER NOT NULL DEFAULT 0,
    api_group   INTEGER NOT NULL DEFAULT 0,
    api_version INTEGER NOT NULL DEFAULT 0,
    resource    INTEGER NOT NULL DEFAULT 0,
    subresource INTEGER NOT NULL DEFAULT 0,
    kind        INTEGER NOT NULL DEFAULT 0,
    namespace   INTEGER NOT NULL DEFAULT 0,
    name        INTEGER NOT NULL DEFAULT 0,
    uid         TEXT    NOT NULL DEFAULT '',
    verb        INTEGER NOT NULL DEFAULT 0,
    reason      INTEGER NOT NULL DEFAULT 0,
    user        INTEGER NOT NULL DEFAULT 0,
    user_agent  INTEGER NOT NULL DEFAULT 0,
    source_ip   INTEGER NOT NULL DEFAULT 0,
    code        INTEGER NOT NULL DEFAULT 0,  -- HTTP status
    type        INTEGER NOT NULL DEFAULT 0,  -- event type
    level       INTEGER NOT NULL DEFAULT 0,  -- audit level
    latency_ns  INTEGER NOT NULL DEFAULT 0,
    stages      INTEGER NOT NULL DEFAULT 0,  -- bit set of audit stages joined
    audit_id    TEXT    NOT NULL DEFAULT '',
    uri         TEXT    NOT NULL DEFAULT '',
    message     TEXT    NOT NULL DEFAULT '',
    run_id      INTEGER NOT NULL REFERENCES ingest_run (id),
    line        INTEGER NOT NULL DEFAULT 0,
    extra       TEXT                         -- JSON object: the rest
);
CREATE UNIQUE INDEX record_key ON record (key);
CREATE INDEX record_time ON record (time_ns);
CREATE INDEX record_user ON record (user, time_ns);
CREATE INDEX record_resource ON record (resource, verb, time_ns);
CREATE INDEX record_object ON record (namespace, name, time_ns);
CREATE INDEX record_error ON record (code, time_ns) WHERE code >= 400;
CREATE INDEX record_reason ON record (reason, time_ns) WHERE reason != 0;

-- Redacted object contents, stored once per distinct content.
CREATE TABLE content (
    id   INTEGER PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,  -- "sha256:<hex>" of body
    body BLOB NOT NULL          -- redacted JSON
);

-- One row per observed version of an object.
CREATE TABLE object_version (
    id               INTEGER PRIMARY KEY,
    key              INTEGER NOT NULL,       -- 64-bit hash of the natural key
    api_group        INTEGER NOT NULL DEFAULT 0,
    api_version      INTEGER NOT NULL DEFAULT 0,
    resource         INTEGER NOT NULL DEFAULT 0,
    kind             INTEGER NOT NULL DEFAULT 0,
    namespace        INTEGER NOT NULL DEFAULT 0,
    name             INTEGER NOT NULL DEFAULT 0,
    uid              TEXT    NOT NULL DEFAULT '',
    resource_version TEXT    NOT NULL DEFAULT '',
    time_ns          INTEGER NOT NULL,
    content_id       INTEGER NOT NULL REFERENCES content (id),
    run_id           INTEGER NOT NULL REFERENCES ingest_run (id),
    line             INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX object_version_key ON object_version (key);
CREATE INDEX object_version_uid ON object_version (uid, time_ns);
CREATE INDEX object_version_name ON object_version (resource, namespace, name, time_ns);
