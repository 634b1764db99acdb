-- Gateway routing (store/sqlite 0004_routes.sql) and idempotency keys (0005_idempotency.sql).
CREATE TABLE routes (
  session_key    text PRIMARY KEY,
  session_id     text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  suspended      boolean NOT NULL DEFAULT false,
  resume_pending boolean NOT NULL DEFAULT false,
  origin         text,
  updated_at     bigint NOT NULL
);
CREATE INDEX routes_session ON routes(session_id);

CREATE TABLE idempotency_keys (
  scope        text NOT NULL,
  key          text NOT NULL,
  request_hash text NOT NULL,
  status       integer NOT NULL DEFAULT 0,
  response     bytea,
  created_at   bigint NOT NULL,
  PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);
