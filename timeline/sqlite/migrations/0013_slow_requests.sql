-- Slow requests by time (Store.SlowRequests). The rollup keeps latency by
-- minute; an episode of slow requests to etcd lasts seconds, and the few
-- requests over timeline.SlowLatency (250 ms) are read one by one, through
-- this partial index of them: only slow records enter it, and their verb
-- is in it, so the verbs SlowRequests leaves out (watches, gets) are
-- skipped without a row fetch. A query uses it only when its WHERE holds
-- the same literal term.
CREATE INDEX IF NOT EXISTS record_slow ON record (time_ns, verb) WHERE latency_ns >= 250000000;
