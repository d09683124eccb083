-- Push consumes other services' events (docs/events.md): processed_events is Outbox.migration's receiver table
-- (Shared/RaveOutbox, copied verbatim), so each event becomes exactly one notification.
CREATE TABLE processed_events (
    event_id uuid PRIMARY KEY,
    processed_at timestamptz NOT NULL DEFAULT now()
);

-- An app's notification texts per event topic and language, overriding the built-in ones.
CREATE TABLE notification_templates (
    app_id text NOT NULL,
    topic text NOT NULL,
    language text NOT NULL,
    title text NOT NULL,
    body text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, topic, language)
);

-- The language whose templates serve devices of languages the app has no template for.
CREATE TABLE app_languages (
    app_id text PRIMARY KEY,
    default_language text NOT NULL
);
