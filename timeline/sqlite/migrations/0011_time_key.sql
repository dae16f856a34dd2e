-- Keys whose locality follows time. The natural key of a record with audit
-- stages (an API request: audit ID + request-received time) pins its time,
-- so such a record is unique by (time_ns, key): one index that both orders
-- the timeline and keeps ingest idempotent, and that a log written in time
-- order appends to at its end instead of touching a random page of a
-- 64-bit-hash index per record. Records without stages (Events, deletions,
-- artifact versions, audit lines without an ID) are whole things whose key
-- does not pin a time (a deletion seen in a watch and inferred from a LIST
-- is one record at two times): they stay unique by key alone, in a partial
-- index only they enter.
-- (0010 builds these already; a file migrated to 0010 before it did gets
-- them here.)
CREATE UNIQUE INDEX IF NOT EXISTS record_time_key ON record (time_ns, key);
CREATE UNIQUE INDEX IF NOT EXISTS record_key_whole ON record (key) WHERE stages = 0;
DROP INDEX IF EXISTS record_key;
DROP INDEX IF EXISTS record_time;
