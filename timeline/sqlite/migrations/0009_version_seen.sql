-- How a version's time was learned (timeline.Sighting): 0 the write that
-- made it, 1 a read that returned it, 2 its own metadata (a dump). One
-- version seen twice keeps the best sighting, then the earliest.
ALTER TABLE object_version ADD COLUMN seen INTEGER NOT NULL DEFAULT 0;
