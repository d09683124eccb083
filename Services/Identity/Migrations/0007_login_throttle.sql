-- Login throttling (docs/identity.md, "Login throttling"): counts of failed password and two-factor attempts that
-- drain away over a window, so failures long past stop counting, instead of login_attempts' counts and lockouts,
-- which never decayed. Keys: "<scope>:pair:<address> <account>", "<scope>:account:<account>" and
-- "<scope>:address:<address>", scope "password" (account: the email, lower case) or "2fa" (account: the user id).
--
-- `failures` is the count as of `updated_at` (it is fractional because it drains continuously); a pair's
-- `succeeded_at` is its last success, which exempts that address from the account's and the address's limits for a
-- while. Rows that hold nothing any more (drained and no recent success) are deleted by identity's sweeper.
--
-- login_attempts is no longer written. Replicas of the previous release keep using it during a rolling upgrade; a
-- later migration drops it.
CREATE TABLE login_throttle (
    key           text PRIMARY KEY,
    failures      double precision NOT NULL DEFAULT 0 CHECK (failures >= 0),
    updated_at    timestamptz NOT NULL,
    succeeded_at  timestamptz
);

CREATE INDEX login_throttle_updated_at ON login_throttle (updated_at);
