-- Records kept beside another with the same natural key and other content
-- (timeline.Conflict), per run.
ALTER TABLE ingest_run ADD COLUMN conflicts INTEGER NOT NULL DEFAULT 0;
