-- 0002: where each follow-mode watch stands, so a restarted follow resumes
-- from the resourceVersion it had committed, with the records it had
-- committed (both are written in the same transaction).
CREATE TABLE watch_cursor (
    name             TEXT PRIMARY KEY,  -- cluster resource key, e.g. "/v1/pods"
    resource_version TEXT    NOT NULL,
    updated_ns       INTEGER NOT NULL
) WITHOUT ROWID;
