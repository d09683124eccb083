-- The references of the two hot tables checked once per statement instead of once per row (docs/wallet.md,
-- "Benchmarks").
--
-- A foreign key checks each inserted row with a query of its own (an executor start, an index probe and a
-- FOR KEY SHARE lock on the referenced row): three checks per bet (two per transfer row's accounts, one for the
-- bet row's seed), about a third of the server's CPU per bet in rounds of hundreds of bets, and every round
-- key-share-locked the shared house account, rewriting that row's lock word. Here one query per statement
-- checks every row the statement wrote, so a round pays one check per table, not one per row.
--
-- It enforces what the foreign keys did:
-- - Referencing side: after every INSERT or UPDATE statement on transfers (from_account, to_account) or bets
--   (seed_id, NULL allowed as before), every row it wrote must name an existing row, or the statement fails with
--   foreign_key_violation (23503), like the foreign key did.
-- - Referenced side: the foreign keys refused to delete or renumber a referenced row. Accounts and seeds are
--   never deleted, truncated or renumbered at all now (stricter: nothing ever did), so a row a check has seen
--   cannot disappear before the checking transaction commits, which is what the key share lock was for.
-- Both kinds of trigger are switched off by exactly what switches off foreign keys (session_replication_role
-- = replica, or ALTER TABLE … DISABLE TRIGGER by the owner).
--
-- Existing rows were checked by the foreign keys being dropped, so they need no second check here.

ALTER TABLE transfers DROP CONSTRAINT transfers_from_account_fkey, DROP CONSTRAINT transfers_to_account_fkey;
ALTER TABLE bets DROP CONSTRAINT bets_seed_id_fkey;

-- One query per statement: the distinct accounts it wrote (a round's few players and houses), each probed once.
CREATE FUNCTION wallet_transfers_name_accounts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM (SELECT from_account FROM written UNION SELECT to_account FROM written) AS named (account_id)
        WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.account_id = named.account_id))
    THEN
        RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
            MESSAGE = 'a transfer names an account that does not exist';
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION wallet_bets_name_seeds() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM (SELECT DISTINCT seed_id FROM written WHERE seed_id IS NOT NULL) AS named
        WHERE NOT EXISTS (SELECT 1 FROM server_seeds s WHERE s.seed_id = named.seed_id))
    THEN
        RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation', MESSAGE = 'a bet names a seed that does not exist';
    END IF;
    RETURN NULL;
END
$$;

-- A trigger with a transition table takes one event, so INSERT and UPDATE have one trigger each.
CREATE TRIGGER transfers_name_accounts_on_insert AFTER INSERT ON transfers
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION wallet_transfers_name_accounts();
CREATE TRIGGER transfers_name_accounts_on_update AFTER UPDATE ON transfers
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION wallet_transfers_name_accounts();
CREATE TRIGGER bets_name_seeds_on_insert AFTER INSERT ON bets
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION wallet_bets_name_seeds();
CREATE TRIGGER bets_name_seeds_on_update AFTER UPDATE ON bets
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION wallet_bets_name_seeds();

CREATE FUNCTION wallet_refuse_removal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
        MESSAGE = format('%s rows are never deleted or renumbered: the ledger and bets refer to them',
            TG_TABLE_NAME);
END
$$;

CREATE TRIGGER accounts_never_deleted BEFORE DELETE ON accounts
    FOR EACH ROW EXECUTE FUNCTION wallet_refuse_removal();
CREATE TRIGGER accounts_never_truncated BEFORE TRUNCATE ON accounts
    FOR EACH STATEMENT EXECUTE FUNCTION wallet_refuse_removal();
CREATE TRIGGER accounts_never_renumbered BEFORE UPDATE OF account_id ON accounts
    FOR EACH ROW WHEN (OLD.account_id IS DISTINCT FROM NEW.account_id) EXECUTE FUNCTION wallet_refuse_removal();
CREATE TRIGGER server_seeds_never_deleted BEFORE DELETE ON server_seeds
    FOR EACH ROW EXECUTE FUNCTION wallet_refuse_removal();
CREATE TRIGGER server_seeds_never_truncated BEFORE TRUNCATE ON server_seeds
    FOR EACH STATEMENT EXECUTE FUNCTION wallet_refuse_removal();
CREATE TRIGGER server_seeds_never_renumbered BEFORE UPDATE OF seed_id ON server_seeds
    FOR EACH ROW WHEN (OLD.seed_id IS DISTINCT FROM NEW.seed_id) EXECUTE FUNCTION wallet_refuse_removal();
