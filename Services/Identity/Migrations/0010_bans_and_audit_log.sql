-- Bans and the audit log of operator actions (docs/identity.md, "Bans" and "Audit log").

-- At most one ban per user, always on the account itself (a ban of a merged-away id is written for its merge
-- target, and a banned user cannot be merged). A ban whose until_at has passed no longer applies, with nothing to
-- clean up; lifting a ban deletes its row. The history of bans is the audit log.
CREATE TABLE user_bans (
    user_id    uuid PRIMARY KEY REFERENCES users (id),
    -- Shown to the player.
    reason     text NOT NULL CHECK (length(reason) BETWEEN 1 AND 500),
    -- NULL: until an operator lifts it.
    until_at   timestamptz,
    banned_at  timestamptz NOT NULL
);

-- What operators did, written in the transaction of the change itself. Append-only: the triggers below refuse every
-- UPDATE, DELETE and TRUNCATE, whoever asks (short of the table's owner disabling them, which is itself a schema
-- change).
CREATE TABLE audit_events (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at     timestamptz NOT NULL,
    -- Who: the admin client certificate (actor = its common name); operator accounts will add a kind.
    actor_kind      text NOT NULL CHECK (actor_kind IN ('admin_certificate')),
    actor           text NOT NULL CHECK (length(actor) BETWEEN 1 AND 256),
    action          text NOT NULL CHECK (action IN ('ban_user', 'unban_user')),
    target_user_id  uuid,
    reason          text NOT NULL CHECK (length(reason) BETWEEN 1 AND 500),
    -- The target's state before and after the action.
    before_state    jsonb NOT NULL,
    after_state     jsonb NOT NULL
);
-- Listing is newest first, by user or by time.
CREATE INDEX audit_events_target ON audit_events (target_user_id, id) WHERE target_user_id IS NOT NULL;
CREATE INDEX audit_events_occurred_at ON audit_events (occurred_at);

CREATE FUNCTION audit_events_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_events is append-only: % is refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
-- Statement triggers, so even an UPDATE or DELETE that matches no row is refused.
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_refuse_change();
