-- Account exports (docs/identity.md, "Exporting an account"): an archive of everything the platform holds about a
-- player, assembled by identity's export worker from its own tables and every participant's pages
-- (rave.export.v1.ExportParticipant/ExportUser), kept for the retention period and then deleted.

CREATE TABLE account_exports (
    id              uuid PRIMARY KEY,
    user_id         uuid NOT NULL REFERENCES users (id),
    status          text NOT NULL CHECK (status IN ('pending', 'ready', 'failed', 'expired')),
    requested_by    text NOT NULL CHECK (requested_by IN ('player', 'operator')),
    -- The application and language of the mail that says the export is ready.
    app_id          uuid,
    language        text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    -- When a worker may (next) take a pending export: a claim pushes it ahead by the claim's lease, a failure by
    -- the backoff.
    next_attempt_at timestamptz NOT NULL,
    attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- The first failure of the current run of failures; cleared by a success.
    failing_since   timestamptz,
    last_error      text,
    ready_at        timestamptz,
    expires_at      timestamptz,
    failed_at       timestamptz,
    size_bytes      bigint CHECK (size_bytes >= 0),
    sha256          bytea CHECK (length(sha256) = 32),
    CONSTRAINT account_exports_ready CHECK (status <> 'ready' OR (sha256 IS NOT NULL AND expires_at IS NOT NULL))
);
-- At most one export in progress per user.
CREATE UNIQUE INDEX account_exports_pending ON account_exports (user_id) WHERE status = 'pending';
CREATE INDEX account_exports_user ON account_exports (user_id, created_at);
-- The worker's questions: which pending exports may be taken, which ready ones have expired.
CREATE INDEX account_exports_next ON account_exports (next_attempt_at) WHERE status = 'pending';
CREATE INDEX account_exports_expiry ON account_exports (expires_at) WHERE status = 'ready';

-- The archive, in pieces of at most 1 MiB, numbered from 0.
CREATE TABLE account_export_chunks (
    export_id  uuid NOT NULL REFERENCES account_exports (id),
    seq        integer NOT NULL CHECK (seq >= 0),
    -- Where this piece starts in the archive, so a download finds it by offset.
    start_at   bigint NOT NULL CHECK (start_at >= 0),
    data       bytea NOT NULL CHECK (length(data) BETWEEN 1 AND 1048576),
    PRIMARY KEY (export_id, seq)
);

-- The mail that says an export is ready.
ALTER TABLE mail_templates DROP CONSTRAINT mail_templates_kind_check,
    ADD CONSTRAINT mail_templates_kind_check CHECK (kind IN ('verify_email', 'password_reset', 'export_ready'));
