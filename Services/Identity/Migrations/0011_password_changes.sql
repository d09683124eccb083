-- Changing a password (docs/identity.md, "Changing the password"): the hash a change replaced, and when, so that a
-- retry of a change that already succeeded (its answer lost on the way) is recognised for a while instead of
-- counting as a wrong current password.
ALTER TABLE password_credentials
    ADD COLUMN previous_hash text CONSTRAINT password_credentials_previous_hash CHECK (previous_hash LIKE 'scrypt$%'),
    ADD COLUMN changed_at timestamptz;
