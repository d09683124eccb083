-- Secrets at rest are sealed: token signing keys and TOTP secrets are stored only as AES-256-GCM ciphertext under a
-- key of RAVE_SECRET_KEY_FILE, bound to their row (docs/identity.md, "Secrets at rest"). SQL cannot encrypt, so the
-- rows written before this migration are sealed by identity itself at start-up (Store/SecretSealing.swift), in one
-- transaction that ends by validating the two constraints below: once validated, PostgreSQL itself vouches that no
-- plaintext column holds a value.
--
-- NOT VALID: the constraints hold for every row written or updated from now on (no release that stores plaintext can
-- write to this schema), without failing on the old rows before identity has sealed them.
ALTER TABLE signing_keys ALTER COLUMN private_key DROP NOT NULL;
ALTER TABLE signing_keys ADD COLUMN private_key_sealed bytea;
ALTER TABLE signing_keys ADD CONSTRAINT signing_keys_private_key_sealed
    CHECK (private_key IS NULL AND private_key_sealed IS NOT NULL) NOT VALID;

ALTER TABLE two_factor ALTER COLUMN secret DROP NOT NULL;
ALTER TABLE two_factor ADD COLUMN secret_sealed bytea;
ALTER TABLE two_factor ADD CONSTRAINT two_factor_secret_sealed
    CHECK (secret IS NULL AND secret_sealed IS NOT NULL) NOT VALID;
