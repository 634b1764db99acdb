-- Gateway routing: the session each session key (one chat, thread or user lane) continues, with
-- the lane's flags. A gateway restart reads these to resume every chat where it was.
CREATE TABLE routes (
  session_key    TEXT PRIMARY KEY,
  session_id     TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  suspended      INTEGER NOT NULL DEFAULT 0,
  resume_pending INTEGER NOT NULL DEFAULT 0,
  origin         TEXT,
  updated_at     INTEGER NOT NULL
);
CREATE INDEX routes_session ON routes(session_id);
