-- The transactional outbox (Shared/RaveOutbox `Outbox.migration`, copied verbatim): a new friend request writes a
-- "social.friend_request_received" event in the request's own transaction, for EventPublisher to deliver.
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
