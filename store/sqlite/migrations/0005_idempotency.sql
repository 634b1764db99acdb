-- Idempotency keys of gateway POSTs: the first request with a key claims it (status 0 while it
-- runs); its outcome is recorded so a retry with the same key and body replays it.
CREATE TABLE idempotency_keys (
  scope        TEXT NOT NULL,
  key          TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  status       INTEGER NOT NULL DEFAULT 0,
  response     BLOB,
  created_at   INTEGER NOT NULL,
  PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);
