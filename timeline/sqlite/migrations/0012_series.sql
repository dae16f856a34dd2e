-- 0012: Prometheus evidence (ingest metrics): series and their raw samples.
--
-- Metric names, label names and label values are interned in series_str,
-- a dictionary of their own (not strs): a read of every series (the
-- cardinality analysis) loads it in one scan instead of looking up a
-- string per label.
CREATE TABLE series_str (
    id INTEGER PRIMARY KEY,
    s  TEXT NOT NULL UNIQUE
);
-- A series is keyed by timeline.SeriesID, a hash of its metric and sorted
-- labels, so a writer places a sample without a lookup, and both stores
-- give a series the same id. metric is a series_str id; labels a BLOB of
-- unsigned varint pairs, name id then value id, in label-name order.
-- first_ns and last_ns bound its samples' times.
CREATE TABLE series (
    id       INTEGER PRIMARY KEY,
    metric   INTEGER NOT NULL,
    labels   BLOB    NOT NULL,
    first_ns INTEGER NOT NULL,
    last_ns  INTEGER NOT NULL,
    run_id   INTEGER NOT NULL   -- the run that first brought it
);
CREATE INDEX series_metric ON series (metric);
-- Raw samples as they came, never downsampled: one row per (series,
-- time). The first value given for a (series, time) is kept. value is
-- NULL for NaN (SQLite stores no NaN).
CREATE TABLE sample (
    series  INTEGER NOT NULL,
    time_ns INTEGER NOT NULL,
    value   REAL,
    run_id  INTEGER NOT NULL,
    PRIMARY KEY (series, time_ns)
) WITHOUT ROWID;
