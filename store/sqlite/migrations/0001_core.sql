-- Sessions, content-addressed system prompts and messages.
CREATE TABLE system_prompts (
  hash   TEXT PRIMARY KEY,
  prompt TEXT NOT NULL
);

CREATE TABLE sessions (
  id                 TEXT PRIMARY KEY,
  source             TEXT NOT NULL DEFAULT 'cli',
  user_id            TEXT NOT NULL DEFAULT '',
  session_key        TEXT NOT NULL DEFAULT '',
  title              TEXT,
  model              TEXT NOT NULL DEFAULT '',
  model_config       TEXT,
  system_prompt_hash TEXT REFERENCES system_prompts(hash),
  parent_session_id  TEXT REFERENCES sessions(id) ON DELETE SET NULL,
  relation           TEXT NOT NULL DEFAULT '',
  root_id            TEXT NOT NULL,
  started_at         INTEGER NOT NULL,
  ended_at           INTEGER,
  end_reason         TEXT NOT NULL DEFAULT '',
  last_active        INTEGER NOT NULL,
  preview            TEXT, -- start of the first user message, kept by the writer for pickers
  message_count      INTEGER NOT NULL DEFAULT 0,
  tool_call_count    INTEGER NOT NULL DEFAULT 0,
  input_tokens       INTEGER NOT NULL DEFAULT 0,
  output_tokens      INTEGER NOT NULL DEFAULT 0,
  cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
  cache_write_tokens INTEGER NOT NULL DEFAULT 0,
  reasoning_tokens   INTEGER NOT NULL DEFAULT 0,
  api_call_count     INTEGER NOT NULL DEFAULT 0,
  cost_usd           REAL NOT NULL DEFAULT 0,
  cwd                TEXT NOT NULL DEFAULT '',
  git_branch         TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX sessions_title ON sessions(title) WHERE title IS NOT NULL;
CREATE INDEX sessions_parent ON sessions(parent_session_id);
CREATE INDEX sessions_root ON sessions(root_id);
-- No index holds last_active: every append moves it, and an index on it would cost each append
-- extra page writes. Listings sort the (few thousand) candidate rows instead.
CREATE INDEX sessions_source ON sessions(source);
CREATE INDEX sessions_key ON sessions(session_key, started_at DESC) WHERE session_key <> '';

-- Transcripts are ordered by id, never by timestamp.
CREATE TABLE messages (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id        TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  role              TEXT NOT NULL,
  content           TEXT NOT NULL DEFAULT '',
  api_content       TEXT,
  tool_calls        TEXT,
  tool_call_id      TEXT,
  tool_name         TEXT,
  reasoning         TEXT,
  reasoning_details TEXT,
  finish_reason     TEXT,
  token_count       INTEGER NOT NULL DEFAULT 0,
  timestamp         INTEGER NOT NULL,
  summary           INTEGER NOT NULL DEFAULT 0,
  active            INTEGER NOT NULL DEFAULT 1,
  compacted         INTEGER NOT NULL DEFAULT 0
);
-- One index serves both the model's view (active = 1, in id order) and whole-history reads; a
-- second one would be one more page written by every append.
CREATE INDEX messages_session ON messages(session_id, active, id);
