"""Malformed input to the HTTP API, with a valid token: each is a 400 (or a 404 for an id that cannot
exist), never a 500 or a traceback, and resume data with text no database stores is cleaned, not a run
that fails later (issue 17, items 8 and 9). On SQLite and PostgreSQL."""

from __future__ import annotations

import logging

import aiohttp
import pytest

from tests.support.scripted_model import call, reply, tool_calls

from .harness import AUTH, RunningBot, decide_path, request, waiting_call

pytestmark = pytest.mark.both_databases


async def raw_request(bot: RunningBot, method: str, path: str, data: bytes | None = None) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, bot.base_url + path, data=data, headers=AUTH) as response,
    ):
        return response.status, await response.text()


LIST = "/api/agents/demo-agent/suspended-runs"
QUERIES = [
    ("page=9223372036854775807", 400),
    ("page=-1", 400),
    ("page=1e3", 400),
    ("page=%D9%A3", 400),  # an Arabic-Indic three: int() reads it, a query parameter is ASCII digits
    ("perPage=-5", 400),
    ("perPage=" + "9" * 5000, 400),
    ("perPage=9223372036854775807", 400),
    ("threadId=%00&resourceId=%ED%A0%80", 200),
    ("page=3&perPage=200", 200),
]


async def test_malformed_input_is_a_4xx_and_no_traceback(api_bot: RunningBot, model, caplog):
    caplog.set_level(logging.DEBUG)
    model.chat.push(tool_calls(call("get-weather", {}, id="call_1")), reply("Il fait beau à 東京."))
    await api_bot.mention("what's the weather?")
    await api_bot.question_message()
    run_id, call_id = await waiting_call(api_bot)
    resume = decide_path(run_id, call_id, "resume")

    for query, expected in QUERIES:
        status, text = await raw_request(api_bot, "GET", f"{LIST}?{query}")
        assert status == expected, (query, status, text[:200])
    for body in (b'{"resumeData": {"city": "\xff\xfe"}}', b'{"resumeData": {"city": NaN}}', b"[" * 100_000):
        status, text = await raw_request(api_bot, "POST", resume, body)
        assert status == 400, (body[:40], status, text[:200])
    status, _ = await raw_request(api_bot, "POST", decide_path("run%00x", call_id, "resume"), b'{"resumeData": {}}')
    assert status == 404
    status, _ = await raw_request(api_bot, "POST", decide_path(run_id, "%ED%A0%80", "approve"), b'{"approver": "U2"}')
    assert status in (400, 404)

    problems = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not problems, [r.getMessage()[:300] for r in problems]
    assert (await api_bot.agent.get_tool_call(run_id, call_id)).state == "suspended"


async def test_resume_data_with_a_lone_surrogate_is_cleaned_and_the_run_finishes(api_bot: RunningBot, model):
    model.chat.push(tool_calls(call("get-weather", {}, id="call_1")), reply("Il fait beau à 東京."))
    await api_bot.mention("what's the weather?")
    await api_bot.question_message()
    run_id, call_id = await waiting_call(api_bot)

    body = b'{"resumeData": {"city": "\\u6771\\u4eac\\ud800\\u0000"}, "resumedBy": "U1"}'
    status, text = await raw_request(api_bot, "POST", decide_path(run_id, call_id, "resume"), body)
    assert status == 200, text
    await api_bot.slack.wait_for("chat.stopStream")
    record = await api_bot.agent.get_tool_call(run_id, call_id)
    assert record.state == "done", record
    assert (await api_bot.agent.get_run(run_id)).status == "completed"
    tool_message = [m for m in model.chat.requests[-1]["messages"] if m.get("role") == "tool"][-1]
    assert "東京\ufffd" in tool_message["content"]
    assert (await request(api_bot, "GET", LIST))[1]["total"] == 0
