-- Chat platforms: the inbox (every inbound event once, by the platform's id, with the state of
-- its turn, so a redelivery starts nothing and a crash loses nothing) and the send ledger (every
-- outgoing chunk by (turn, chunk): a chunk with a message id is edited, never sent again).
CREATE TABLE platform_inbox (
  platform      TEXT NOT NULL,
  event_id      TEXT NOT NULL,
  session_key   TEXT NOT NULL DEFAULT '',
  payload       TEXT,
  state         TEXT NOT NULL DEFAULT 'pending',
  session_id    TEXT NOT NULL DEFAULT '',
  reply         TEXT NOT NULL DEFAULT '',
  holder        TEXT NOT NULL DEFAULT '',
  claimed_until INTEGER NOT NULL DEFAULT 0,
  received_at   INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL,
  PRIMARY KEY (platform, event_id)
);
CREATE INDEX platform_inbox_open ON platform_inbox(platform, state, received_at);
CREATE INDEX platform_inbox_updated ON platform_inbox(updated_at);

CREATE TABLE platform_sends (
  turn_id    TEXT NOT NULL,
  chunk      INTEGER NOT NULL,
  message_id TEXT NOT NULL DEFAULT '',
  text_hash  TEXT NOT NULL DEFAULT '',
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (turn_id, chunk)
);
CREATE INDEX platform_sends_updated ON platform_sends(updated_at);
