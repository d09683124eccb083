-- The peer's lower-cased display name moves onto each edge, so a page ordered by name is a range scan of one index
-- (no join, no sort of the owner's whole list); the per-application profile cache it replaces goes.
ALTER TABLE edges ADD COLUMN sort_name text NOT NULL DEFAULT '';
CREATE INDEX edges_by_name ON edges (list_id, owner_id, direction, sort_name, peer_id);
DROP TABLE profiles;
