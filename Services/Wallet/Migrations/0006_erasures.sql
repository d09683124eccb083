-- Account deletion (docs/wallet.md, "Erasure"): the erasures applied here, so a repeated EraseUser changes
-- nothing. Only the erasure id (identity's deletion id) and when: no user id, no tombstone, so this table links
-- nothing to anyone.
CREATE TABLE erasures (
    erasure_id  text PRIMARY KEY CHECK (length(erasure_id) BETWEEN 1 AND 64),
    applied_at  timestamptz NOT NULL DEFAULT now()
);
