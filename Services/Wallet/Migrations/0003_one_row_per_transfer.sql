-- One row per movement of money, carrying both sides (docs/wallet.md, "Ledger model").
--
-- A transfer moves `amount` (> 0) from from_account to to_account: it is the entry -amount on from_account and
-- the entry +amount on to_account, so every transfer sums to zero and the whole ledger sums to zero by
-- construction. It replaces a transfer row plus two ledger_entries rows, which cost each movement three heap
-- rows, five index entries and six foreign-key checks; now it is one row, three index entries (the primary key
-- and one history index per side) and two foreign-key checks. The balance each player side reached is kept on
-- the row (NULL on house and external sides, which keep no running balance).
--
-- transfer_id is a bigint from an identity (it orders an account's history, newest first, for keyset paging);
-- the uuid ids of the old rows are not kept: nothing referenced them but the entries, which are folded in here.

ALTER TABLE transfers RENAME TO transfers_0002;
ALTER INDEX transfers_pkey RENAME TO transfers_0002_pkey;

CREATE TABLE transfers (
    transfer_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    code text NOT NULL CHECK (code IN ('deposit', 'withdrawal', 'adjustment', 'bet_wager', 'bet_payout', 'merge')),
    from_account bigint NOT NULL REFERENCES accounts (account_id),
    to_account bigint NOT NULL REFERENCES accounts (account_id),
    amount bigint NOT NULL CHECK (amount > 0),
    from_balance_after bigint,
    to_balance_after bigint,
    user_id uuid,
    bet_id uuid,
    reference text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK (from_account <> to_account)
);

-- Every old transfer must have exactly its two entries (-amount on the debit account, +amount on the credit
-- account); anything else stops the upgrade rather than guess what the money was.
DO $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM transfers_0002 t
        LEFT JOIN (
            SELECT transfer_id, count(*) AS entries,
                count(*) FILTER (WHERE amount < 0) AS debits,
                min(account_id) FILTER (WHERE amount < 0) AS debit_account,
                min(account_id) FILTER (WHERE amount > 0) AS credit_account,
                min(amount) AS low, max(amount) AS high
            FROM ledger_entries GROUP BY transfer_id
        ) e USING (transfer_id)
        WHERE e.entries IS DISTINCT FROM 2 OR e.debits <> 1 OR e.debit_account <> t.debit_account
            OR e.credit_account <> t.credit_account OR e.low <> -t.amount OR e.high <> t.amount)
        OR EXISTS (SELECT 1 FROM ledger_entries e WHERE NOT EXISTS (
            SELECT 1 FROM transfers_0002 t WHERE t.transfer_id = e.transfer_id))
    THEN
        RAISE EXCEPTION 'wallet 0003: transfers and ledger_entries disagree; fix the ledger before upgrading';
    END IF;
END
$$;

-- Old transfers in the order their entries were written, so history keeps its order.
INSERT INTO transfers (transfer_id, code, from_account, to_account, amount, from_balance_after, to_balance_after,
    user_id, bet_id, reference, created_at)
OVERRIDING SYSTEM VALUE
SELECT row_number() OVER (ORDER BY e.first_entry), t.code, t.debit_account, t.credit_account, t.amount,
    e.debit_after, e.credit_after, t.user_id, t.bet_id, t.reference, t.created_at
FROM transfers_0002 t
JOIN (
    SELECT transfer_id, min(entry_id) AS first_entry,
        min(balance_after) FILTER (WHERE amount < 0) AS debit_after,
        min(balance_after) FILTER (WHERE amount > 0) AS credit_after
    FROM ledger_entries GROUP BY transfer_id
) e USING (transfer_id);

SELECT setval(pg_get_serial_sequence('transfers', 'transfer_id'), coalesce(max(transfer_id), 0) + 1, false)
FROM transfers;

-- No money may be lost: every account's sum over the new rows equals the sum of its old entries, row for row.
DO $$
BEGIN
    IF (SELECT count(*) FROM transfers) <> (SELECT count(*) FROM transfers_0002) OR EXISTS (
        (SELECT account_id, sum(amount) FROM ledger_entries GROUP BY account_id
         EXCEPT
         SELECT account_id, sum(amount) FROM (
             SELECT from_account, -amount FROM transfers UNION ALL SELECT to_account, amount FROM transfers
         ) AS side (account_id, amount) GROUP BY account_id)
        UNION ALL
        (SELECT account_id, sum(amount) FROM (
             SELECT from_account, -amount FROM transfers UNION ALL SELECT to_account, amount FROM transfers
         ) AS side (account_id, amount) GROUP BY account_id
         EXCEPT
         SELECT account_id, sum(amount) FROM ledger_entries GROUP BY account_id))
    THEN
        RAISE EXCEPTION 'wallet 0003: the moved ledger does not conserve every account''s balance';
    END IF;
END
$$;

DROP TABLE ledger_entries;
DROP TABLE transfers_0002;

-- An account's history is its transfers on either side, read newest first by two index scans merged
-- (QueryStore). Partial indexes that leave out the side a code never puts a player on (the house side of bets)
-- were measured and saved nothing measurable (docs/wallet.md, "Benchmarks"), so both sides are indexed whole.
CREATE INDEX transfers_by_from_account ON transfers (from_account, transfer_id);
CREATE INDEX transfers_by_to_account ON transfers (to_account, transfer_id);
