-- Chat platforms: how far each bot has read each of its channels (the newest message id it
-- handed on), so a new connection reads what was sent while no process was connected
-- (Discord does not replay to a new gateway session). Ids are decimal strings; the store only
-- moves a cursor forward.
CREATE TABLE platform_cursors (
  platform   TEXT NOT NULL,
  bot        TEXT NOT NULL,
  channel    TEXT NOT NULL,
  last_id    TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (platform, bot, channel)
);
