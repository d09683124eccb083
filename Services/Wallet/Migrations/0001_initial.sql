-- The wallet's ledger, bets and provably fair seeds (docs/wallet.md).

CREATE TABLE currencies (
    code text PRIMARY KEY CHECK (code ~ '^[A-Z0-9]{2,12}$'),
    decimals integer NOT NULL CHECK (decimals BETWEEN 0 AND 8),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- The game's definition is its encoded rave.wallet.v1.Game message, validated by the service before insert.
CREATE TABLE games (
    game_id text PRIMARY KEY CHECK (length(game_id) BETWEEN 1 AND 64),
    kind text NOT NULL CHECK (kind IN ('slot', 'odds')),
    definition bytea NOT NULL,
    return_to_player text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Per application, the countries where real-money play is allowed.
CREATE TABLE real_money_countries (
    app_id text NOT NULL,
    country text NOT NULL CHECK (country ~ '^[A-Z]{2}$'),
    PRIMARY KEY (app_id, country)
);

-- kind: 'user' (a player's wallet), 'credit' (a player's credits won in game_id), 'house' (a game's bank),
-- 'external' (money outside the system: deposits come from it, withdrawals go to it).
-- Player accounts carry a balance that may never go below zero. House and external accounts carry no balance
-- column value (NULL): their balance is the sum of their entries, so they are never a hot row every bet locks.
-- The nil UUID stands for "no user" so the unique key needs no NULL handling.
CREATE TABLE accounts (
    account_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind text NOT NULL CHECK (kind IN ('user', 'credit', 'house', 'external')),
    user_id uuid NOT NULL,
    game_id text NOT NULL DEFAULT '',
    currency text NOT NULL REFERENCES currencies (code),
    economy smallint NOT NULL CHECK (economy IN (1, 2)),
    balance bigint,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT player_balance_not_negative CHECK (balance >= 0),
    CONSTRAINT player_accounts_have_balance CHECK ((kind IN ('user', 'credit')) = (balance IS NOT NULL)),
    UNIQUE (user_id, kind, game_id, currency, economy)
);

-- One movement of money: `amount` leaves debit_account and arrives in credit_account. Its two ledger entries
-- (-amount and +amount) are written by the same statement, so every transfer sums to zero.
CREATE TABLE transfers (
    transfer_id uuid PRIMARY KEY,
    code text NOT NULL CHECK (code IN ('deposit', 'withdrawal', 'adjustment', 'bet_wager', 'bet_payout', 'merge')),
    debit_account bigint NOT NULL REFERENCES accounts (account_id),
    credit_account bigint NOT NULL REFERENCES accounts (account_id),
    amount bigint NOT NULL CHECK (amount > 0),
    user_id uuid,
    bet_id uuid,
    reference text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK (debit_account <> credit_account)
);

CREATE TABLE ledger_entries (
    entry_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    transfer_id uuid NOT NULL REFERENCES transfers (transfer_id),
    account_id bigint NOT NULL REFERENCES accounts (account_id),
    amount bigint NOT NULL CHECK (amount <> 0),
    -- NULL for house and external accounts, which keep no running balance.
    balance_after bigint,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX ledger_entries_by_account ON ledger_entries (account_id, entry_id DESC);
CREATE INDEX ledger_entries_by_transfer ON ledger_entries (transfer_id);

-- Provably fair: one active (unrevealed) seed per user; rotating reveals it.
CREATE TABLE server_seeds (
    seed_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id uuid NOT NULL,
    seed bytea NOT NULL,
    seed_hash text NOT NULL,
    next_nonce bigint NOT NULL DEFAULT 0,
    revealed_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX server_seeds_one_active ON server_seeds (user_id) WHERE revealed_at IS NULL;

-- Every bet a user placed, settled or failed, keyed by the client's bet id. `request_hash` tells a replay from a
-- different request with the same id; `result` is the encoded rave.wallet.v1.BetResult returned on replay.
CREATE TABLE bets (
    user_id uuid NOT NULL,
    bet_id uuid NOT NULL,
    request_hash text NOT NULL,
    game_id text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('backed', 'unbacked', 'credit', 'unbacked_credit')),
    status text NOT NULL CHECK (status IN ('settled', 'failed')),
    currency text NOT NULL,
    economy smallint NOT NULL,
    wager bigint NOT NULL CHECK (wager > 0),
    payout bigint NOT NULL CHECK (payout >= 0),
    seed_id bigint REFERENCES server_seeds (seed_id),
    nonce bigint,
    client_seed text NOT NULL DEFAULT '',
    result bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, bet_id)
);

-- Operator deposits, withdrawals and adjustments, idempotent by the operator's operation id.
CREATE TABLE operator_operations (
    operation_id text PRIMARY KEY CHECK (length(operation_id) BETWEEN 1 AND 128),
    kind text NOT NULL CHECK (kind IN ('deposit', 'withdrawal', 'adjustment')),
    request_hash text NOT NULL,
    result bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Merges already applied, so a repeated MergeUsers is a no-op.
CREATE TABLE merges (
    merge_id text PRIMARY KEY,
    source_user_id uuid NOT NULL,
    target_user_id uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
