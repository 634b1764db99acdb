-- Same as store/sqlite 0008_platform.sql.
-- Chat platforms: the inbox (every inbound event once, by the platform's id, with the state of
-- its turn, so a redelivery starts nothing and a crash loses nothing) and the send ledger (every
-- outgoing chunk by (turn, chunk): a chunk with a message id is edited, never sent again).
CREATE TABLE platform_inbox (
  platform      text NOT NULL,
  event_id      text NOT NULL,
  session_key   text NOT NULL DEFAULT '',
  payload       text,
  state         text NOT NULL DEFAULT 'pending',
  session_id    text NOT NULL DEFAULT '',
  reply         text NOT NULL DEFAULT '',
  holder        text NOT NULL DEFAULT '',
  claimed_until bigint NOT NULL DEFAULT 0,
  received_at   bigint NOT NULL,
  updated_at    bigint NOT NULL,
  PRIMARY KEY (platform, event_id)
);
CREATE INDEX platform_inbox_open ON platform_inbox(platform, state, received_at);
CREATE INDEX platform_inbox_updated ON platform_inbox(updated_at);

CREATE TABLE platform_sends (
  turn_id    text NOT NULL,
  chunk      integer NOT NULL,
  message_id text NOT NULL DEFAULT '',
  text_hash  text NOT NULL DEFAULT '',
  updated_at bigint NOT NULL,
  PRIMARY KEY (turn_id, chunk)
);
CREATE INDEX platform_sends_updated ON platform_sends(updated_at);
