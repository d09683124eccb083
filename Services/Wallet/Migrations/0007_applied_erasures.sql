-- Erasures are recorded by the shared rule of every data service (RaveMerges.UserErasure): in `applied_erasures`,
-- erasure ids of 1…128 bytes, which that rule checks before the insert. The table keeps its rows; only its name
-- and the old 64-character limit change.
ALTER TABLE erasures RENAME TO applied_erasures;
ALTER INDEX erasures_pkey RENAME TO applied_erasures_pkey;
ALTER TABLE applied_erasures DROP CONSTRAINT erasures_erasure_id_check;
