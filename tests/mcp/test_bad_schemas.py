"""What an MCP server's schemas cannot do to the bot: a tool whose schema is invalid is left out with one
warning line (the server's other tools, and the other servers, work); a pattern that backtracks on
Python's `re` (`^(a+)+$`) stalls nothing, in a tool's input or in a question answered through the HTTP
API; a question whose schema is invalid is refused to the server, never parked. The server is
tests/mcp/schema_server.py, over stdio."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest

from bot.assemble import add_tools
from bot.demo import build_demo_agent
from tests.slack.harness import API_TOKEN, MODEL, decide_path, request, running_bot, waiting_call
from tests.support.processes import bot_env, free_port, start_bot, stop_bot
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import SignedSender
from tests.support.waiting import until
from tools import SchemaValidationError

from .servers import configs, connected, context, stdio_entry, write_config

SCHEMA_SERVER = Path(__file__).with_name("schema_server.py")
EVIL = "a" * 30 + "!"
"""Takes Python's `re` about 40 s against `^(a+)+$` here (24 "a": 0.6 s; each more doubles it); RE2
microseconds."""
PROMPT = 5.0
"""The longest wait between two answers of /health while the bot checks a value: a loop stalled by `re` waits
about 40 s, a loaded machine's pauses (a full garbage collection, two cores shared by four test workers)
have reached 0.8 s."""


def schema_server(*tools: str, **extra) -> dict:
    return {"command": sys.executable, "args": [str(SCHEMA_SERVER), *(["--tools", ",".join(tools)] if tools else [])], **extra}  # fmt: skip


async def bot_command(*args: str, database_url: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *args, env={**os.environ, "DATABASE_URL": database_url},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    return process.returncode, out.decode(), err.decode()


def left_out(err: str) -> dict[str, str]:
    """Tool -> its warning line, for the lines that say a tool of the server `schemas` was left out."""
    lines = [line for line in err.splitlines() if "left out" in line]
    assert all("'schemas'" in line for line in lines), lines
    return {line.split("tool '")[1].split("'")[0]: line for line in lines}


async def test_policy_list_leaves_out_each_bad_tool_with_one_line_and_lists_the_rest(tmp_path):
    servers = {"schemas": schema_server(), "tickets": stdio_entry()}
    path = write_config(tmp_path / "servers.json", servers)
    code, out, err = await bot_command(
        "policy", "list", "--mcp", str(path), database_url=f"sqlite+aiosqlite:///{tmp_path}/b.db"
    )
    assert code == 0, err
    assert "Traceback" not in err and "SchemaError" not in err
    warned = left_out(err)
    assert set(warned) == {"bad_pattern", "bad_type", "bad_output"}
    assert "'(unclosed'" in warned["bad_pattern"] and "/properties/q/pattern" in warned["bad_pattern"]
    assert "/properties/n/type" in warned["bad_type"] and "5 is not valid" in warned["bad_type"]
    assert "output schema" in warned["bad_output"] and "'strng'" in warned["bad_output"]
    listed = {line.split()[0] for line in out.splitlines()[1:]}
    assert {"schemas__echo", "schemas__ask", "tickets__close_ticket", "tickets__open_ticket"} <= listed
    assert not {"schemas__bad_pattern", "schemas__bad_type", "schemas__bad_output"} & listed


async def test_serve_starts_with_a_bad_tool_and_runs_the_good_ones(tmp_path, slack, model):
    servers = {"schemas": schema_server(trust="read-only-hints"), "tickets": stdio_entry()}
    path = write_config(tmp_path / "servers.json", servers)
    port, log = free_port(), tmp_path / "bot.log"
    env = bot_env(f"sqlite+aiosqlite:///{tmp_path}/bot.db", slack, BOT_MCP_CONFIG=str(path))
    process = await start_bot(port, env, log)
    try:
        model.chat.push(tool_calls(call("schemas__echo", {"word": "aaa"}, id="call_1")), reply("它说了 aaa。"))
        sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", env["SLACK_SIGNING_SECRET"], slack=slack)
        status, _ = await sender.event(sender.mention("echo aaa, s'il vous plaît"))
        assert status == 200
        await until(lambda: len(model.chat.requests) >= 2, what="the model to get the tool's result")
        tool_result = [m for m in model.chat.requests[1]["messages"] if m.get("role") == "tool"][-1]
        assert tool_result["content"] == "echo: aaa"
    finally:
        await stop_bot(process)
    assert set(left_out(log.read_text())) == {"bad_pattern", "bad_type", "bad_output"}


# --- the bot in this process, on both databases -------------------------------------------------------


@pytest.fixture
async def mcp_servers(tmp_path):
    servers = {"schemas": schema_server("echo", "shout", "ask", trust="read-only-hints")}
    async with connected(configs(tmp_path, servers)) as started:
        yield started


@pytest.fixture
async def bot(database_url, slack, model, mcp_servers, clock):
    def agent(storage):
        built = build_demo_agent(storage, model=MODEL)
        add_tools(built, mcp_servers.tools)
        return built

    async with running_bot(
        database_url=database_url, slack=slack, agent_factory=agent, api_token=API_TOKEN, clock=clock
    ) as running:
        yield running


@asynccontextmanager
async def health_gaps(base_url: str) -> AsyncIterator[list[float]]:
    """Ask /health over and over while the block runs; yields the seconds between one answer and the next
    (from the start to the first, from the last to the end of the block): a stalled loop is a long gap,
    whether or not a request was under way when it stalled."""
    answered = [time.monotonic()]

    async def sample() -> None:
        async with aiohttp.ClientSession() as session:
            while True:
                async with session.get(base_url + "/health") as response:
                    assert response.status == 200
                answered.append(time.monotonic())
                await asyncio.sleep(0.02)

    gaps: list[float] = []
    task = asyncio.create_task(sample())
    try:
        yield gaps
    finally:
        answered.append(time.monotonic())
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        gaps.extend(later - earlier for earlier, later in zip(answered, answered[1:], strict=False))
    assert len(answered) > 2, "/health was never answered"


def last_tool_result(model) -> str:
    return [m for m in model.chat.requests[-1]["messages"] if m.get("role") == "tool"][-1]["content"]


async def test_the_evil_value_is_checked_without_backtracking_and_refused(tmp_path):
    async with connected(configs(tmp_path, {"schemas": schema_server("echo", "shout")})) as servers:
        echo, shout = servers.tools
        assert await shout.execute({"word": "aaa"}, context()) == {"said": "aaa"}  # a result that fits
    word = "a" * 30 + "!"
    started = time.perf_counter()
    with pytest.raises(SchemaValidationError, match="does not match"):
        echo.parse_args({"word": word})
    assert time.perf_counter() - started < PROMPT  # `re`: about 40 s
    assert echo.parse_args({"word": "a" * 30}) == {"word": "a" * 30}


async def test_an_evil_pattern_in_a_tools_input_stalls_nothing_and_the_value_is_refused(bot, model):
    model.chat.push(tool_calls(call("schemas__echo", {"word": EVIL}, id="call_1")), reply("这个词不行。"))
    async with health_gaps(bot.base_url) as gaps:
        await bot.mention("echo this word")
        await until(lambda: len(model.chat.requests) >= 2, what="the model to get the tool's result")
    assert max(gaps) < PROMPT, gaps
    result = last_tool_result(model)
    assert "does not match" in result and EVIL in result


async def test_an_evil_pattern_in_a_tools_output_schema_stalls_nothing_and_the_result_is_refused(bot, model):
    model.chat.push(tool_calls(call("schemas__shout", {"word": EVIL}, id="call_1")), reply("服务器的结果不对。"))
    async with health_gaps(bot.base_url) as gaps:
        await bot.mention("shout this word")
        await until(lambda: len(model.chat.requests) >= 2, what="the model to get the tool's result")
    assert max(gaps) < PROMPT, gaps
    result = last_tool_result(model)
    assert "Invalid structured content returned by tool shout" in result and "does not match" in result


async def test_an_evil_pattern_in_a_question_answered_by_the_api_stalls_nothing(bot, model):
    model.chat.push(tool_calls(call("schemas__ask", {"kind": "evil"}, id="call_1")))
    await bot.mention("ask me for the code")
    await bot.sender.click(await bot.approval_message(), "tool_approve", user="U2")
    await bot.question_message()
    run_id, call_id = await waiting_call(bot)
    resume = decide_path(run_id, call_id, "resume")
    async with health_gaps(bot.base_url) as gaps:
        status, body = await request(bot, "POST", resume, body={"resumeData": {"code": EVIL}, "resumedBy": "U1"})
    assert max(gaps) < PROMPT, gaps
    assert status == 400 and "does not match" in body["error"]
    assert (await bot.agent.get_tool_call(run_id, call_id)).state == "suspended"

    model.chat.push(reply("服务器收到了。"))
    status, _ = await request(bot, "POST", resume, body={"resumeData": {"code": "aaaa"}, "resumedBy": "U1"})
    assert status == 200
    await until(lambda: len(model.chat.requests) >= 2, what="the model to get the tool's result")
    assert last_tool_result(model) == 'heard accept: {"code": "aaaa"}'


async def test_a_question_whose_schema_is_invalid_is_refused_to_the_server_and_never_posted(bot, model):
    model.chat.push(tool_calls(call("schemas__ask", {"kind": "strng"}, id="call_1")), reply("服务器的问题坏了。"))
    await bot.mention("ask me for the code")
    await bot.sender.click(await bot.approval_message(), "tool_approve", user="U2")
    await until(lambda: len(model.chat.requests) >= 2, what="the model to get the tool's result")
    result = last_tool_result(model)
    assert result.startswith("the client refused the question:") and "strng" in result, result
    assert (await bot.agent.list_suspended_runs()).total == 0
    await bot.slack.settle()
    assert not [c for c in bot.slack.calls_of("chat.postMessage") if "tool_answer" in json.dumps(c.params)]
