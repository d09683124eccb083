-- Relationship lists, edges (both directions), per-list counts, requests, blocks, contacts, the profile cache
-- that orders lists by display name, and applied merges. See docs/social.md.

-- kind: 1 friends, 2 followers (rave.social.v1.ListKind); app_id NULL means global (publisher-wide).
CREATE TABLE lists (
    list_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    publisher_id uuid NOT NULL,
    app_id uuid,
    key text NOT NULL CHECK (length(key) BETWEEN 1 AND 64),
    kind smallint NOT NULL CHECK (kind IN (1, 2)),
    max_members integer NOT NULL CHECK (max_members > 0),
    created_at timestamptz NOT NULL DEFAULT now()
);
-- Default lists share their key across applications; custom keys are unique within a publisher (checked when
-- created), so this index is what makes "created on first use" race-free.
CREATE UNIQUE INDEX lists_owner_key ON lists (publisher_id, COALESCE(app_id, '00000000-0000-0000-0000-000000000000'), key);
CREATE INDEX lists_publisher_key ON lists (publisher_id, key);

-- direction: 0 friend (written for both users), 1 following (owner follows peer), 2 follower (peer follows
-- owner). Each relationship is two rows written in one transaction, so either side pages from its own prefix.
CREATE TABLE edges (
    list_id bigint NOT NULL REFERENCES lists (list_id),
    owner_id uuid NOT NULL,
    direction smallint NOT NULL CHECK (direction IN (0, 1, 2)),
    peer_id uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (list_id, owner_id, direction, peer_id),
    CHECK (owner_id <> peer_id)
);
CREATE INDEX edges_recent ON edges (list_id, owner_id, direction, created_at DESC, peer_id DESC);
-- Merges and blocks find every edge that names a user as the peer.
CREATE INDEX edges_peer ON edges (peer_id);

-- Maintained in the transaction that writes the edges.
CREATE TABLE edge_counts (
    list_id bigint NOT NULL REFERENCES lists (list_id),
    owner_id uuid NOT NULL,
    direction smallint NOT NULL,
    count integer NOT NULL CHECK (count >= 0),
    PRIMARY KEY (list_id, owner_id, direction)
);
-- Merges recompute every count of the users they touch.
CREATE INDEX edge_counts_owner ON edge_counts (owner_id);

CREATE TABLE friend_requests (
    list_id bigint NOT NULL REFERENCES lists (list_id),
    sender_id uuid NOT NULL,
    recipient_id uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (list_id, sender_id, recipient_id),
    CHECK (sender_id <> recipient_id)
);
CREATE INDEX friend_requests_recipient ON friend_requests (list_id, recipient_id, created_at DESC);
CREATE INDEX friend_requests_recipient_any ON friend_requests (recipient_id);

CREATE TABLE blocks (
    blocker_id uuid NOT NULL,
    blocked_id uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (blocker_id, blocked_id),
    CHECK (blocker_id <> blocked_id)
);
CREATE INDEX blocks_blocked ON blocks (blocked_id);

-- Display names and pictures as one application shows them (identity's value scope), refreshed from identity
-- whenever a page shows a user; sort_name is the lower-cased name list queries order and search by.
CREATE TABLE profiles (
    app_id uuid NOT NULL,
    user_id uuid NOT NULL,
    display_name text NOT NULL,
    sort_name text NOT NULL,
    picture_url text NOT NULL,
    refreshed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, user_id)
);

-- contact_key: "rave:<id>" when matched, else "<source>:<external id>"; user_id is set when matched.
CREATE TABLE contacts (
    owner_id uuid NOT NULL,
    contact_key text NOT NULL,
    user_id uuid,
    display_name text NOT NULL DEFAULT '',
    picture_url text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner_id, contact_key)
);
CREATE INDEX contacts_user ON contacts (user_id) WHERE user_id IS NOT NULL;

-- Which sources reported a contact (source: rave.social.v1.ContactSource); a sync replaces one source's rows.
CREATE TABLE contact_sources (
    owner_id uuid NOT NULL,
    contact_key text NOT NULL,
    source smallint NOT NULL CHECK (source BETWEEN 1 AND 5),
    third_party text NOT NULL DEFAULT '',
    external_id text NOT NULL,
    PRIMARY KEY (owner_id, contact_key, source, third_party, external_id),
    FOREIGN KEY (owner_id, contact_key) REFERENCES contacts (owner_id, contact_key) ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX contact_sources_source ON contact_sources (owner_id, source, third_party);

CREATE TABLE applied_merges (
    merge_id text PRIMARY KEY,
    source_id uuid NOT NULL,
    target_id uuid NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);
