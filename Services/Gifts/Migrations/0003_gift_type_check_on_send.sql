-- Gift types are never deleted (no method does it), so the foreign key from gifts to gift_types guarded nothing,
-- while its check share-locked the type's row once per gift: concurrent sends of one popular type then created a
-- new MultiXact per lock (docs/gifts.md, "Performance"). Every gift's type id comes from the type row a send
-- has just read.
ALTER TABLE gifts DROP CONSTRAINT gifts_gift_type_id_fkey;
