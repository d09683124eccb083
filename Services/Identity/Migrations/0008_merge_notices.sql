-- Merges on the revocation feed: when a user is merged away, the gateway forgets what it cached about that user
-- (its merge cache), so the user's tokens act as the target at once rather than after the cache's lifetime. The
-- services resolve merged ids themselves (their merged_users records); this is how fast the gateway follows.
--
-- Numbered from the same counter as session_revocations (migration 0004), so one cursor orders both in commit
-- order.
CREATE TABLE merge_notices (
    seq        bigint NOT NULL CHECK (seq > 0),
    user_id    uuid NOT NULL,
    noted_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (seq, user_id)
);
CREATE INDEX merge_notices_noted_at ON merge_notices (noted_at);
