-- The revocation feed: every session that ends gets a row, so the gateway (which verifies access tokens offline)
-- can refuse that session's access tokens within a poll instead of when they expire (IdentityInternal/
-- ListRevocations).
--
-- Rows are numbered from a one-row counter that the revoking statement updates: its row lock is held until the
-- transaction commits, so numbers are handed out in commit order and a reader that has seen number n has seen every
-- row below n (a sequence would hand out numbers at insert time, and a later number could commit first and let a
-- poller's cursor skip the earlier one). Revocations are rare next to logins, so one counter row is no hot spot.
CREATE TABLE revocation_counter (
    id    boolean PRIMARY KEY DEFAULT true CHECK (id),
    last  bigint NOT NULL DEFAULT 0 CHECK (last >= 0)
);
INSERT INTO revocation_counter DEFAULT VALUES;

CREATE TABLE session_revocations (
    -- Shared by the sessions one statement ended (a user's every session): they appear together.
    seq         bigint NOT NULL CHECK (seq > 0),
    session_id  uuid NOT NULL,
    revoked_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (seq, session_id)
);
-- A gateway starting with cursor 0 reads only the revocations whose tokens may still be live.
CREATE INDEX session_revocations_revoked_at ON session_revocations (revoked_at);

-- Sessions also end when two-factor is switched on or off (every other session of the account), and later on a
-- password change or a ban.
ALTER TABLE sessions DROP CONSTRAINT sessions_revoked_reason_check;
ALTER TABLE sessions ADD CONSTRAINT sessions_revoked_reason_check
    CHECK (revoked_reason IN ('logout', 'revoked', 'reuse', 'merge', 'two_factor', 'password', 'ban'));
