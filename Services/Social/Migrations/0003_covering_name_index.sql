-- A page ordered by name reads peer, sort name and since-when: carrying created_at in the name index makes it an
-- index-only scan (no heap visit per row). It replaces edges_by_name, which it covers.
CREATE INDEX edges_by_name_covering ON edges (list_id, owner_id, direction, sort_name, peer_id) INCLUDE (created_at);
DROP INDEX edges_by_name;
