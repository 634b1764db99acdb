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
