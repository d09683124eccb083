-- One owner instance per board: the lease row says which instance serves (and writes the index of) a board until
-- when. Expiry is judged by the database's clock only, so instances need not agree on the time.
CREATE TABLE board_leases (
    app_id text NOT NULL,
    leaderboard_key text NOT NULL,
    -- The owner's advertised RPC address (host:port), as the gateway's backend list names it.
    owner_address text NOT NULL,
    -- A random id per process, so a renewal never extends a lease another process took meanwhile.
    instance_id uuid NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (app_id, leaderboard_key)
);

-- Renewals and releases find one instance's leases.
CREATE INDEX board_leases_by_instance ON board_leases (instance_id);
