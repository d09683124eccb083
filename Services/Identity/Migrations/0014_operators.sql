-- Operator accounts (docs/identity.md, "Operators"): the people who use the admin methods, with a role and a
-- publisher scope, logging in with email, password and a TOTP code; and the audit log's record of their writes.

CREATE TABLE operators (
    id                  uuid PRIMARY KEY,
    -- Stored as given; unique without case.
    email               text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
    role                text NOT NULL CHECK (role IN ('viewer', 'support', 'operator', 'owner')),
    -- NULL: every publisher, which only an owner may have.
    publisher_id        uuid REFERENCES publishers (id),
    CHECK (publisher_id IS NOT NULL OR role = 'owner'),
    -- scrypt, like players' passwords; NULL until enrolment.
    password_hash       text,
    -- The TOTP secret, sealed under RAVE_SECRET_KEY_FILE for this row (`rave.identity.operators:<id>`).
    totp_secret_sealed  bytea,
    -- The last accepted TOTP step: each code is accepted once.
    totp_last_step      bigint NOT NULL DEFAULT 0,
    -- The single-use enrolment code, as SHA-256; cleared by the first login (which sets enrolled_at).
    enrolment_code_hash bytea UNIQUE,
    enrolment_expires_at timestamptz,
    enrolled_at         timestamptz,
    disabled_at         timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    CHECK (enrolled_at IS NULL OR (password_hash IS NOT NULL AND totp_secret_sealed IS NOT NULL))
);
CREATE UNIQUE INDEX operators_email ON operators (lower(email));

-- Operator sessions: short-lived access tokens renewed with a rotating refresh token, within an idle and an
-- absolute limit. Ending one publishes it on the revocation feed (session_revocations), like a player's session.
CREATE TABLE operator_sessions (
    id              uuid PRIMARY KEY,
    operator_id     uuid NOT NULL REFERENCES operators (id),
    -- The refresh token generation that is current; an older one coming back ends the session.
    generation      integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_used_at    timestamptz NOT NULL DEFAULT now(),
    -- The absolute limit: no refresh extends it.
    expires_at      timestamptz NOT NULL,
    revoked_at      timestamptz,
    revoked_reason  text CHECK (revoked_reason IN ('logout', 'reuse', 'disabled', 'role'))
);
CREATE INDEX operator_sessions_operator ON operator_sessions (operator_id) WHERE revoked_at IS NULL;

CREATE TABLE operator_refresh_tokens (
    token_hash  bytea PRIMARY KEY,
    session_id  uuid NOT NULL REFERENCES operator_sessions (id),
    generation  integer NOT NULL
);

-- The audit log learns who else acts and what: operators (actor = email, operator_id = the account), writes the
-- gateway records for the service that serves them (action admin_call, the method and the request, secrets
-- redacted), and operator actions (target_operator_id). The action is checked for form rather than listed, so each
-- feature that records a new action needs no change of this constraint.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_actor_kind_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_actor_kind_check
    CHECK (actor_kind IN ('admin_certificate', 'operator'));
ALTER TABLE audit_events DROP CONSTRAINT audit_events_action_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_action_check CHECK (action ~ '^[a-z][a-z_]{0,63}$');
ALTER TABLE audit_events ADD COLUMN operator_id uuid REFERENCES operators (id);
ALTER TABLE audit_events ADD CONSTRAINT audit_events_operator_check
    CHECK ((actor_kind = 'operator') = (operator_id IS NOT NULL));
ALTER TABLE audit_events ADD COLUMN method text CHECK (length(method) <= 200);
ALTER TABLE audit_events ADD COLUMN request jsonb;
ALTER TABLE audit_events ADD COLUMN target_operator_id uuid;
CREATE INDEX audit_events_operator ON audit_events (operator_id, id) WHERE operator_id IS NOT NULL;

-- The outcome of a write the gateway recorded before forwarding it: appended once, when the service answered. An
-- entry without an outcome is a write whose result is unknown (the gateway stopped, or identity was unreachable
-- when it finished). Append-only like the events.
-- No foreign key to audit_events (the insert finds the event itself): one would make TRUNCATE audit_events fail on
-- the reference before its own append-only trigger could refuse it, with a less telling message.
CREATE TABLE audit_outcomes (
    event_id        bigint PRIMARY KEY,
    finished_at     timestamptz NOT NULL,
    status_code     integer NOT NULL CHECK (status_code BETWEEN 0 AND 16),
    status_message  text NOT NULL CHECK (length(status_message) <= 1000)
);
CREATE FUNCTION audit_outcomes_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_outcomes is append-only: % is refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_outcomes_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_outcomes
    FOR EACH STATEMENT EXECUTE FUNCTION audit_outcomes_refuse_change();
