-- Push: device tokens with consent, notifications, one delivery row per (notification, device), and the inbox.

-- A device token belongs to one user at a time: registering it again (by anyone) moves it to that user.
CREATE TABLE device_tokens (
    token_id uuid PRIMARY KEY,
    app_id text NOT NULL,
    user_id uuid NOT NULL,
    platform smallint NOT NULL CHECK (platform IN (1, 2)),
    token text NOT NULL CHECK (length(token) BETWEEN 1 AND 4096),
    sandbox boolean NOT NULL,
    consent_push boolean NOT NULL,
    consent_advertising boolean NOT NULL,
    consent_night_advertising boolean NOT NULL,
    option_foreground boolean NOT NULL,
    option_badge boolean NOT NULL,
    option_sound boolean NOT NULL,
    country text NOT NULL,
    language text NOT NULL,
    time_zone text NOT NULL,
    registered_at timestamptz NOT NULL,
    UNIQUE (platform, token)
);
CREATE INDEX device_tokens_by_user ON device_tokens (app_id, user_id);

CREATE TABLE notifications (
    notification_id uuid PRIMARY KEY,
    app_id text NOT NULL,
    -- The SendNotification request (protobuf): workers build payloads from it and a replay is compared with it.
    request bytea NOT NULL,
    queued integer NOT NULL,
    held integer NOT NULL,
    skipped integer NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);

-- state: 1 pending, 2 held (until the device's morning), 3 delivered, 4 failed, 5 expired, 6 skipped.
-- A worker claims a due row by pushing next_attempt_at past a lease; a crash leaves it due again later.
CREATE TABLE deliveries (
    notification_id uuid NOT NULL REFERENCES notifications (notification_id),
    token_id uuid NOT NULL,
    user_id uuid NOT NULL,
    platform smallint NOT NULL,
    token text NOT NULL,
    sandbox boolean NOT NULL,
    state smallint NOT NULL CHECK (state BETWEEN 1 AND 6),
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    last_result text NOT NULL DEFAULT '',
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (notification_id, token_id)
);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE state IN (1, 2);

CREATE TABLE inbox_entries (
    user_id uuid NOT NULL,
    notification_id uuid NOT NULL REFERENCES notifications (notification_id),
    app_id text NOT NULL,
    read boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, notification_id)
);
CREATE INDEX inbox_entries_listing ON inbox_entries (user_id, app_id, read, created_at DESC);

CREATE TABLE merges (
    merge_id text PRIMARY KEY,
    source_user_id uuid NOT NULL,
    target_user_id uuid NOT NULL
);
