-- Every merged-away user and the account it now is, so that a late call naming the old id (a game still holding
-- its token, a retry, another player's request) reads and writes the target's data (docs/wallet.md, "Merged
-- ids"; RaveMerges.MergedUsers). Written in the MergeUsers transaction; targets are kept final (merging B into C
-- re-points rows that pointed at B), so one look-up resolves any id.
CREATE TABLE merged_users (
    source_id uuid PRIMARY KEY,
    target_id uuid NOT NULL,
    merge_id text NOT NULL,
    merged_at timestamptz NOT NULL DEFAULT now()
);
-- The sources of one target (histories that unite a target's merged accounts).
CREATE INDEX merged_users_by_target ON merged_users (target_id);
-- Replicas re-read the last minute's merges after start-up or a listener reconnect.
CREATE INDEX merged_users_by_time ON merged_users (merged_at);

-- Merges applied before this table existed, chains followed to their end.
INSERT INTO merged_users (source_id, target_id, merge_id, merged_at)
SELECT DISTINCT ON (source_user_id) source_user_id, target_user_id, merge_id, created_at FROM merges
ORDER BY source_user_id, created_at;
WITH RECURSIVE chain (source_id, target_id, depth) AS (
    SELECT source_id, target_id, 0 FROM merged_users
    UNION ALL
    SELECT c.source_id, m.target_id, c.depth + 1 FROM chain c JOIN merged_users m ON m.source_id = c.target_id
    WHERE c.depth < 64 AND m.target_id <> c.source_id)
UPDATE merged_users u SET target_id = f.target_id
FROM (SELECT DISTINCT ON (source_id) source_id, target_id FROM chain ORDER BY source_id, depth DESC) f
WHERE u.source_id = f.source_id AND u.target_id <> f.target_id;
