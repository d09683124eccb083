-- Board and achievement definitions, best scores per board version, unlocks, and applied merges.

CREATE TABLE leaderboards (
    board_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id text NOT NULL,
    key text NOT NULL CHECK (length(key) BETWEEN 1 AND 128),
    name text NOT NULL,
    sorter integer NOT NULL DEFAULT 0,
    ascending boolean NOT NULL,
    -- 0 none, 1 hourly, 2 daily, 3 weekly, 4 monthly (rave.leaderboards.v1.ResetInterval).
    reset_interval smallint NOT NULL DEFAULT 0 CHECK (reset_interval BETWEEN 0 AND 4),
    schedule_start timestamptz,
    schedule_end timestamptz,
    active boolean NOT NULL DEFAULT true,
    -- Version 1 is the reset period that contains this instant; later versions count periods from it.
    versions_start timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (app_id, key),
    CHECK ((schedule_start IS NULL) = (schedule_end IS NULL)),
    CHECK (schedule_start IS NULL OR schedule_start < schedule_end),
    CHECK (schedule_start IS NULL OR reset_interval = 0)
);

-- One row per player and board version: the player's best score there and when it was first reached.
CREATE TABLE scores (
    board_id bigint NOT NULL REFERENCES leaderboards (board_id),
    version integer NOT NULL CHECK (version >= 1),
    user_id uuid NOT NULL,
    score bigint NOT NULL,
    achieved_at timestamptz NOT NULL,
    PRIMARY KEY (board_id, version, user_id)
);

-- Merges look up every score of one user.
CREATE INDEX scores_by_user ON scores (user_id);

CREATE TABLE achievements (
    app_id text NOT NULL,
    key text NOT NULL CHECK (length(key) BETWEEN 1 AND 128),
    name text NOT NULL,
    description text NOT NULL DEFAULT '',
    image_url text NOT NULL DEFAULT '',
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, key)
);

CREATE TABLE achievement_unlocks (
    app_id text NOT NULL,
    key text NOT NULL,
    user_id uuid NOT NULL,
    unlocked_at timestamptz NOT NULL,
    PRIMARY KEY (app_id, user_id, key),
    FOREIGN KEY (app_id, key) REFERENCES achievements (app_id, key)
);

CREATE INDEX achievement_unlocks_by_user ON achievement_unlocks (user_id);

-- Merges already applied, so a repeated MergeUsers changes nothing.
CREATE TABLE applied_merges (
    merge_id text PRIMARY KEY,
    source_user_id uuid NOT NULL,
    target_user_id uuid NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);
