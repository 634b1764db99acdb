-- spool_fence lets a transcript write travel in one round trip: it runs inside the pipelined
-- batch of the write (after the session's row was locked by its counter update) and raises
-- when the write must not land, which aborts the batch's implicit transaction as a whole.
-- SQLSTATEs: SP001 session missing, SP002 session rotated by compression, SP003 lease lost.
CREATE FUNCTION spool_fence(p_session text, p_allow_closed boolean, p_conv text, p_holder text, p_generation bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  s_root text;
  s_closed boolean;
  l_holder text;
  l_generation bigint;
  l_expires bigint;
  l_ttl bigint;
  now_us bigint := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
BEGIN
  SELECT root_id, ended_at IS NOT NULL AND end_reason = 'compression' INTO s_root, s_closed
    FROM sessions WHERE id = p_session;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'SP001', MESSAGE = 'session not found';
  END IF;
  IF s_closed AND NOT p_allow_closed THEN
    RAISE EXCEPTION USING ERRCODE = 'SP002', MESSAGE = 'session ended by compression';
  END IF;
  IF p_conv IS NULL THEN
    RETURN;
  END IF;
  SELECT holder, generation, expires_at, ttl INTO l_holder, l_generation, l_expires, l_ttl
    FROM turn_leases WHERE conversation_id = p_conv FOR UPDATE;
  IF NOT FOUND OR l_holder IS DISTINCT FROM p_holder OR l_generation <> p_generation OR s_root <> p_conv THEN
    RAISE EXCEPTION USING ERRCODE = 'SP003', MESSAGE = 'turn lease lost';
  END IF;
  IF l_expires <= now_us THEN
    -- Ours, expired, and nobody took it: the write renews it rather than failing.
    UPDATE turn_leases SET expires_at = now_us + greatest(l_ttl, 100000) WHERE conversation_id = p_conv;
  END IF;
END $$;

-- Every append moves last_active; an index on it costs each append extra page writes (as on
-- SQLite, listings sort the candidate rows instead).
DROP INDEX sessions_last_active;
