--
-- PostgreSQL database dump
--

\restrict bdOT0Hx1i780vFHV9DagKf2F7sEIEOsU7UybmVgD0VsHp10TiGfbC7U4ATXKbve

-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: pg_trgm; Type: EXTENSION; Schema: -; Owner: -
--

CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;


--
-- Name: EXTENSION pg_trgm; Type: COMMENT; Schema: -; Owner: -
--

COMMENT ON EXTENSION pg_trgm IS 'text similarity measurement and index searching based on trigrams';


--
-- Name: spool_append_head(text, integer, integer, bigint, text, boolean, text, text, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.spool_append_head(p_session text, p_messages integer, p_tool_calls integer, p_last bigint, p_preview text, p_allow_closed boolean, p_conv text, p_holder text, p_generation bigint) RETURNS void
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: spool_fence(text, boolean, text, text, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.spool_fence(p_session text, p_allow_closed boolean, p_conv text, p_holder text, p_generation bigint) RETURNS void
    LANGUAGE plpgsql
    AS $$
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


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: compression_locks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.compression_locks (
    session_id text NOT NULL,
    holder text NOT NULL,
    acquired_at bigint NOT NULL,
    expires_at bigint NOT NULL
);


--
-- Name: idempotency_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.idempotency_keys (
    scope text NOT NULL,
    key text NOT NULL,
    request_hash text NOT NULL,
    status integer DEFAULT 0 NOT NULL,
    response bytea,
    created_at bigint NOT NULL
);


--
-- Name: messages; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.messages (
    id bigint NOT NULL,
    session_id text NOT NULL,
    role text NOT NULL,
    content text DEFAULT ''::text NOT NULL,
    api_content text,
    tool_calls text,
    tool_call_id text,
    tool_name text,
    reasoning text,
    reasoning_details text,
    finish_reason text,
    token_count integer DEFAULT 0 NOT NULL,
    "timestamp" bigint NOT NULL,
    summary boolean DEFAULT false NOT NULL,
    active boolean DEFAULT true NOT NULL,
    compacted boolean DEFAULT false NOT NULL,
    tsv tsvector NOT NULL,
    cjk_text text,
    copy_of bigint
)
WITH (toast_tuple_target='8160');


--
-- Name: messages_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.messages ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.messages_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: model_cooldowns; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.model_cooldowns (
    model text NOT NULL,
    until_us bigint NOT NULL,
    updated_at bigint NOT NULL
);


--
-- Name: platform_cursors; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.platform_cursors (
    platform text NOT NULL,
    bot text NOT NULL,
    channel text NOT NULL,
    last_id text NOT NULL,
    updated_at bigint NOT NULL
);


--
-- Name: platform_inbox; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.platform_inbox (
    platform text NOT NULL,
    event_id text NOT NULL,
    session_key text DEFAULT ''::text NOT NULL,
    payload text,
    state text DEFAULT 'pending'::text NOT NULL,
    session_id text DEFAULT ''::text NOT NULL,
    reply text DEFAULT ''::text NOT NULL,
    holder text DEFAULT ''::text NOT NULL,
    claimed_until bigint DEFAULT 0 NOT NULL,
    received_at bigint NOT NULL,
    updated_at bigint NOT NULL
);


--
-- Name: platform_sends; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.platform_sends (
    turn_id text NOT NULL,
    chunk integer NOT NULL,
    message_id text DEFAULT ''::text NOT NULL,
    text_hash text DEFAULT ''::text NOT NULL,
    updated_at bigint NOT NULL
);


--
-- Name: requests; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.requests (
    id bigint NOT NULL,
    session_id text NOT NULL,
    at bigint NOT NULL,
    model text DEFAULT ''::text NOT NULL,
    task text DEFAULT 'turn'::text NOT NULL,
    input_tokens bigint DEFAULT 0 NOT NULL,
    output_tokens bigint DEFAULT 0 NOT NULL,
    cache_read_tokens bigint DEFAULT 0 NOT NULL,
    cache_write_tokens bigint DEFAULT 0 NOT NULL,
    reasoning_tokens bigint DEFAULT 0 NOT NULL,
    cost_usd double precision DEFAULT 0 NOT NULL,
    cache_break text,
    latency_us bigint DEFAULT 0 NOT NULL,
    fallback text DEFAULT ''::text NOT NULL
);


--
-- Name: requests_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.requests ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.requests_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: routes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.routes (
    session_key text NOT NULL,
    session_id text NOT NULL,
    suspended boolean DEFAULT false NOT NULL,
    resume_pending boolean DEFAULT false NOT NULL,
    origin text,
    updated_at bigint NOT NULL
);


--
-- Name: sessions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.sessions (
    id text NOT NULL,
    source text DEFAULT 'cli'::text NOT NULL,
    user_id text DEFAULT ''::text NOT NULL,
    session_key text DEFAULT ''::text NOT NULL,
    title text,
    model text DEFAULT ''::text NOT NULL,
    model_config text,
    system_prompt_hash text,
    parent_session_id text,
    relation text DEFAULT ''::text NOT NULL,
    root_id text NOT NULL,
    started_at bigint NOT NULL,
    ended_at bigint,
    end_reason text DEFAULT ''::text NOT NULL,
    last_active bigint NOT NULL,
    preview text,
    message_count integer DEFAULT 0 NOT NULL,
    tool_call_count integer DEFAULT 0 NOT NULL,
    input_tokens bigint DEFAULT 0 NOT NULL,
    output_tokens bigint DEFAULT 0 NOT NULL,
    cache_read_tokens bigint DEFAULT 0 NOT NULL,
    cache_write_tokens bigint DEFAULT 0 NOT NULL,
    reasoning_tokens bigint DEFAULT 0 NOT NULL,
    api_call_count bigint DEFAULT 0 NOT NULL,
    cost_usd double precision DEFAULT 0 NOT NULL,
    cwd text DEFAULT ''::text NOT NULL,
    git_branch text DEFAULT ''::text NOT NULL
);


--
-- Name: spool_schema; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.spool_schema (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: system_prompts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.system_prompts (
    hash text NOT NULL,
    prompt text NOT NULL
);


--
-- Name: turn_leases; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.turn_leases (
    conversation_id text NOT NULL,
    holder text,
    generation bigint DEFAULT 0 NOT NULL,
    acquired_at bigint,
    expires_at bigint,
    ttl bigint DEFAULT 0 NOT NULL
);


--
-- Data for Name: compression_locks; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.compression_locks VALUES ('platform-poller:telegram:0123456789abcdef', 'fixture-host:4242', 1796690786461540, 3373490786461547);


--
-- Data for Name: idempotency_keys; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.idempotency_keys VALUES ('', 'fixture-chat-key', '6267b43115c50531dcb51b16e89d5f5e8dfdb565ff9075796d95c333f20d04bf', 200, '\x7b2273657373696f6e5f6964223a2232303236313230385f3030343632365f306130323437222c22626f6479223a7b226964223a2263686174636d706c2d343862316264643066343337396637393361343163653232222c226f626a656374223a22636861742e636f6d706c6574696f6e222c2263726561746564223a313739363639303738362c226d6f64656c223a2273706f6f6c222c2263686f69636573223a5b7b22696e646578223a302c226d657373616765223a7b22726f6c65223a22617373697374616e74222c22636f6e74656e74223a22416e737765722030643030363534613a20796f752073616964205c226964656d706f74656e7420636861745c222e222c227265667573616c223a6e756c6c7d2c2266696e6973685f726561736f6e223a2273746f70222c226c6f6770726f6273223a6e756c6c7d5d2c227573616765223a7b2270726f6d70745f746f6b656e73223a3139392c22636f6d706c6574696f6e5f746f6b656e73223a31312c22746f74616c5f746f6b656e73223a3231302c2270726f6d70745f746f6b656e735f64657461696c73223a7b226361636865645f746f6b656e73223a307d2c22636f6d706c6574696f6e5f746f6b656e735f64657461696c73223a7b22726561736f6e696e675f746f6b656e73223a307d7d2c2273706f6f6c223a7b2273657373696f6e5f6964223a2232303236313230385f3030343632365f306130323437227d7d7d', 1796690786292610);
INSERT INTO public.idempotency_keys VALUES ('', 'fixture-responses-key', 'c189d6dd55df522e98899f96c11ea82b74df08220308bed83fd4886c56a0ac34', 200, '\x7b2273657373696f6e5f6964223a2232303236313230385f3030343632365f356163653761222c22626f6479223a7b22636f6e766572736174696f6e223a7b226964223a2232303236313230385f3030343632365f356163653761227d2c22637265617465645f6174223a313739363639303738362c226572726f72223a6e756c6c2c226964223a22726573705f636430646262303030376337326265363961333163303830222c22696e636f6d706c6574655f64657461696c73223a6e756c6c2c22696e737472756374696f6e73223a6e756c6c2c226d61785f6f75747075745f746f6b656e73223a6e756c6c2c226d65746164617461223a7b7d2c226d6f64656c223a2273706f6f6c222c226f626a656374223a22726573706f6e7365222c226f7574707574223a5b7b22636f6e74656e74223a5b7b22616e6e6f746174696f6e73223a5b5d2c226c6f6770726f6273223a5b5d2c2274657874223a22416e737765722035623438626430643a20796f752073616964205c226964656d706f74656e7420726573706f6e73655c222e222c2274797065223a226f75747075745f74657874227d5d2c226964223a226d73675f636430646262303030376337326265363961333163303830222c22726f6c65223a22617373697374616e74222c22737461747573223a22636f6d706c65746564222c2274797065223a226d657373616765227d5d2c22706172616c6c656c5f746f6f6c5f63616c6c73223a747275652c2270726576696f75735f726573706f6e73655f6964223a6e756c6c2c22737461747573223a22636f6d706c65746564222c2273746f7265223a747275652c2274656d7065726174757265223a6e756c6c2c22746f6f6c5f63686f696365223a226175746f222c22746f6f6c73223a5b5d2c22746f705f70223a6e756c6c2c227472756e636174696f6e223a2264697361626c6564222c227573616765223a7b22696e7075745f746f6b656e73223a3230302c22696e7075745f746f6b656e735f64657461696c73223a7b2263616368655f77726974655f746f6b656e73223a302c226361636865645f746f6b656e73223a307d2c226f75747075745f746f6b656e73223a31322c226f75747075745f746f6b656e735f64657461696c73223a7b22726561736f6e696e675f746f6b656e73223a307d2c22746f74616c5f746f6b656e73223a3231327d7d7d', 1796690786304649);


--
-- Data for Name: messages; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (1, '20261208_004626_ddf339', 'user', 'hello fixture', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786213135, false, true, false, '''fixtur'':2C ''fixture'':2 ''hello'':1', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (2, '20261208_004626_ddf339', 'assistant', 'Answer 1b088548: you said "hello fixture".', NULL, NULL, NULL, NULL, NULL, NULL, 'stop', 0, 1796690786227437, false, true, false, '''1b088548'':2 ''answer'':1 ''fixtur'':6C ''fixture'':6 ''hello'':5 ''said'':4 ''you'':3', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (3, '20261208_004626_ddf339', 'user', 'second turn', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786247824, false, true, false, '''second'':1 ''turn'':2', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (4, '20261208_004626_ddf339', 'assistant', 'Answer 5f351716: you said "second turn".', NULL, NULL, NULL, NULL, NULL, NULL, 'stop', 0, 1796690786251238, false, true, false, '''5f351716'':2 ''answer'':1 ''said'':4 ''second'':5 ''turn'':6 ''you'':3', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (5, '20261208_004626_3b0e5b', 'user', 'hello fixture', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786213135, false, true, false, '''fixtur'':2C ''fixture'':2 ''hello'':1', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (6, '20261208_004626_3b0e5b', 'assistant', 'Answer 1b088548: you said "hello fixture".', NULL, NULL, NULL, NULL, NULL, NULL, 'stop', 0, 1796690786227437, false, true, false, '''1b088548'':2 ''answer'':1 ''fixtur'':6C ''fixture'':6 ''hello'':5 ''said'':4 ''you'':3', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (7, '20261208_004626_3b0e5b', 'user', 'another way', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786262508, false, true, false, '''anoth'':1C ''another'':1 ''way'':2', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (8, '20261208_004626_3b0e5b', 'assistant', 'Answer f41422b7: you said "another way".', NULL, NULL, NULL, NULL, NULL, NULL, 'stop', 0, 1796690786266416, false, true, false, '''anoth'':5C ''another'':5 ''answer'':1 ''f41422b7'':2 ''said'':4 ''way'':6 ''you'':3', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (9, '20261208_004626_ddf339', 'user', 'third turn', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786273275, false, true, false, '''third'':1 ''turn'':2', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (10, '20261208_004626_ddf339', 'assistant', 'Answer bb0797c3: you said "third turn".', NULL, NULL, NULL, NULL, NULL, NULL, 'stop', 0, 1796690786276053, false, true, false, '''answer'':1 ''bb0797c3'':2 ''said'':4 ''third'':5 ''turn'':6 ''you'':3', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (11, '20261208_004626_4627b6', 'user', 'kept in a conversation', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786279832, false, true, false, '''a'':3 ''convers'':4C ''conversation'':4 ''in'':2 ''kept'':1', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (12, '20261208_004626_4627b6', 'user', 'in the conversation', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786284694, false, true, false, '''convers'':3C ''conversation'':3 ''in'':1 ''the'':2', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (13, '20261208_004626_4627b6', 'assistant', 'Answer d4a99fed: you said "in the conversation".', NULL, NULL, NULL, NULL, NULL, NULL, 'stop', 0, 1796690786288435, false, true, false, '''answer'':1 ''convers'':7C ''conversation'':7 ''d4a99fed'':2 ''in'':5 ''said'':4 ''the'':6 ''you'':3', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (14, '20261208_004626_0a0247', 'user', 'idempotent chat', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786297694, false, true, false, '''chat'':2 ''idempot'':1C ''idempotent'':1', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (15, '20261208_004626_0a0247', 'assistant', 'Answer 0d00654a: you said "idempotent chat".', NULL, NULL, NULL, NULL, NULL, NULL, 'stop', 0, 1796690786300746, false, true, false, '''0d00654a'':2 ''answer'':1 ''chat'':6 ''idempot'':5C ''idempotent'':5 ''said'':4 ''you'':3', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (16, '20261208_004626_5ace7a', 'user', 'idempotent response', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786307525, false, true, false, '''idempot'':1C ''idempotent'':1 ''respons'':2C ''response'':2', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (17, '20261208_004626_5ace7a', 'assistant', 'Answer 5b48bd0d: you said "idempotent response".', NULL, NULL, NULL, NULL, NULL, NULL, 'stop', 0, 1796690786310482, false, true, false, '''5b48bd0d'':2 ''answer'':1 ''idempot'':5C ''idempotent'':5 ''respons'':6C ''response'':6 ''said'':4 ''you'':3', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (18, '20261208_004626_fb7675', 'user', 'plan the trip', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786417064, false, true, false, '''plan'':1 ''the'':2 ''trip'':3', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (19, '20261208_004626_fb7675', 'assistant', 'first we pack', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786417065, false, true, false, '''first'':1 ''pack'':3 ''we'':2', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (20, '20261208_004626_fb7675', 'user', 'and then', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786417065, false, true, false, '''and'':1 ''then'':2', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (21, '20261208_004626_fb7675', 'assistant', 'then we go', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786417065, false, true, false, '''go'':3 ''then'':1 ''we'':2', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (22, '20261208_004626_fbb74d', 'user', 'Summary: a trip was planned.', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786427272, true, true, false, '''a'':2 ''plan'':5C ''planned'':5 ''summari'':1C ''summary'':1 ''trip'':3 ''wa'':4C ''was'':4', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (23, '20261208_004626_fbb74d', 'user', 'and then', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786427272, false, true, false, '''and'':1 ''then'':2', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (24, '20261208_004626_fbb74d', 'assistant', 'then we go', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786427272, false, true, false, '''go'':3 ''then'':1 ''we'':2', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (25, '20261208_004626_fbb74d', 'user', 'after the rotation', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786442578, false, true, false, '''after'':1 ''rotat'':3C ''rotation'':3 ''the'':2', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (26, '20261208_004626_fbb74d', 'assistant', 'still here', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786442579, false, true, false, '''here'':2 ''still'':1', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (27, '20261208_004626_e74cfd', 'user', 'hi from telegram', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786448283, false, true, false, '''from'':2 ''hi'':1 ''telegram'':3', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (28, '20261208_004626_e74cfd', 'assistant', 'hello telegram', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786448283, false, true, false, '''hello'':1 ''telegram'':2', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (29, '20261208_004626_717675', 'user', 'hi from slack', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786451973, false, true, false, '''from'':2 ''hi'':1 ''slack'':3', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (30, '20261208_004626_717675', 'assistant', 'hello slack', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786451973, false, true, false, '''hello'':1 ''slack'':2', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (31, '20261208_004626_d17f55', 'user', 'hi from discord', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786454948, false, true, false, '''discord'':3 ''from'':2 ''hi'':1', NULL, NULL);
INSERT INTO public.messages OVERRIDING SYSTEM VALUE VALUES (32, '20261208_004626_d17f55', 'assistant', 'hello discord', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1796690786454949, false, true, false, '''discord'':2 ''hello'':1', NULL, NULL);


--
-- Data for Name: model_cooldowns; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: platform_cursors; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.platform_cursors VALUES ('discord', '800000000000000001', '900000000000000002', '1100000000000000005', 1796690786458396);
INSERT INTO public.platform_cursors VALUES ('discord', '800000000000000001', '900000000000000003', '1100000000000000009', 1796690786460200);
INSERT INTO public.platform_cursors VALUES ('discord', '800000000000000001', '@connected', '1100000000000000007', 1796690786460680);


--
-- Data for Name: platform_inbox; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: platform_sends; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: requests; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.requests OVERRIDING SYSTEM VALUE VALUES (1, '20261208_004626_ddf339', 1796690786227422, 'fake', 'turn', 198, 11, 0, 0, 0, 0, NULL, 153, '');
INSERT INTO public.requests OVERRIDING SYSTEM VALUE VALUES (2, '20261208_004626_ddf339', 1796690786251225, 'fake', 'turn', 221, 10, 0, 0, 0, 0, NULL, 59, '');
INSERT INTO public.requests OVERRIDING SYSTEM VALUE VALUES (3, '20261208_004626_3b0e5b', 1796690786266402, 'fake', 'turn', 221, 10, 0, 0, 0, 0, NULL, 26, '');
INSERT INTO public.requests OVERRIDING SYSTEM VALUE VALUES (4, '20261208_004626_ddf339', 1796690786276040, 'fake', 'turn', 243, 10, 0, 0, 0, 0, NULL, 61, '');
INSERT INTO public.requests OVERRIDING SYSTEM VALUE VALUES (5, '20261208_004626_4627b6', 1796690786288423, 'fake', 'turn', 209, 12, 0, 0, 0, 0, NULL, 25, '');
INSERT INTO public.requests OVERRIDING SYSTEM VALUE VALUES (6, '20261208_004626_0a0247', 1796690786300734, 'fake', 'turn', 199, 11, 0, 0, 0, 0, NULL, 24, '');
INSERT INTO public.requests OVERRIDING SYSTEM VALUE VALUES (7, '20261208_004626_5ace7a', 1796690786310468, 'fake', 'turn', 200, 12, 0, 0, 0, 0, NULL, 58, '');


--
-- Data for Name: routes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.routes VALUES ('api::resp:0e0df106acb5d7ffbf702dfebbfccfc3', '20261208_004626_ddf339', false, false, '{"status":"completed","model":"spool","created_at":1796690786,"message_id":2,"user_message_id":1,"usage":{"input_tokens":198,"output_tokens":11,"cache_read_tokens":0,"cache_write_tokens":0,"reasoning_tokens":0,"api_calls":1,"cost_usd":0}}', 1796690786234268);
INSERT INTO public.routes VALUES ('api::resp:cbdfc99d12e6606f5c44d50063209e52', '20261208_004626_ddf339', false, false, '{"status":"completed","model":"spool","created_at":1796690786,"message_id":4,"user_message_id":3,"previous_response_id":"resp_60a442f661aff2737c1bd1b1","usage":{"input_tokens":221,"output_tokens":10,"cache_read_tokens":0,"cache_write_tokens":0,"reasoning_tokens":0,"api_calls":1,"cost_usd":0}}', 1796690786255511);
INSERT INTO public.routes VALUES ('api::resp:e90f592944e9074eb372be97c3e8feeb', '20261208_004626_3b0e5b', false, false, '{"status":"completed","model":"spool","created_at":1796690786,"message_id":8,"user_message_id":7,"previous_response_id":"resp_60a442f661aff2737c1bd1b1","usage":{"input_tokens":221,"output_tokens":10,"cache_read_tokens":0,"cache_write_tokens":0,"reasoning_tokens":0,"api_calls":1,"cost_usd":0}}', 1796690786269189);
INSERT INTO public.routes VALUES ('api::latest:35c219ec0ce2f89a7bbcaab5721cd108', '20261208_004626_3b0e5b', false, false, '{"id":"resp_6f318ab36803a2c88d466c68"}', 1796690786269681);
INSERT INTO public.routes VALUES ('api::resp:b75ac8750c504b02d8fc4fabcb4f622d', '20261208_004626_ddf339', false, false, '{"status":"completed","model":"spool","created_at":1796690786,"message_id":10,"user_message_id":9,"previous_response_id":"resp_fea2c586b6b217b42c50b78e","usage":{"input_tokens":243,"output_tokens":10,"cache_read_tokens":0,"cache_write_tokens":0,"reasoning_tokens":0,"api_calls":1,"cost_usd":0}}', 1796690786277274);
INSERT INTO public.routes VALUES ('api::latest:066fd0bc4d5bee38c789d941c51176e7', '20261208_004626_ddf339', false, false, '{"id":"resp_7a5839f9c92f8f38c095a6ee"}', 1796690786277825);
INSERT INTO public.routes VALUES ('api::conv:d648d1beca7e517d714e0fa04e31a72b', '20261208_004626_4627b6', false, false, '{"metadata":{"topic":"upgrade fixture"}}', 1796690786280874);
INSERT INTO public.routes VALUES ('api::resp:05b5ad6133e63913fe38ecdf7567de66', '20261208_004626_4627b6', false, false, '{"status":"completed","model":"spool","created_at":1796690786,"message_id":13,"user_message_id":12,"usage":{"input_tokens":209,"output_tokens":12,"cache_read_tokens":0,"cache_write_tokens":0,"reasoning_tokens":0,"api_calls":1,"cost_usd":0}}', 1796690786290894);
INSERT INTO public.routes VALUES ('api::latest:d648d1beca7e517d714e0fa04e31a72b', '20261208_004626_4627b6', false, false, '{"id":"resp_945984490c6318f63623b25e"}', 1796690786291287);
INSERT INTO public.routes VALUES ('api::derived:770d3ddbc6d82781b92442f02e485c90', '20261208_004626_0a0247', false, false, NULL, 1796690786296317);
INSERT INTO public.routes VALUES ('api::resp:2cc8530e46e9b396cce4fd6796b76b67', '20261208_004626_5ace7a', false, false, '{"status":"completed","model":"spool","created_at":1796690786,"message_id":17,"user_message_id":16,"usage":{"input_tokens":200,"output_tokens":12,"cache_read_tokens":0,"cache_write_tokens":0,"reasoning_tokens":0,"api_calls":1,"cost_usd":0}}', 1796690786312515);
INSERT INTO public.routes VALUES ('api::latest:c4ce921a6eb98abb2b9b3b5b8727c893', '20261208_004626_5ace7a', false, false, '{"id":"resp_cd0dbb0007c72be69a31c080"}', 1796690786312906);
INSERT INTO public.routes VALUES ('agent:main:telegram:dm:123456789', '20261208_004626_e74cfd', false, false, '{"chat_type":"dm","platform":"telegram"}', 1796690786448961);
INSERT INTO public.routes VALUES ('agent:main:slack:channel:T01:C02:U03', '20261208_004626_717675', false, false, '{"chat_type":"dm","platform":"slack"}', 1796690786452528);
INSERT INTO public.routes VALUES ('agent:main:discord:dm:900000000000000001', '20261208_004626_d17f55', false, false, '{"chat_type":"dm","platform":"discord"}', 1796690786455536);


--
-- Data for Name: sessions; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.sessions VALUES ('20261208_004626_ddf339', 'api', '', '', 'Hello fixture', 'fake', '{"auto_title":"Hello fixture","compression_state":{"compression_count":0,"ineffective_count":0,"fallback_streak":0,"anchor_prompt":243,"anchor_estimate":268,"last_completion":10}}', '644569d46cf0f7fd06b9f6be4f59882d6df6f4e5502ae32243c84271786247c5', NULL, '', '20261208_004626_ddf339', 1796690786203208, NULL, '', 1796690786276053, 'hello fixture', 6, 0, 662, 31, 0, 0, 0, 3, 0, '', '');
INSERT INTO public.sessions VALUES ('20261208_004626_5ace7a', 'api', '', '', 'Idempotent response', 'fake', '{"auto_title":"Idempotent response","compression_state":{"compression_count":0,"ineffective_count":0,"fallback_streak":0,"anchor_prompt":200,"anchor_estimate":202,"last_completion":12}}', 'a7e77501e7fb3c6a3f45305f33d6f72292f0198fc7b285d62c9a018cea58bc55', NULL, '', '20261208_004626_5ace7a', 1796690786305639, NULL, '', 1796690786310482, 'idempotent response', 2, 0, 200, 12, 0, 0, 0, 1, 0, '', '');
INSERT INTO public.sessions VALUES ('20261208_004626_4627b6', 'api', '', '', 'Kept in a conversation', 'fake', '{"auto_title":"Kept in a conversation","compression_state":{"compression_count":0,"ineffective_count":0,"fallback_streak":0,"anchor_prompt":209,"anchor_estimate":218,"last_completion":12}}', '09dd5533916b51612a3e059dec8789cfe8cf1862d73a2db615c6a6edc9080a6c', NULL, '', '20261208_004626_4627b6', 1796690786278887, NULL, '', 1796690786288435, 'kept in a conversation', 3, 0, 209, 12, 0, 0, 0, 1, 0, '', '');
INSERT INTO public.sessions VALUES ('20261208_004626_3b0e5b', 'api', '', '', 'Hello fixture #2', 'fake', '{"auto_title":"Hello fixture","compression_state":{"compression_count":0,"ineffective_count":0,"fallback_streak":0,"anchor_prompt":221,"anchor_estimate":235,"last_completion":10}}', '1e3a97ea874e49abef5a924ece0178368a7fecbb0bb3c34227dd15a1083e507c', '20261208_004626_ddf339', 'branch', '20261208_004626_3b0e5b', 1796690786260215, NULL, '', 1796690786266416, 'hello fixture', 4, 0, 221, 10, 0, 0, 0, 1, 0, '', '');
INSERT INTO public.sessions VALUES ('20261208_004626_fbb74d', 'cli', '', '', 'fixture chain #2', 'fake-model', NULL, NULL, '20261208_004626_fb7675', 'compression', '20261208_004626_fb7675', 1796690786428760, NULL, '', 1796690786442579, 'and then', 5, 0, 0, 0, 0, 0, 0, 0, 0, '', '');
INSERT INTO public.sessions VALUES ('20261208_004626_0a0247', 'api', '', '', 'Idempotent chat', 'fake', '{"auto_title":"Idempotent chat","compression_state":{"compression_count":0,"ineffective_count":0,"fallback_streak":0,"anchor_prompt":199,"anchor_estimate":201,"last_completion":11}}', '39ab5d6796b63ebc411ddc3cfbb0b50673f3dd01b0c02132251e17c571d7a973', NULL, '', '20261208_004626_0a0247', 1796690786295347, NULL, '', 1796690786300746, 'idempotent chat', 2, 0, 199, 11, 0, 0, 0, 1, 0, '', '');
INSERT INTO public.sessions VALUES ('20261208_004626_fb7675', 'cli', '', '', 'fixture chain', 'fake-model', NULL, NULL, NULL, '', '20261208_004626_fb7675', 1796690786396098, 1796690786440323, 'compression', 1796690786442579, 'plan the trip', 4, 0, 0, 0, 0, 0, 0, 0, 0, '', '');
INSERT INTO public.sessions VALUES ('20261208_004626_e74cfd', 'telegram', '', 'agent:main:telegram:dm:123456789', NULL, '', NULL, NULL, NULL, '', '20261208_004626_e74cfd', 1796690786443295, NULL, '', 1796690786448283, 'hi from telegram', 2, 0, 0, 0, 0, 0, 0, 0, 0, '', '');
INSERT INTO public.sessions VALUES ('20261208_004626_717675', 'slack', '', 'agent:main:slack:channel:T01:C02:U03', NULL, '', NULL, NULL, NULL, '', '20261208_004626_717675', 1796690786450512, NULL, '', 1796690786451973, 'hi from slack', 2, 0, 0, 0, 0, 0, 0, 0, 0, '', '');
INSERT INTO public.sessions VALUES ('20261208_004626_d17f55', 'discord', '', 'agent:main:discord:dm:900000000000000001', NULL, '', NULL, NULL, NULL, '', '20261208_004626_d17f55', 1796690786453208, NULL, '', 1796690786454949, 'hi from discord', 2, 0, 0, 0, 0, 0, 0, 0, 0, '', '');


--
-- Data for Name: spool_schema; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.spool_schema VALUES (1, '0001_core.sql', '2026-12-08 00:46:26.066254+00');
INSERT INTO public.spool_schema VALUES (2, '0002_gateway.sql', '2026-12-08 00:46:26.143012+00');
INSERT INTO public.spool_schema VALUES (3, '0003_fence.sql', '2026-12-08 00:46:26.162522+00');
INSERT INTO public.spool_schema VALUES (4, '0004_search_copies.sql', '2026-12-08 00:46:26.1674+00');
INSERT INTO public.spool_schema VALUES (5, '0005_request_latency.sql', '2026-12-08 00:46:26.170581+00');
INSERT INTO public.spool_schema VALUES (6, '0006_platform.sql', '2026-12-08 00:46:26.171615+00');
INSERT INTO public.spool_schema VALUES (7, '0007_request_fallback.sql', '2026-12-08 00:46:26.178778+00');
INSERT INTO public.spool_schema VALUES (8, '0008_gin_pending.sql', '2026-12-08 00:46:26.179805+00');
INSERT INTO public.spool_schema VALUES (9, '0009_model_cooldowns.sql', '2026-12-08 00:46:26.180483+00');
INSERT INTO public.spool_schema VALUES (10, '0010_inline_rows.sql', '2026-12-08 00:46:26.183028+00');
INSERT INTO public.spool_schema VALUES (11, '0011_append_head.sql', '2026-12-08 00:46:26.183694+00');
INSERT INTO public.spool_schema VALUES (12, '0012_read_cursors.sql', '2026-12-08 00:46:26.186557+00');
INSERT INTO public.spool_schema VALUES (13, '0013_title_per_user.sql', '2026-12-08 00:46:26.188479+00');
INSERT INTO public.spool_schema VALUES (14, '0014_search_stems.sql', '2026-12-08 00:46:26.189942+00');


--
-- Data for Name: system_prompts; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.system_prompts VALUES ('644569d46cf0f7fd06b9f6be4f59882d6df6f4e5502ae32243c84271786247c5', 'You are spool, a capable, direct assistant that works through long sessions with its user. You are precise, you say plainly what you did and what you did not do, and you keep the user''s decisions and constraints in mind across the whole session.

Finish the task you were given before you stop. When something blocks you, say what it is and what you need. Do not invent results you did not observe.

Any memory section below is a snapshot taken when this prompt was built. It may be out of date; prefer what the user tells you now.

You are answering through an API; the client decides how text is rendered.

Conversation started: 2026-12-08T00:46:26Z | session 20261208_004626_ddf339 | model fake | provider fake | platform api | cwd /tmp/rel-b27');
INSERT INTO public.system_prompts VALUES ('1e3a97ea874e49abef5a924ece0178368a7fecbb0bb3c34227dd15a1083e507c', 'You are spool, a capable, direct assistant that works through long sessions with its user. You are precise, you say plainly what you did and what you did not do, and you keep the user''s decisions and constraints in mind across the whole session.

Finish the task you were given before you stop. When something blocks you, say what it is and what you need. Do not invent results you did not observe.

Any memory section below is a snapshot taken when this prompt was built. It may be out of date; prefer what the user tells you now.

You are answering through an API; the client decides how text is rendered.

Conversation started: 2026-12-08T00:46:26Z | session 20261208_004626_3b0e5b | model fake | provider fake | platform api | cwd /tmp/rel-b27');
INSERT INTO public.system_prompts VALUES ('09dd5533916b51612a3e059dec8789cfe8cf1862d73a2db615c6a6edc9080a6c', 'You are spool, a capable, direct assistant that works through long sessions with its user. You are precise, you say plainly what you did and what you did not do, and you keep the user''s decisions and constraints in mind across the whole session.

Finish the task you were given before you stop. When something blocks you, say what it is and what you need. Do not invent results you did not observe.

Any memory section below is a snapshot taken when this prompt was built. It may be out of date; prefer what the user tells you now.

You are answering through an API; the client decides how text is rendered.

Conversation started: 2026-12-08T00:46:26Z | session 20261208_004626_4627b6 | model fake | provider fake | platform api | cwd /tmp/rel-b27');
INSERT INTO public.system_prompts VALUES ('39ab5d6796b63ebc411ddc3cfbb0b50673f3dd01b0c02132251e17c571d7a973', 'You are spool, a capable, direct assistant that works through long sessions with its user. You are precise, you say plainly what you did and what you did not do, and you keep the user''s decisions and constraints in mind across the whole session.

Finish the task you were given before you stop. When something blocks you, say what it is and what you need. Do not invent results you did not observe.

Any memory section below is a snapshot taken when this prompt was built. It may be out of date; prefer what the user tells you now.

You are answering through an API; the client decides how text is rendered.

Conversation started: 2026-12-08T00:46:26Z | session 20261208_004626_0a0247 | model fake | provider fake | platform api | cwd /tmp/rel-b27');
INSERT INTO public.system_prompts VALUES ('a7e77501e7fb3c6a3f45305f33d6f72292f0198fc7b285d62c9a018cea58bc55', 'You are spool, a capable, direct assistant that works through long sessions with its user. You are precise, you say plainly what you did and what you did not do, and you keep the user''s decisions and constraints in mind across the whole session.

Finish the task you were given before you stop. When something blocks you, say what it is and what you need. Do not invent results you did not observe.

Any memory section below is a snapshot taken when this prompt was built. It may be out of date; prefer what the user tells you now.

You are answering through an API; the client decides how text is rendered.

Conversation started: 2026-12-08T00:46:26Z | session 20261208_004626_5ace7a | model fake | provider fake | platform api | cwd /tmp/rel-b27');


--
-- Data for Name: turn_leases; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.turn_leases VALUES ('20261208_004626_3b0e5b', NULL, 1, 1796690786263152, NULL, 300000000);
INSERT INTO public.turn_leases VALUES ('20261208_004626_ddf339', NULL, 3, 1796690786274029, NULL, 300000000);
INSERT INTO public.turn_leases VALUES ('20261208_004626_4627b6', NULL, 1, 1796690786285474, NULL, 300000000);
INSERT INTO public.turn_leases VALUES ('20261208_004626_0a0247', NULL, 1, 1796690786298497, NULL, 300000000);
INSERT INTO public.turn_leases VALUES ('20261208_004626_5ace7a', NULL, 1, 1796690786307863, NULL, 300000000);


--
-- Name: messages_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.messages_id_seq', 32, true);


--
-- Name: requests_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.requests_id_seq', 7, true);


--
-- Name: compression_locks compression_locks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.compression_locks
    ADD CONSTRAINT compression_locks_pkey PRIMARY KEY (session_id);


--
-- Name: idempotency_keys idempotency_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (scope, key);


--
-- Name: messages messages_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_pkey PRIMARY KEY (id);


--
-- Name: model_cooldowns model_cooldowns_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.model_cooldowns
    ADD CONSTRAINT model_cooldowns_pkey PRIMARY KEY (model);


--
-- Name: platform_cursors platform_cursors_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.platform_cursors
    ADD CONSTRAINT platform_cursors_pkey PRIMARY KEY (platform, bot, channel);


--
-- Name: platform_inbox platform_inbox_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.platform_inbox
    ADD CONSTRAINT platform_inbox_pkey PRIMARY KEY (platform, event_id);


--
-- Name: platform_sends platform_sends_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.platform_sends
    ADD CONSTRAINT platform_sends_pkey PRIMARY KEY (turn_id, chunk);


--
-- Name: requests requests_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.requests
    ADD CONSTRAINT requests_pkey PRIMARY KEY (id);


--
-- Name: routes routes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.routes
    ADD CONSTRAINT routes_pkey PRIMARY KEY (session_key);


--
-- Name: sessions sessions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (id);


--
-- Name: spool_schema spool_schema_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.spool_schema
    ADD CONSTRAINT spool_schema_pkey PRIMARY KEY (version);


--
-- Name: system_prompts system_prompts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.system_prompts
    ADD CONSTRAINT system_prompts_pkey PRIMARY KEY (hash);


--
-- Name: turn_leases turn_leases_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.turn_leases
    ADD CONSTRAINT turn_leases_pkey PRIMARY KEY (conversation_id);


--
-- Name: idempotency_keys_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX idempotency_keys_created ON public.idempotency_keys USING btree (created_at);


--
-- Name: messages_cjk; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_cjk ON public.messages USING btree (id) WHERE (cjk_text IS NOT NULL);


--
-- Name: messages_copy; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_copy ON public.messages USING btree (copy_of) WHERE (copy_of IS NOT NULL);


--
-- Name: messages_long_tool; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_long_tool ON public.messages USING btree (id) WHERE ((role = 'tool'::text) AND (length(content) > 8192));


--
-- Name: messages_session; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_session ON public.messages USING btree (session_id, id);


--
-- Name: messages_session_active; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_session_active ON public.messages USING btree (session_id, id) WHERE active;


--
-- Name: messages_trgm; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_trgm ON public.messages USING gin (cjk_text public.gin_trgm_ops) WITH (fastupdate='on', gin_pending_list_limit='256') WHERE (cjk_text IS NOT NULL);


--
-- Name: messages_tsv; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_tsv ON public.messages USING gin (tsv) WITH (fastupdate='on', gin_pending_list_limit='256');


--
-- Name: platform_inbox_open; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX platform_inbox_open ON public.platform_inbox USING btree (platform, state, received_at);


--
-- Name: platform_inbox_updated; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX platform_inbox_updated ON public.platform_inbox USING btree (updated_at);


--
-- Name: platform_sends_updated; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX platform_sends_updated ON public.platform_sends USING btree (updated_at);


--
-- Name: requests_session; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX requests_session ON public.requests USING btree (session_id, id);


--
-- Name: routes_session; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX routes_session ON public.routes USING btree (session_id);


--
-- Name: sessions_id_prefix; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX sessions_id_prefix ON public.sessions USING btree (id text_pattern_ops);


--
-- Name: sessions_key; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX sessions_key ON public.sessions USING btree (session_key, started_at DESC) WHERE (session_key <> ''::text);


--
-- Name: sessions_parent; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX sessions_parent ON public.sessions USING btree (parent_session_id);


--
-- Name: sessions_root; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX sessions_root ON public.sessions USING btree (root_id);


--
-- Name: sessions_source; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX sessions_source ON public.sessions USING btree (source);


--
-- Name: sessions_title; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX sessions_title ON public.sessions USING btree (user_id, title) WHERE (title IS NOT NULL);


--
-- Name: messages messages_session_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_session_id_fkey FOREIGN KEY (session_id) REFERENCES public.sessions(id) ON DELETE CASCADE;


--
-- Name: requests requests_session_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.requests
    ADD CONSTRAINT requests_session_id_fkey FOREIGN KEY (session_id) REFERENCES public.sessions(id) ON DELETE CASCADE;


--
-- Name: routes routes_session_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.routes
    ADD CONSTRAINT routes_session_id_fkey FOREIGN KEY (session_id) REFERENCES public.sessions(id) ON DELETE CASCADE;


--
-- Name: sessions sessions_parent_session_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.sessions
    ADD CONSTRAINT sessions_parent_session_id_fkey FOREIGN KEY (parent_session_id) REFERENCES public.sessions(id) ON DELETE SET NULL;


--
-- Name: sessions sessions_system_prompt_hash_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.sessions
    ADD CONSTRAINT sessions_system_prompt_hash_fkey FOREIGN KEY (system_prompt_hash) REFERENCES public.system_prompts(hash);


--
-- PostgreSQL database dump complete
--

\unrestrict bdOT0Hx1i780vFHV9DagKf2F7sEIEOsU7UybmVgD0VsHp10TiGfbC7U4ATXKbve

