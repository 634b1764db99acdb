-- spool_append_head is the head of an append in one statement: the session's counters (which
-- lock its row and so order appends to it), the closed-session and lease checks of spool_fence,
-- and the root's activity. An append sent them as three statements before its inserts; each
-- statement costs the server a bind and an execution of its own, a third of an append's server
-- time on the benchmark's workload. Raises spool_fence's SQLSTATEs (SP001 no session, SP002
-- closed by compaction, SP003 lease lost), so a refused append leaves nothing.
CREATE FUNCTION spool_append_head(p_session text, p_messages integer, p_tool_calls integer, p_last bigint,
  p_preview text, p_allow_closed boolean, p_conv text, p_holder text, p_generation bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  s_root text;
  s_closed boolean;
  l_holder text;
  l_generation bigint;
  l_expires bigint;
  l_ttl bigint;
  now_us bigint;
BEGIN
  UPDATE sessions SET message_count = message_count + p_messages, tool_call_count = tool_call_count + p_tool_calls,
      last_active = greatest(last_active, p_last), preview = coalesce(preview, p_preview)
    WHERE id = p_session
    RETURNING root_id, ended_at IS NOT NULL AND end_reason = 'compression' INTO s_root, s_closed;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'SP001', MESSAGE = 'session not found';
  END IF;
  IF s_closed AND NOT p_allow_closed THEN
    RAISE EXCEPTION USING ERRCODE = 'SP002', MESSAGE = 'session ended by compression';
  END IF;
  IF p_conv IS NOT NULL THEN
    SELECT holder, generation, expires_at, ttl INTO l_holder, l_generation, l_expires, l_ttl
      FROM turn_leases WHERE conversation_id = p_conv FOR UPDATE;
    IF NOT FOUND OR l_holder IS DISTINCT FROM p_holder OR l_generation <> p_generation OR s_root <> p_conv THEN
      RAISE EXCEPTION USING ERRCODE = 'SP003', MESSAGE = 'turn lease lost';
    END IF;
    now_us := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
    IF l_expires <= now_us THEN
      -- Ours, expired, and nobody took it: the write renews it rather than failing.
      UPDATE turn_leases SET expires_at = now_us + greatest(l_ttl, 100000) WHERE conversation_id = p_conv;
    END IF;
  END IF;
  IF s_root <> p_session THEN
    UPDATE sessions SET last_active = greatest(last_active, p_last) WHERE id = s_root;
  END IF;
END $$;
