-- Compression locks (one compaction per session at a time) and turn leases (one turn per
-- conversation at a time, keyed by the lineage root, with a monotonic fencing generation).
CREATE TABLE compression_locks (
  session_id  TEXT PRIMARY KEY,
  holder      TEXT NOT NULL,
  acquired_at INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL
);

-- A row outlives its holders: released leases keep their generation, so a fencing token is never
-- handed out twice for one conversation.
CREATE TABLE turn_leases (
  conversation_id TEXT PRIMARY KEY,
  holder          TEXT,
  generation      INTEGER NOT NULL DEFAULT 0,
  acquired_at     INTEGER,
  expires_at      INTEGER,
  ttl             INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- One row per model call: usage and cache-break forensics (which layer's bytes changed, why).
CREATE TABLE requests (
  id                 INTEGER PRIMARY KEY,
  session_id         TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  at                 INTEGER NOT NULL,
  model              TEXT NOT NULL DEFAULT '',
  task               TEXT NOT NULL DEFAULT 'turn',
  input_tokens       INTEGER NOT NULL DEFAULT 0,
  output_tokens      INTEGER NOT NULL DEFAULT 0,
  cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
  cache_write_tokens INTEGER NOT NULL DEFAULT 0,
  reasoning_tokens   INTEGER NOT NULL DEFAULT 0,
  cost_usd           REAL NOT NULL DEFAULT 0,
  cache_break        TEXT
);
CREATE INDEX requests_session ON requests(session_id, id);
