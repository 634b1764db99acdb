-- Same as store/sqlite 0011_read_cursors.sql.
-- Chat platforms: how far each bot has read each of its channels (the newest message id it
-- handed on), so a new connection reads what was sent while no process was connected
-- (Discord does not replay to a new gateway session). Ids are decimal strings; the store only
-- moves a cursor forward.
CREATE TABLE platform_cursors (
  platform   text NOT NULL,
  bot        text NOT NULL,
  channel    text NOT NULL,
  last_id    text NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (platform, bot, channel)
);
