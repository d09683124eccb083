-- Gift types, gifts, requests, share-with-gift invitations and install links (docs/gifts.md).
CREATE TABLE gift_types (
    id bigserial PRIMARY KEY,
    app_id uuid NOT NULL,
    key text NOT NULL,
    name text NOT NULL,
    image_url text NOT NULL DEFAULT '',
    requestable boolean NOT NULL DEFAULT false,
    expiry_seconds bigint NOT NULL CHECK (expiry_seconds > 0),
    daily_limit_per_sender int4 NOT NULL DEFAULT 0 CHECK (daily_limit_per_sender >= 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (app_id, key)
);

-- state: 0 pending, 1 accepted, 2 rejected. Expiry is not a stored state: a pending gift past expires_at is
-- expired, so nothing has to sweep the table for the rule to hold.
CREATE TABLE gifts (
    id uuid PRIMARY KEY,
    app_id uuid NOT NULL,
    gift_type_id bigint NOT NULL REFERENCES gift_types (id),
    sender_id uuid NOT NULL,
    recipient_id uuid NOT NULL,
    state int2 NOT NULL DEFAULT 0 CHECK (state IN (0, 1, 2)),
    sent_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL CHECK (expires_at > sent_at),
    responded_at timestamptz,
    request_id uuid,
    CHECK ((state = 0) = (responded_at IS NULL))
);
CREATE INDEX gifts_pending_by_recipient ON gifts (recipient_id, app_id, sent_at DESC, id DESC) WHERE state = 0;
CREATE INDEX gifts_by_sender ON gifts (sender_id);
CREATE INDEX gifts_by_recipient ON gifts (recipient_id);

-- state: 0 pending, 1 granted, 2 ignored.
CREATE TABLE gift_requests (
    id uuid PRIMARY KEY,
    app_id uuid NOT NULL,
    gift_type_id bigint NOT NULL REFERENCES gift_types (id),
    requester_id uuid NOT NULL,
    recipient_id uuid NOT NULL,
    state int2 NOT NULL DEFAULT 0 CHECK (state IN (0, 1, 2)),
    requested_at timestamptz NOT NULL,
    responded_at timestamptz,
    gift_id uuid REFERENCES gifts (id),
    CHECK ((state = 0) = (responded_at IS NULL)),
    CHECK ((state = 1) = (gift_id IS NOT NULL))
);
CREATE INDEX gift_requests_pending_by_recipient
    ON gift_requests (recipient_id, app_id, requested_at DESC, id DESC) WHERE state = 0;
CREATE INDEX gift_requests_by_requester ON gift_requests (requester_id);
CREATE INDEX gift_requests_by_recipient ON gift_requests (recipient_id);
ALTER TABLE gifts ADD FOREIGN KEY (request_id) REFERENCES gift_requests (id);
-- A request is granted at most once, so at most one gift answers it.
CREATE UNIQUE INDEX gifts_one_per_request ON gifts (request_id) WHERE request_id IS NOT NULL;

-- The first result of every idempotent call (SendGifts, RequestGifts), replayed verbatim.
CREATE TABLE idempotent_calls (
    sender_id uuid NOT NULL,
    operation text NOT NULL,
    idempotency_key text NOT NULL,
    fingerprint bytea NOT NULL,
    response bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (sender_id, operation, idempotency_key)
);

-- Gifts sent per sender, gift type and UTC day, for the daily limit. `granted` is what the last increment
-- allowed, so one upsert both checks and counts under the row lock.
CREATE TABLE daily_sends (
    sender_id uuid NOT NULL,
    gift_type_id bigint NOT NULL REFERENCES gift_types (id),
    day date NOT NULL,
    sent int4 NOT NULL CHECK (sent >= 0),
    granted int4 NOT NULL DEFAULT 0,
    PRIMARY KEY (sender_id, gift_type_id, day)
);

-- Share-with-gift: a gift waiting for an external contact to become a player. state: 0 pending, 1 delivered
-- (gift_id names the gift), 2 detached.
CREATE TABLE external_gifts (
    id uuid PRIMARY KEY,
    app_id uuid NOT NULL,
    gift_type_id bigint NOT NULL REFERENCES gift_types (id),
    sender_id uuid NOT NULL,
    provider int2 NOT NULL,
    subject text NOT NULL,
    request_id text NOT NULL,
    state int2 NOT NULL DEFAULT 0 CHECK (state IN (0, 1, 2)),
    created_at timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz,
    gift_id uuid REFERENCES gifts (id),
    CHECK ((state = 1) = (gift_id IS NOT NULL)),
    UNIQUE (app_id, sender_id, provider, subject, request_id)
);
CREATE INDEX external_gifts_pending_by_subject ON external_gifts (provider, subject) WHERE state = 0;
CREATE INDEX external_gifts_by_request ON external_gifts (app_id, request_id);
CREATE INDEX external_gifts_by_sender ON external_gifts (sender_id);

CREATE TABLE install_links (
    code text PRIMARY KEY,
    app_id uuid NOT NULL,
    creator_id uuid NOT NULL,
    gift_type_key text NOT NULL,
    request_id text NOT NULL,
    channel text NOT NULL,
    clicks bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX install_links_by_creator ON install_links (creator_id);

CREATE TABLE applied_merges (
    merge_id text PRIMARY KEY,
    source_id uuid NOT NULL,
    target_id uuid NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);
