-- Object versions by time: the timeline's bounds and the versions inside a
-- bisect window are read without scanning every version.
CREATE INDEX object_version_time ON object_version (time_ns);
