-- The wall time of each recorded model call (request sent to answer complete), for the session
-- browser's per-call table; 0 for calls recorded before it was measured.
ALTER TABLE requests ADD COLUMN latency_us BIGINT NOT NULL DEFAULT 0;
