-- The transactional outbox (Shared/RaveOutbox `Outbox.migration`, copied verbatim): merge events for participant
-- services are written in the merge's own transaction and delivered by an OutboxDispatcher.
CREATE TABLE outbox_events (
    id bigserial PRIMARY KEY,
    event_id uuid NOT NULL UNIQUE,
    topic text NOT NULL,
    key text NOT NULL,
    payload bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    attempts int4 NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    last_error text
);
CREATE INDEX outbox_events_due ON outbox_events (next_attempt_at, id) WHERE delivered_at IS NULL;
CREATE INDEX outbox_events_key_order ON outbox_events (key, id) WHERE delivered_at IS NULL;
CREATE TABLE processed_events (
    event_id uuid PRIMARY KEY,
    processed_at timestamptz NOT NULL DEFAULT now()
);

-- A guest who logs in to a two-factor account is merged into it only once the second factor is given, so an ID
-- token alone never lets the guest's sessions act as the protected account.
ALTER TABLE two_factor_challenges ADD COLUMN merge_source_user_id uuid REFERENCES users (id);
CREATE INDEX two_factor_challenges_user ON two_factor_challenges (user_id) WHERE used_at IS NULL;
