-- One index by recipient instead of two: with the state as its third column it serves both the pending page
-- (recipient, application, state = 0, newest first) and a merge's move of every gift to a recipient (its first
-- column), so a send writes 3 index entries per gift instead of 4 (docs/gifts.md, "Performance").
CREATE INDEX gifts_by_recipient_state ON gifts (recipient_id, app_id, state, sent_at DESC, id DESC);
DROP INDEX gifts_pending_by_recipient;
DROP INDEX gifts_by_recipient;
