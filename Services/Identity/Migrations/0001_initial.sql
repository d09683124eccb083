-- The identity schema: publishers and applications, users and their credentials, sessions, merges, two-factor.
-- Rave IDs are uuid; times are timestamptz (UTC).

CREATE TABLE publishers (
    id          uuid PRIMARY KEY,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE applications (
    id                      uuid PRIMARY KEY,
    publisher_id            uuid NOT NULL REFERENCES publishers (id),
    name                    text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    display_name_scope      text NOT NULL DEFAULT 'global' CHECK (display_name_scope IN ('global', 'application')),
    picture_scope           text NOT NULL DEFAULT 'global' CHECK (picture_scope IN ('global', 'application')),
    allow_force_disconnect  boolean NOT NULL DEFAULT false,
    merge_policy            text NOT NULL DEFAULT 'none' CHECK (merge_policy IN ('none', 'prompt', 'automatic')),
    two_factor_allowed      boolean NOT NULL DEFAULT false,
    cross_app_login         boolean NOT NULL DEFAULT true,
    created_at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX applications_publisher ON applications (publisher_id);

CREATE TABLE users (
    id              uuid PRIMARY KEY,
    username        text CHECK (username ~ '^[A-Za-z0-9_.-]{3,32}$'),
    display_name    text CHECK (length(display_name) BETWEEN 1 AND 64),
    picture_url     text CHECK (length(picture_url) BETWEEN 1 AND 1024),
    email           text CHECK (length(email) BETWEEN 3 AND 254),
    email_verified  boolean NOT NULL DEFAULT false,
    birth_date      date,
    birth_year      integer CHECK (birth_year BETWEEN 1900 AND 2200),
    gender          text CHECK (length(gender) BETWEEN 1 AND 32),
    country         text CHECK (country ~ '^[A-Z]{2}$'),
    newsletter_opt_in boolean NOT NULL DEFAULT false,
    -- Set when the user was merged into another; such a row keeps only its id.
    merged_into     uuid REFERENCES users (id),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (merged_into IS NULL OR merged_into <> id)
);
-- Usernames compare without case; emails are unique only once verified (a typo must not lock out the owner).
CREATE UNIQUE INDEX users_username ON users (lower(username)) WHERE username IS NOT NULL;
CREATE UNIQUE INDEX users_verified_email ON users (lower(email)) WHERE email_verified;
CREATE INDEX users_email ON users (lower(email)) WHERE email IS NOT NULL;

-- Display names and pictures of applications whose settings use application scope.
CREATE TABLE user_app_profiles (
    user_id       uuid NOT NULL REFERENCES users (id),
    app_id        uuid NOT NULL REFERENCES applications (id),
    display_name  text CHECK (length(display_name) BETWEEN 1 AND 64),
    picture_url   text CHECK (length(picture_url) BETWEEN 1 AND 1024),
    PRIMARY KEY (user_id, app_id)
);

CREATE TABLE password_credentials (
    user_id     uuid PRIMARY KEY REFERENCES users (id),
    -- The login email: unique, unlike a profile email, which is unique only once verified.
    email       text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
    -- Self-describing: "scrypt$N$r$p$salt$hash", so parameters can change per user.
    hash        text NOT NULL CHECK (hash LIKE 'scrypt$%'),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX password_credentials_email ON password_credentials (lower(email));

CREATE TABLE provider_links (
    provider    text NOT NULL CHECK (provider IN ('google', 'apple', 'facebook')),
    subject     text NOT NULL CHECK (length(subject) BETWEEN 1 AND 255),
    user_id     uuid NOT NULL REFERENCES users (id),
    email       text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, subject),
    -- One link per provider per user: a second account of the same provider replaces the first.
    UNIQUE (user_id, provider)
);

CREATE TABLE devices (
    user_id        uuid NOT NULL REFERENCES users (id),
    device_id      text NOT NULL CHECK (length(device_id) BETWEEN 1 AND 128),
    name           text NOT NULL DEFAULT '' CHECK (length(name) <= 128),
    platform       text NOT NULL DEFAULT '' CHECK (length(platform) <= 64),
    first_seen_at  timestamptz NOT NULL DEFAULT now(),
    last_seen_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, device_id)
);

-- Which user a device plays as in an application (guest login returns it).
CREATE TABLE device_logins (
    app_id       uuid NOT NULL REFERENCES applications (id),
    device_id    text NOT NULL CHECK (length(device_id) BETWEEN 1 AND 128),
    user_id      uuid NOT NULL REFERENCES users (id),
    -- Cleared by logout: cross-app login stops until the next explicit login.
    cross_app    boolean NOT NULL DEFAULT false,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, device_id)
);
CREATE INDEX device_logins_device ON device_logins (device_id) WHERE cross_app;

