-- Reads by user alone: a merge moving a user's devices and deliveries, an erasure and an export, and an operator's
-- list of a player's devices. Without these each scanned the whole table.
CREATE INDEX device_tokens_of_user ON device_tokens (user_id);
CREATE INDEX deliveries_of_user ON deliveries (user_id);
