-- Account deletion (docs/identity.md, "Deleting an account"): a deletion is scheduled after a grace period (a login
-- cancels it), then identity erases its own data in one transaction and tells every participant service
-- (rave.erasure.v1.ErasureParticipant/EraseUser) through the outbox, like a merge.

-- A deleted user keeps only its id, so the id is never handed out again and no token or refresh acts as it.
ALTER TABLE users ADD COLUMN deleted_at timestamptz;

-- One row per deletion asked for. `tombstone_id` (the id participants put in place of the user's in rows they must
-- keep) exists only while the deletion is started: once every participant acknowledged, nothing in identity links
-- the user to it. `merged_user_ids` (the ids merged into the user, erased with it) is kept as long, for the same
-- reason.
CREATE TABLE account_deletions (
    id               uuid PRIMARY KEY,
    -- Orders the list newest first and pages it.
    seq              bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    user_id          uuid NOT NULL REFERENCES users (id),
    status           text NOT NULL CHECK (status IN ('scheduled', 'cancelled', 'started', 'completed')),
    requested_by     text NOT NULL CHECK (requested_by IN ('player', 'operator')),
    requested_at     timestamptz NOT NULL,
    due_at           timestamptz NOT NULL,
    started_at       timestamptz,
    completed_at     timestamptz,
    cancelled_at     timestamptz,
    cancelled_by     text CHECK (cancelled_by IN ('login', 'operator')),
    tombstone_id     uuid,
    merged_user_ids  uuid[] NOT NULL DEFAULT '{}',
    CONSTRAINT account_deletions_tombstone_while_started CHECK ((status = 'started') = (tombstone_id IS NOT NULL)),
    CONSTRAINT account_deletions_cancelled CHECK ((status = 'cancelled') = (cancelled_at IS NOT NULL))
);
-- At most one deletion in progress per user.
CREATE UNIQUE INDEX account_deletions_live ON account_deletions (user_id) WHERE status IN ('scheduled', 'started');
-- The poller's question: which scheduled deletions are due.
CREATE INDEX account_deletions_due ON account_deletions (due_at) WHERE status = 'scheduled';
CREATE INDEX account_deletions_by_status ON account_deletions (status, seq);

-- One row per participant that must erase the user, as merge_participants is for merges. The outbox event that
-- carries the request names only the deletion: the delivery reads the user, the merged ids and the tombstone from
-- account_deletions, so once the tombstone is cleared no event links it to anyone.
CREATE TABLE account_deletion_participants (
    deletion_id      uuid NOT NULL REFERENCES account_deletions (id),
    participant      text NOT NULL,
    attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    acknowledged_at  timestamptz,
    last_error       text,
    PRIMARY KEY (deletion_id, participant)
);

-- Operators force and cancel deletions; both are audited.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_action_check,
    ADD CONSTRAINT audit_events_action_check
        CHECK (action IN ('ban_user', 'unban_user', 'force_account_deletion', 'cancel_account_deletion'));

-- Scheduling a deletion ends every session of the player.
ALTER TABLE sessions DROP CONSTRAINT sessions_revoked_reason_check;
ALTER TABLE sessions ADD CONSTRAINT sessions_revoked_reason_check
    CHECK (revoked_reason IN ('logout', 'revoked', 'reuse', 'merge', 'two_factor', 'password', 'ban', 'deletion'));
