-- Operators list merges newest first, all of them or a player's (IdentityAdmin/ListMerges): without these, each
-- page read every merge and sorted them. The source side already has the UNIQUE index of its column.
CREATE INDEX merges_by_time ON merges (created_at DESC, id DESC);
CREATE INDEX merges_by_target ON merges (target_user_id);
