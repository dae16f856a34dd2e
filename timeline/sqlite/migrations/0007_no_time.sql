-- "No time" becomes the lowest int64 (-9223372036854775808), outside the
-- range of times a timeline holds, so that the Unix epoch (time_ns 0) is a
-- time like any other. Before, 0 meant both, and read back as "no time".
UPDATE record SET time_ns = -9223372036854775808 WHERE time_ns = 0;
UPDATE object_version SET time_ns = -9223372036854775808 WHERE time_ns = 0;
UPDATE bisect_mark SET time_ns = -9223372036854775808 WHERE time_ns = 0;
UPDATE ingest_run SET finished_ns = -9223372036854775808 WHERE finished_ns = 0;
UPDATE ingest_run SET first_ns = -9223372036854775808 WHERE first_ns = 0;
UPDATE ingest_run SET last_ns = -9223372036854775808 WHERE last_ns = 0;
