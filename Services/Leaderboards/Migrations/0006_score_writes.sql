-- Score writes (docs/leaderboards.md, "Engine"): every durable submit updates one row of `scores`.
--
-- Room on each page for the next version of its rows: a better score then replaces a row on its own page (a HOT
-- update), with no new entry in either index of the table. Applies to pages written from now on (a fresh table,
-- new rows, pages that VACUUM FULL or a reload rewrites).
ALTER TABLE scores SET (fillfactor = 90);

-- The foreign key to `leaderboards` cannot fail (a board id comes from a stored definition, and definitions are
-- never deleted), but each new row paid for its check: a look-up of the board and a share lock on its row, taken
-- by every concurrent batch on the same few boards.
ALTER TABLE scores DROP CONSTRAINT scores_board_id_fkey;
