-- Entries are never looked up by transfer on a hot path (history joins transfers by their primary key, and
-- transfers are never deleted, so the foreign key needs no index on this side); the index cost every bet two
-- or four more index insertions (docs/wallet.md, "Performance").
DROP INDEX ledger_entries_by_transfer;
