-- spool's schema on PostgreSQL: the data model of store/sqlite, with PostgreSQL's own search
-- indexes. Times are integer microseconds since the epoch (exact round trips, as on SQLite);
-- lease and lock expiry is computed with the database's clock, so hosts with skewed clocks agree.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE system_prompts (
  hash   text PRIMARY KEY,
  prompt text NOT NULL
);

CREATE TABLE sessions (
  id                 text PRIMARY KEY,
  source             text NOT NULL DEFAULT 'cli',
  user_id            text NOT NULL DEFAULT '',
  session_key        text NOT NULL DEFAULT '',
  title              text,
  model              text NOT NULL DEFAULT '',
  model_config       text,
  system_prompt_hash text REFERENCES system_prompts(hash),
  parent_session_id  text REFERENCES sessions(id) ON DELETE SET NULL,
  relation           text NOT NULL DEFAULT '',
  root_id            text NOT NULL,
  started_at         bigint NOT NULL,
  ended_at           bigint,
  end_reason         text NOT NULL DEFAULT '',
  last_active        bigint NOT NULL,
  preview            text,
  message_count      integer NOT NULL DEFAULT 0,
  tool_call_count    integer NOT NULL DEFAULT 0,
  input_tokens       bigint NOT NULL DEFAULT 0,
  output_tokens      bigint NOT NULL DEFAULT 0,
  cache_read_tokens  bigint NOT NULL DEFAULT 0,
  cache_write_tokens bigint NOT NULL DEFAULT 0,
  reasoning_tokens   bigint NOT NULL DEFAULT 0,
  api_call_count     bigint NOT NULL DEFAULT 0,
  cost_usd           double precision NOT NULL DEFAULT 0,
  cwd                text NOT NULL DEFAULT '',
  git_branch         text NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX sessions_title ON sessions(title) WHERE title IS NOT NULL;
CREATE INDEX sessions_parent ON sessions(parent_session_id);
CREATE INDEX sessions_root ON sessions(root_id);
CREATE INDEX sessions_source ON sessions(source);
CREATE INDEX sessions_key ON sessions(session_key, started_at DESC) WHERE session_key <> '';
CREATE INDEX sessions_last_active ON sessions(last_active DESC, id DESC);
-- Prefix resolution of ids (ResolveSession) compares bytes.
CREATE INDEX sessions_id_prefix ON sessions(id text_pattern_ops);

-- Transcripts are ordered by id, never by timestamp. Appends to one session serialize on its
-- sessions row (every transcript write updates it first), so ids grow in commit order per session.
CREATE TABLE messages (
  id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  session_id        text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  role              text NOT NULL,
  content           text NOT NULL DEFAULT '',
  api_content       text,
  tool_calls        text,
  tool_call_id      text,
  tool_name         text,
  reasoning         text,
  reasoning_details text,
  finish_reason     text,
  token_count       integer NOT NULL DEFAULT 0,
  timestamp         bigint NOT NULL,
  summary           boolean NOT NULL DEFAULT false,
  active            boolean NOT NULL DEFAULT true,
  compacted         boolean NOT NULL DEFAULT false,
  -- Words: built by the writer with the same tokenizer and the same bounded prefix of tool
  -- output as SQLite's unicode61 index (content, tool_name, tool_calls), so both backends find
  -- the same rows for the same sanitized query.
  tsv               tsvector NOT NULL,
  -- Substrings (CJK): the indexed prefix of rows containing CJK text, NULL for the others.
  cjk_text          text
);
CREATE INDEX messages_session ON messages(session_id, id);
CREATE INDEX messages_session_active ON messages(session_id, id) WHERE active;
-- fastupdate = off: a row is in the index's main structure when its insert commits, so the
-- planner never skips the index for a pending list (the bulk-load gotcha).
CREATE INDEX messages_tsv ON messages USING gin (tsv) WITH (fastupdate = off);
CREATE INDEX messages_trgm ON messages USING gin (cjk_text gin_trgm_ops) WITH (fastupdate = off) WHERE cjk_text IS NOT NULL;
CREATE INDEX messages_cjk ON messages(id) WHERE cjk_text IS NOT NULL;

CREATE TABLE compression_locks (
  session_id  text PRIMARY KEY,
  holder      text NOT NULL,
  acquired_at bigint NOT NULL,
  expires_at  bigint NOT NULL
);

-- A row outlives its holders: released leases keep their generation, so a fencing token is never
-- handed out twice for one conversation.
CREATE TABLE turn_leases (
  conversation_id text PRIMARY KEY,
  holder          text,
  generation      bigint NOT NULL DEFAULT 0,
  acquired_at     bigint,
  expires_at      bigint,
  ttl             bigint NOT NULL DEFAULT 0
);

CREATE TABLE requests (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  session_id         text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  at                 bigint NOT NULL,
  model              text NOT NULL DEFAULT '',
  task               text NOT NULL DEFAULT 'turn',
  input_tokens       bigint NOT NULL DEFAULT 0,
  output_tokens      bigint NOT NULL DEFAULT 0,
  cache_read_tokens  bigint NOT NULL DEFAULT 0,
  cache_write_tokens bigint NOT NULL DEFAULT 0,
  reasoning_tokens   bigint NOT NULL DEFAULT 0,
  cost_usd           double precision NOT NULL DEFAULT 0,
  cache_break        text
);
CREATE INDEX requests_session ON requests(session_id, id);
