-- The failed requests (code >= 400) whole in record_error: every column of
-- record after (code, time_ns), so that a read of failures (investigate's
-- bad records, a --where on a code) is served by the index alone. Through
-- the old (code, time_ns) index, each failed request cost a seek into the
-- record table for its row: on the 10 M-line benchmark log, 88,622 rows
-- scattered over 2.5 GB, 77,643 pages missed from SQLite's cache, for every
-- investigate. Failures are a few percent of the records on a normal day
-- (2.6 % there), so the copy costs a few bytes per record; in a storm of
-- 429s or 5xx it grows with the storm, which is when it is read.
DROP INDEX IF EXISTS record_error;
CREATE INDEX record_error ON record (code, time_ns, key, source, api_group, api_version, resource, subresource,
    kind, namespace, name, uid, verb, reason, user, user_agent, source_ip, type, level, latency_ns, stages,
    audit_id, uri_tpl, uri, message, run_id, line, extra, extra_dict, extra_head, extra_tail) WHERE code >= 400;
-- go: forget_built
-- go: analyze_records
