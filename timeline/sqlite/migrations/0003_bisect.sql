-- 0003: bisect sessions, by hand: the instants a user marked good, bad or
-- skipped while searching for the earliest known-bad instant of an incident.
-- At most one session is open (ended_ns = 0); ended sessions are kept.
CREATE TABLE bisect_session (
    id         INTEGER PRIMARY KEY,
    started_ns INTEGER NOT NULL,            -- wall clock
    ended_ns   INTEGER NOT NULL DEFAULT 0   -- wall clock; 0 while open
);
CREATE UNIQUE INDEX bisect_session_open ON bisect_session (ended_ns) WHERE ended_ns = 0;

CREATE TABLE bisect_mark (
    id         INTEGER PRIMARY KEY,         -- the order marks were made in
    session_id INTEGER NOT NULL REFERENCES bisect_session (id),
    kind       TEXT    NOT NULL CHECK (kind IN ('good', 'bad', 'skip')),
    time_ns    INTEGER NOT NULL,            -- the instant marked, UTC ns
    note       TEXT    NOT NULL DEFAULT '',
    created_ns INTEGER NOT NULL             -- wall clock
);
CREATE INDEX bisect_mark_session ON bisect_mark (session_id, id);
