-- Account deletions applied here, by erasure id only (never the user's id), so a repeated EraseUser changes nothing
-- (docs/social.md, "Deleting an account"; RaveMerges.UserErasure).
CREATE TABLE applied_erasures (
    erasure_id text PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);
