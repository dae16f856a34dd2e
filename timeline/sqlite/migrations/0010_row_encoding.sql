-- 0010: smaller record rows (SCHEMA.md, "Row encoding"). Audit IDs and
-- uids that are canonical UUIDs become 16-byte BLOBs; the request URI's path
-- becomes an interned template (the record's namespace written \x01, its
-- name \x02) and the query stays in uri; the extra JSON is split into a
-- middle that repeats per user (authorization annotations and groups,
-- interned: extra_dict) and the parts around it (extra_head, extra_tail,
-- with the latency annotation key prefix written \x01). Every value reads
-- back byte for byte by the expressions in rowenc.go; a value that would not
-- is kept as it is.
--
-- The table is rebuilt: the Go step encode_records (rowmig.go) copies the
-- rows in id order, encoded by the writer's own functions; the indexes are
-- then built once, over the packed table. The old table's pages become free
-- pages, reused by later writes (VACUUM returns them to the file system).
-- The planner's statistics of record, dropped with it, are taken again.

CREATE TABLE record_new (
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
    uid         TEXT    NOT NULL DEFAULT '', -- TEXT, or a canonical UUID as a 16-byte BLOB
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
    audit_id    TEXT    NOT NULL DEFAULT '', -- TEXT, or a canonical UUID as a 16-byte BLOB
    uri_tpl     INTEGER NOT NULL DEFAULT 0,  -- strs: the URI's path, namespace \x01, name \x02
    uri         TEXT    NOT NULL DEFAULT '', -- the rest of the URI (all of it when uri_tpl is 0)
    message     TEXT    NOT NULL DEFAULT '',
    run_id      INTEGER NOT NULL REFERENCES ingest_run (id),
    line        INTEGER NOT NULL DEFAULT 0,
    extra       TEXT,                        -- JSON object, when kept whole; else NULL
    extra_dict  INTEGER NOT NULL DEFAULT 0,  -- strs: the split JSON's middle
    extra_head  TEXT    NOT NULL DEFAULT '', -- the split JSON before it
    extra_tail  TEXT    NOT NULL DEFAULT ''  -- the split JSON after it
);

-- go: encode_records

DROP TABLE record;
ALTER TABLE record_new RENAME TO record;
-- The keys of 0011_time_key.sql, built here once rather than built old
-- and rebuilt by 0011 (which only converts a file migrated before it).
CREATE UNIQUE INDEX record_time_key ON record (time_ns, key);
CREATE UNIQUE INDEX record_key_whole ON record (key) WHERE stages = 0;
CREATE INDEX record_user ON record (user, time_ns);
CREATE INDEX record_resource ON record (resource, verb, time_ns);
CREATE INDEX record_object ON record (namespace, name, time_ns);
CREATE INDEX record_error ON record (code, time_ns) WHERE code >= 400;
CREATE INDEX record_reason ON record (reason, time_ns) WHERE reason != 0;

-- go: analyze_records
