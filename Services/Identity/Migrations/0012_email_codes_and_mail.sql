-- Email verification and password reset (docs/identity.md, "Email"): single-use codes, stored as HMACs only, the
-- counters that bound how many mails a player or an address may ask for, and the applications' mail templates.
-- The mails themselves go through the outbox (topic identity.mail), their text sealed.

-- One live code per account and purpose; a new code replaces it. `email` is the address the code was mailed to
-- (for a reset: the login email when it was requested). `sets_login_email`: proving the address also makes it the
-- login email (ChangeEmail). `attempts` counts wrong codes; at 5 the code is dead.
CREATE TABLE email_codes (
    user_id          uuid NOT NULL,
    purpose          text NOT NULL CHECK (purpose IN ('verify', 'reset')),
    email            text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
    sets_login_email boolean NOT NULL DEFAULT false,
    code_hash        bytea NOT NULL CHECK (length(code_hash) = 32),
    attempts         int4 NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL,
    PRIMARY KEY (user_id, purpose)
);
CREATE INDEX email_codes_reset_email ON email_codes (lower(email)) WHERE purpose = 'reset';
CREATE INDEX email_codes_expiry ON email_codes (expires_at);

-- Mails asked for per key ("verify:<user>", "reset:email:<email>", "reset:address:<network>") in fixed windows.
CREATE TABLE mail_limits (
    key               text PRIMARY KEY,
    window_started_at timestamptz NOT NULL,
    count             int4 NOT NULL
);

-- Per application, kind and language (lower case BCP 47); a mail without one uses the built-in English text.
CREATE TABLE mail_templates (
    app_id     uuid NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('verify_email', 'password_reset')),
    language   text NOT NULL CHECK (language ~ '^[a-z]{2,3}(-[a-z0-9]{2,8})*$'),
    subject    text NOT NULL CHECK (length(subject) BETWEEN 1 AND 200),
    body       text NOT NULL CHECK (length(body) BETWEEN 1 AND 10000),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, kind, language)
);
