-- Slow requests (Store.SlowRequests) in a table of their own, as the
-- ClickHouse store keeps them: one row for each request record that
-- rollup.Slow keeps, by time, with its rollup class and the values the
-- analyses read. The writer keeps it as its records' stages join (a later
-- stage may make a request slow, or no longer slow). Read from record,
-- through record_slow, each slow request cost a row of the record table
-- and the lookups of its strings: on the 10 M-line benchmark log, 160,000
-- scattered rows, over 40 % of controlplane's CPU.
CREATE TABLE req_slow (
    time_ns    INTEGER NOT NULL, -- the request's time (record.time_ns)
    rec        INTEGER NOT NULL, -- record.id
    class      INTEGER NOT NULL, -- req_class.id
    latency_ns INTEGER NOT NULL,
    apf_ns     INTEGER NOT NULL, -- its APF queue wait
    code       INTEGER NOT NULL,
    etcd       INTEGER NOT NULL, -- 1: a list whose semantics read etcd
    PRIMARY KEY (time_ns, rec)
) WITHOUT ROWID;
-- The rows of the records already held, read through record_slow, which
-- nothing reads after them.
-- go: fill_slow
DROP INDEX IF EXISTS record_slow;
