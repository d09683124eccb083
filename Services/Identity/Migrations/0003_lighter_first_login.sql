-- A guest login of a new device is identity's hottest write. These constraints were checked on every one, and each
-- is redundant with the statements that write the rows, so they go.
--
-- Foreign keys to applications on the tables every login writes: an application is never deleted, and every writer
-- takes the app id from a read of the application row (the application cache, the app of a token we signed, or a
-- two-factor challenge, which keeps its own foreign key). Each check share-locked the app's one row, and concurrent
-- logins of one app sharing that lock made PostgreSQL create a multixact per login.
ALTER TABLE device_logins DROP CONSTRAINT device_logins_app_id_fkey;
ALTER TABLE app_users DROP CONSTRAINT app_users_app_id_fkey;
ALTER TABLE sessions DROP CONSTRAINT sessions_app_id_fkey;

-- Foreign keys to users on the same tables: a user row is never deleted (a merged user keeps its id and
-- `merged_into`), and every writer takes the user id from a users row the same statement inserted or joined, or one
-- the transaction read or locked (a merge locks both users `FOR UPDATE`). Each check share-locked the user's row, a
-- WAL record apiece, four per new device.
ALTER TABLE device_logins DROP CONSTRAINT device_logins_user_id_fkey;
ALTER TABLE app_users DROP CONSTRAINT app_users_user_id_fkey;
ALTER TABLE devices DROP CONSTRAINT devices_user_id_fkey;
ALTER TABLE sessions DROP CONSTRAINT sessions_user_id_fkey;

-- A refresh token is inserted only by the statement that creates its session or rotates it (holding the session's
-- row lock and writing the generation it just set), and sessions are never deleted: the foreign key and the
-- one-token-per-generation key cannot fail, and they cost a check and an index entry per login and per refresh.
ALTER TABLE refresh_tokens DROP CONSTRAINT refresh_tokens_session_id_fkey;
ALTER TABLE refresh_tokens DROP CONSTRAINT refresh_tokens_session_id_generation_key;

-- App data keys are no longer written at a user's first use of an app: the key there is implied (the user's Rave
-- ID) until a merge writes both users' keys as rows. Existing rows hold the same keys, so they stay as they are.