-- Users who played an application (UsedApplications, random users).
CREATE TABLE app_users (
    app_id         uuid NOT NULL REFERENCES applications (id),
    user_id        uuid NOT NULL REFERENCES users (id),
    first_seen_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, user_id)
);

-- A session is a refresh-token family.
CREATE TABLE sessions (
    id            uuid PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id),
    app_id        uuid NOT NULL REFERENCES applications (id),
    device_id     text NOT NULL CHECK (length(device_id) BETWEEN 1 AND 128),
    -- Rotation counter: the generation of the only refresh token that is still valid.
    generation    integer NOT NULL DEFAULT 0 CHECK (generation >= 0),
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    revoked_at    timestamptz,
    revoked_reason text CHECK (revoked_reason IN ('logout', 'revoked', 'reuse', 'merge'))
);
CREATE INDEX sessions_user ON sessions (user_id) WHERE revoked_at IS NULL;

CREATE TABLE refresh_tokens (
    -- SHA-256 of the opaque token: a stolen table does not yield usable tokens.
    token_hash   bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    session_id   uuid NOT NULL REFERENCES sessions (id),
    generation   integer NOT NULL CHECK (generation >= 0),
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (session_id, generation)
);

CREATE TABLE signing_keys (
    kid          text PRIMARY KEY CHECK (length(kid) BETWEEN 1 AND 64),
    private_key  text NOT NULL,
    public_key   bytea NOT NULL CHECK (length(public_key) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    retired_at   timestamptz
);

-- source → target, forever: ResolveUsers follows these.
CREATE TABLE merged_identities (
    source_user_id  uuid PRIMARY KEY REFERENCES users (id),
    target_user_id  uuid NOT NULL REFERENCES users (id),
    merge_id        uuid NOT NULL,
    merged_at       timestamptz NOT NULL DEFAULT now(),
    CHECK (source_user_id <> target_user_id)
);
CREATE INDEX merged_identities_target ON merged_identities (target_user_id);

-- The merge saga: one row per merge, one per participant that must acknowledge it.
CREATE TABLE merges (
    id              uuid PRIMARY KEY,
    source_user_id  uuid NOT NULL UNIQUE REFERENCES users (id),
    target_user_id  uuid NOT NULL REFERENCES users (id),
    state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'completed')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    completed_at    timestamptz,
    CHECK (source_user_id <> target_user_id)
);

CREATE TABLE merge_participants (
    merge_id         uuid NOT NULL REFERENCES merges (id),
    participant      text NOT NULL,
    attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    acknowledged_at  timestamptz,
    last_error       text,
    PRIMARY KEY (merge_id, participant)
);

CREATE TABLE app_data_keys (
    user_id       uuid NOT NULL REFERENCES users (id),
    app_id        uuid NOT NULL REFERENCES applications (id),
    -- NULL while candidates wait for the app to choose.
    selected_key  text CHECK (selected_key ~ '^[0-9a-f]{32}$'),
    PRIMARY KEY (user_id, app_id)
);

CREATE TABLE app_data_key_candidates (
    user_id  uuid NOT NULL,
    app_id   uuid NOT NULL,
    key      text NOT NULL CHECK (key ~ '^[0-9a-f]{32}$'),
    PRIMARY KEY (user_id, app_id, key),
    FOREIGN KEY (user_id, app_id) REFERENCES app_data_keys (user_id, app_id)
);

CREATE TABLE two_factor (
    user_id       uuid PRIMARY KEY REFERENCES users (id),
    secret        bytea NOT NULL,
    confirmed_at  timestamptz,
    -- The last accepted TOTP step: a code is accepted once.
    last_step     bigint NOT NULL DEFAULT 0
);

CREATE TABLE two_factor_backup_codes (
    user_id    uuid NOT NULL REFERENCES two_factor (user_id) ON DELETE CASCADE,
    code_hash  bytea NOT NULL CHECK (length(code_hash) = 32),
    used_at    timestamptz,
    PRIMARY KEY (user_id, code_hash)
);

CREATE TABLE two_factor_challenges (
    id          uuid PRIMARY KEY,
    user_id     uuid NOT NULL REFERENCES users (id),
    app_id      uuid NOT NULL REFERENCES applications (id),
    device_id   text NOT NULL,
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz
);

-- Failed logins per key ("account:<uuid>" or "address:<ip>"); lockouts grow with repeated failures.
CREATE TABLE login_attempts (
    key           text PRIMARY KEY,
    failures      integer NOT NULL DEFAULT 0 CHECK (failures >= 0),
    lockouts      integer NOT NULL DEFAULT 0 CHECK (lockouts >= 0),
    locked_until  timestamptz,
    updated_at    timestamptz NOT NULL DEFAULT now()
);
