-- The window a run kept records of (ingest audit --since/--until), NULL
-- for an open bound, and how many audit events it read outside it: read
-- and counted, not stored.
ALTER TABLE ingest_run ADD COLUMN since_ns INTEGER;
ALTER TABLE ingest_run ADD COLUMN until_ns INTEGER;
ALTER TABLE ingest_run ADD COLUMN outside INTEGER NOT NULL DEFAULT 0;
