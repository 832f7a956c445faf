-- A database created by v0.1.0: see make_fixtures.py
--
-- PostgreSQL database dump
--


-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

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

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: alembic_version; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.alembic_version (
    version_num character varying(32) NOT NULL
);


--
-- Name: audit; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.audit (
    id integer NOT NULL,
    run_id character varying(64) NOT NULL,
    tool_call_id character varying(255) NOT NULL,
    tool_name character varying(255) NOT NULL,
    action character varying(32) NOT NULL,
    actor character varying(255),
    detail text,
    at timestamp with time zone NOT NULL
);


--
-- Name: audit_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.audit_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: audit_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.audit_id_seq OWNED BY public.audit.id;


--
-- Name: demo_records; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.demo_records (
    id integer NOT NULL,
    title character varying(255) NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: demo_records_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.demo_records_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: demo_records_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.demo_records_id_seq OWNED BY public.demo_records.id;


--
-- Name: demo_refunds; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.demo_refunds (
    id integer NOT NULL,
    order_id character varying(64) NOT NULL,
    amount numeric(12,2) NOT NULL,
    reason text,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: demo_refunds_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.demo_refunds_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: demo_refunds_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.demo_refunds_id_seq OWNED BY public.demo_refunds.id;


--
-- Name: messages; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.messages (
    id integer NOT NULL,
    run_id character varying(64) NOT NULL,
    thread_id character varying(255),
    role character varying(16) NOT NULL,
    content text,
    tool_calls json,
    tool_call_id character varying(255),
    created_at timestamp with time zone NOT NULL
);


--
-- Name: messages_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.messages_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: messages_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.messages_id_seq OWNED BY public.messages.id;


--
-- Name: runs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.runs (
    id character varying(64) NOT NULL,
    agent_id character varying(255) NOT NULL,
    thread_id character varying(255),
    resource_id character varying(255),
    uses_memory boolean NOT NULL,
    parent_run_id character varying(64),
    status character varying(32) NOT NULL,
    owner character varying(255),
    heartbeat_at timestamp with time zone,
    step integer NOT NULL,
    max_steps integer NOT NULL,
    require_tool_approval boolean,
    request_context json NOT NULL,
    finish_reason character varying(32),
    error text,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    suspended_at timestamp with time zone
);


--
-- Name: slack_conversations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.slack_conversations (
    thread_id character varying(255) NOT NULL,
    team_id character varying(32) NOT NULL,
    channel character varying(32) NOT NULL,
    thread_ts character varying(32) NOT NULL,
    started_by character varying(32) NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: slack_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.slack_events (
    event_id character varying(64) NOT NULL,
    team_id character varying(32),
    received_at timestamp with time zone NOT NULL
);


--
-- Name: slack_tool_call_messages; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.slack_tool_call_messages (
    id character varying(64) NOT NULL,
    kind character varying(16) NOT NULL,
    run_id character varying(64) NOT NULL,
    tool_call_id character varying(255) NOT NULL,
    tool_name character varying(255) NOT NULL,
    args json,
    thread_id character varying(255) NOT NULL,
    team_id character varying(32) NOT NULL,
    channel character varying(32) NOT NULL,
    thread_ts character varying(32) NOT NULL,
    ts character varying(32),
    requester character varying(32) NOT NULL,
    request_text text,
    closed_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: threads; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.threads (
    id character varying(255) NOT NULL,
    resource_id character varying(255) NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: tool_calls; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tool_calls (
    id integer NOT NULL,
    run_id character varying(64) NOT NULL,
    tool_call_id character varying(255) NOT NULL,
    agent_id character varying(255) NOT NULL,
    thread_id character varying(255),
    resource_id character varying(255),
    step integer NOT NULL,
    "position" integer NOT NULL,
    tool_name character varying(255) NOT NULL,
    args json,
    fingerprint character varying(64),
    state character varying(32) NOT NULL,
    requires_approval boolean NOT NULL,
    suspend_payload json,
    resume_data json,
    result json,
    is_error boolean NOT NULL,
    decision character varying(16),
    decided_by character varying(255),
    decided_at timestamp with time zone,
    reason text,
    child_run_id character varying(64),
    child_tool_call_id character varying(255),
    shown_tool_name character varying(255),
    shown_args json,
    resume_schema json,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    suspended_at timestamp with time zone
);


--
-- Name: tool_calls_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.tool_calls_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: tool_calls_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.tool_calls_id_seq OWNED BY public.tool_calls.id;


--
-- Name: audit id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit ALTER COLUMN id SET DEFAULT nextval('public.audit_id_seq'::regclass);


--
-- Name: demo_records id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.demo_records ALTER COLUMN id SET DEFAULT nextval('public.demo_records_id_seq'::regclass);


--
-- Name: demo_refunds id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.demo_refunds ALTER COLUMN id SET DEFAULT nextval('public.demo_refunds_id_seq'::regclass);


--
-- Name: messages id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages ALTER COLUMN id SET DEFAULT nextval('public.messages_id_seq'::regclass);


--
-- Name: tool_calls id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tool_calls ALTER COLUMN id SET DEFAULT nextval('public.tool_calls_id_seq'::regclass);


--
-- Data for Name: alembic_version; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.alembic_version VALUES ('0002');


--
-- Data for Name: audit; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: demo_records; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.demo_records VALUES (1, 'Quarterly report', '2026-11-30 16:45:53.4806+00');
INSERT INTO public.demo_records VALUES (2, 'Customer list', '2026-11-30 16:45:53.480606+00');
INSERT INTO public.demo_records VALUES (3, 'Old invoices', '2026-11-30 16:45:53.480607+00');
INSERT INTO public.demo_records VALUES (4, 'Meeting notes', '2026-11-30 16:45:53.480607+00');
INSERT INTO public.demo_records VALUES (5, 'Test data', '2026-11-30 16:45:53.480608+00');


--
-- Data for Name: demo_refunds; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: messages; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.messages VALUES (1, '0911ed4b89fe45d085769670831b13c0', 'slack:T1:C1:1700000000.000100', 'user', 'Please delete record 42', 'null', NULL, '2026-11-30 16:45:52.766275+00');
INSERT INTO public.messages VALUES (2, '0911ed4b89fe45d085769670831b13c0', 'slack:T1:C1:1700000000.000100', 'assistant', NULL, '[{"id": "call_v010", "type": "function", "function": {"name": "delete-record", "arguments": "{\"id\": \"42\"}"}}]', NULL, '2026-11-30 16:45:53.284857+00');


--
-- Data for Name: runs; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.runs VALUES ('0911ed4b89fe45d085769670831b13c0', 'upgrade-agent', 'slack:T1:C1:1700000000.000100', 'U1', true, NULL, 'suspended', NULL, '2026-11-30 16:45:53.29959+00', 1, 10, NULL, '{}', NULL, NULL, '2026-11-30 16:45:52.763483+00', '2026-11-30 16:45:53.407675+00', '2026-11-30 16:45:53.407667+00');


--
-- Data for Name: slack_conversations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.slack_conversations VALUES ('slack:T1:C1:1700000000.000100', 'T1', 'C1', '1700000000.000100', 'U1', '2026-11-30 16:45:53.443924+00');


--
-- Data for Name: slack_events; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: slack_tool_call_messages; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: threads; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.threads VALUES ('slack:T1:C1:1700000000.000100', 'U1', '2026-11-30 16:45:52.726288+00');


--
-- Data for Name: tool_calls; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.tool_calls VALUES (1, '0911ed4b89fe45d085769670831b13c0', 'call_v010', 'upgrade-agent', 'slack:T1:C1:1700000000.000100', 'U1', 1, 0, 'delete-record', '{"id": "42"}', 'ae2d331f7bfd23f98d8c95a9b1e4f2c1fd59fac7b0344a6a79feb778fa2311bb', 'awaiting_approval', true, NULL, NULL, NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '2026-11-30 16:45:53.391857+00', '2026-11-30 16:45:53.391864+00', '2026-11-30 16:45:53.381528+00');


--
-- Name: audit_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.audit_id_seq', 1, false);


--
-- Name: demo_records_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.demo_records_id_seq', 1, false);


--
-- Name: demo_refunds_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.demo_refunds_id_seq', 1, false);


--
-- Name: messages_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.messages_id_seq', 2, true);


--
-- Name: tool_calls_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.tool_calls_id_seq', 1, true);


--
-- Name: alembic_version alembic_version_pkc; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alembic_version
    ADD CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num);


--
-- Name: audit audit_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit
    ADD CONSTRAINT audit_pkey PRIMARY KEY (id);


--
-- Name: demo_records demo_records_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.demo_records
    ADD CONSTRAINT demo_records_pkey PRIMARY KEY (id);


--
-- Name: demo_refunds demo_refunds_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.demo_refunds
    ADD CONSTRAINT demo_refunds_pkey PRIMARY KEY (id);


--
-- Name: messages messages_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_pkey PRIMARY KEY (id);


--
-- Name: runs runs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (id);


--
-- Name: slack_conversations slack_conversations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.slack_conversations
    ADD CONSTRAINT slack_conversations_pkey PRIMARY KEY (thread_id);


--
-- Name: slack_events slack_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.slack_events
    ADD CONSTRAINT slack_events_pkey PRIMARY KEY (event_id);


--
-- Name: slack_tool_call_messages slack_tool_call_messages_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.slack_tool_call_messages
    ADD CONSTRAINT slack_tool_call_messages_pkey PRIMARY KEY (id);


--
-- Name: threads threads_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.threads
    ADD CONSTRAINT threads_pkey PRIMARY KEY (id);


--
-- Name: tool_calls tool_calls_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tool_calls
    ADD CONSTRAINT tool_calls_pkey PRIMARY KEY (id);


--
-- Name: tool_calls uq_tool_calls_run_call; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tool_calls
    ADD CONSTRAINT uq_tool_calls_run_call UNIQUE (run_id, tool_call_id);


--
-- Name: ix_messages_run; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_messages_run ON public.messages USING btree (run_id, id);


--
-- Name: ix_messages_thread; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_messages_thread ON public.messages USING btree (thread_id, id);


--
-- Name: ix_runs_agent_status; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_runs_agent_status ON public.runs USING btree (agent_id, status);


--
-- Name: ix_runs_parent; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_runs_parent ON public.runs USING btree (parent_run_id);


--
-- Name: ix_runs_thread_status; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_runs_thread_status ON public.runs USING btree (thread_id, status);


--
-- Name: ix_slack_tool_call_messages_call; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_slack_tool_call_messages_call ON public.slack_tool_call_messages USING btree (run_id, tool_call_id);


--
-- Name: ix_slack_tool_call_messages_thread; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_slack_tool_call_messages_thread ON public.slack_tool_call_messages USING btree (thread_id, closed_at);


--
-- Name: ix_tool_calls_run_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_tool_calls_run_state ON public.tool_calls USING btree (run_id, state);


--
-- Name: ix_tool_calls_thread_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_tool_calls_thread_state ON public.tool_calls USING btree (thread_id, state);


--
-- Name: messages messages_run_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_run_id_fkey FOREIGN KEY (run_id) REFERENCES public.runs(id) ON DELETE CASCADE;


--
-- Name: tool_calls tool_calls_run_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tool_calls
    ADD CONSTRAINT tool_calls_run_id_fkey FOREIGN KEY (run_id) REFERENCES public.runs(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--


