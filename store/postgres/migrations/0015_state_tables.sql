-- State in tables made for it (safe to run again: tests re-run a version after forgetting it). Earlier schemas kept three kinds of state in tables made for
-- something else; each moves to its own table here, and the old rows move with it.

-- Named leases: one holder at a time for a job that is not a conversation's turn (a platform's
-- poller). Like turn leases, a row outlives its holders and keeps its fencing generation.
CREATE TABLE IF NOT EXISTS named_leases (
  name        text PRIMARY KEY,
  holder      text,
  generation  bigint NOT NULL DEFAULT 0,
  acquired_at bigint,
  expires_at  bigint
);
-- A platform's poller held its lease as a compression lock named after the poller.
INSERT INTO named_leases (name, holder, generation, acquired_at, expires_at)
  SELECT session_id, holder, 1, acquired_at, expires_at FROM compression_locks
  WHERE session_id LIKE 'platform-poller:%'
  ON CONFLICT (name) DO NOTHING;
DELETE FROM compression_locks WHERE session_id LIKE 'platform-poller:%';

-- A bot's watermark on a platform (Discord: a snowflake before which every message delivered
-- while a process was connected was handed on). It was the read cursor of channel "@connected".
CREATE TABLE IF NOT EXISTS platform_watermarks (
  platform   text NOT NULL,
  bot        text NOT NULL,
  last_id    text NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (platform, bot)
);
INSERT INTO platform_watermarks (platform, bot, last_id, updated_at)
  SELECT platform, bot, last_id, updated_at FROM platform_cursors WHERE channel = '@connected'
  ON CONFLICT (platform, bot) DO NOTHING;
DELETE FROM platform_cursors WHERE channel = '@connected';

-- What an HTTP API response id names: its session, answer row, status and the API's record.
CREATE TABLE IF NOT EXISTS api_responses (
  id         text PRIMARY KEY,
  principal  text NOT NULL,
  session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  status     text NOT NULL DEFAULT '',
  message_id bigint NOT NULL DEFAULT 0,
  created_at bigint NOT NULL,
  record     text NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS api_responses_session ON api_responses(session_id);

-- A session's HTTP API state: its client metadata and its latest finished response.
CREATE TABLE IF NOT EXISTS api_conversations (
  session_id      text PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
  principal       text NOT NULL,
  metadata        text,
  latest_response text,
  updated_at      bigint NOT NULL
);

-- Responses, conversation metadata and latest responses were routes keyed
-- "api:<principal>:<kind>:<32 hex digits of sha256>" of the response id or session id. A
-- response keeps the digest of its id as its key until its id is known (the Go step of this
-- version recovers the ids other rows name; a client naming one recovers it at first use).
INSERT INTO api_responses (id, principal, session_id, status, message_id, created_at, record)
  SELECT 'sha256:' || substr(session_key, length(session_key) - 31), substr(session_key, 5, length(session_key) - 42),
         session_id, coalesce(origin::json ->> 'status', ''), coalesce((origin::json ->> 'message_id')::bigint, 0),
         coalesce((origin::json ->> 'created_at')::bigint, 0) * 1000000, origin
  FROM routes
  WHERE session_key LIKE 'api:%' AND substr(session_key, length(session_key) - 37, 6) = ':resp:' AND origin IS NOT NULL
  ON CONFLICT (id) DO NOTHING;
INSERT INTO api_conversations (session_id, principal, metadata, updated_at)
  SELECT session_id, substr(session_key, 5, length(session_key) - 42), (origin::json -> 'metadata')::text, updated_at
  FROM routes
  WHERE session_key LIKE 'api:%' AND substr(session_key, length(session_key) - 37, 6) = ':conv:' AND origin IS NOT NULL
  ON CONFLICT (session_id) DO NOTHING;
INSERT INTO api_conversations (session_id, principal, latest_response, updated_at)
  SELECT session_id, substr(session_key, 5, length(session_key) - 44), origin::json ->> 'id', updated_at
  FROM routes
  WHERE session_key LIKE 'api:%' AND substr(session_key, length(session_key) - 39, 8) = ':latest:' AND origin IS NOT NULL
  ON CONFLICT (session_id) DO UPDATE SET latest_response = excluded.latest_response;
DELETE FROM routes WHERE session_key LIKE 'api:%' AND (
  substr(session_key, length(session_key) - 37, 6) IN (':resp:', ':conv:')
  OR substr(session_key, length(session_key) - 39, 8) = ':latest:');
