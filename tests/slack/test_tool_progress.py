"""A long tool says how far it has come (`ctx.progress`): each line is a `tool-progress` chunk of the run's
stream, between its `tool-call` and its `tool-result`, and in Slack the call's task card shows it live (at
most one line a second per call), opening the answer if none is under way."""

from __future__ import annotations

import asyncio

from bot.agent import Agent
from tests.support.scripted_model import call, reply, tool_calls
from tools import create_tool

from .harness import MODEL, running_bot

LINES = ["已複製 40／120 列", "이건 건너뜀", "copié 80 sur 120", "120 行をコピーしました"]


async def copy_rows(_input, ctx):
    ctx.progress(LINES[0])
    ctx.progress(LINES[1])  # right after the first: Slack shows at most one line a second per call
    await asyncio.sleep(1.1)
    ctx.progress(LINES[2])
    await asyncio.sleep(1.1)
    ctx.progress(LINES[3] + "  \n" + "x" * 400)  # one line, cut to 300 characters
    return {"copied": 120}


def copying_agent(_storage) -> Agent:
    tool = create_tool(
        id="copy-rows",
        description="Copy the rows of a table",
        input_schema={"type": "object", "properties": {}},
        execute=copy_rows,
    )
    return Agent(id="copier", model=MODEL, tools=[tool], instructions="Copy rows.")


async def test_progress_lines_are_chunks_between_the_call_and_its_result(model):
    agent = copying_agent(None)
    model.chat.push(tool_calls(call("copy-rows", {}, id="call_c")), reply("Copied."))
    stream = await agent.stream("copy the rows", thread_id="t", resource_id="U1")
    chunks = [chunk async for chunk in stream.full_stream]
    kinds = [c.type for c in chunks if c.type in ("tool-call", "tool-progress", "tool-result")]
    assert kinds == ["tool-call", *["tool-progress"] * 4, "tool-result"]
    said = [c.payload["message"] for c in chunks if c.type == "tool-progress"]
    assert said[:3] == LINES[:3]
    assert said[3].startswith(LINES[3] + " xxx") and len(said[3]) == 300 and said[3].endswith("…")
    assert {c.payload["tool_call_id"] for c in chunks if c.type == "tool-progress"} == {"call_c"}
    assert {c.payload["tool_name"] for c in chunks if c.type == "tool-progress"} == {"copy-rows"}
    assert (await stream.result()).text == "Copied."
    await agent.aclose()


async def test_slack_shows_the_progress_on_the_calls_task_card(database_url, slack, model):
    async with running_bot(database_url=database_url, slack=slack, agent_factory=copying_agent) as bot:
        model.chat.push(tool_calls(call("copy-rows", {}, id="call_c")), reply("Copied 120 rows."))
        await bot.mention("copy the rows")
        stops = await bot.slack.wait_for("chat.stopStream", timeout=30)
        updates = [
            (chunk["status"], chunk["details"])
            for c in bot.slack.calls
            if c.method in ("chat.startStream", "chat.appendStream", "chat.stopStream")
            for chunk in c.params.get("chunks") or []
            if chunk["type"] == "task_update" and chunk["id"] == "call_c"
        ]
        running = [details for status, details in updates if status == "in_progress"]
        assert running[:2] == [f"running: {LINES[0]}", f"running: {LINES[2]}"]  # the line in between: too soon
        assert running[2].startswith(f"running: {LINES[3]}")
        assert updates[-1][0] == "complete"
        answer = bot.slack.message("C1", stops[-1].params["ts"])
        assert answer.text == "Copied 120 rows."


async def test_a_tool_reporting_in_a_tight_loop_keeps_at_most_a_thousand_lines(model):
    """The stream keeps its chunks for every reader: a tool calling `ctx.progress` without end must not fill
    the bot's memory with them."""

    async def chatty(_input, ctx):
        for n in range(5000):
            ctx.progress(f"行 {n}")
        return {"done": True}

    tool = create_tool(id="chatty", description="Reports a lot", input_schema={"type": "object"}, execute=chatty)
    agent = Agent(id="chatter", model=MODEL, tools=[tool], instructions="Run it.")
    model.chat.push(tool_calls(call("chatty", {}, id="call_x")), reply("Done."))
    stream = await agent.stream("run it", thread_id="t", resource_id="U1")
    said = [c.payload["message"] async for c in stream.full_stream if c.type == "tool-progress"]
    assert said == [f"行 {n}" for n in range(1000)]
    assert (await stream.result()).text == "Done."
    await agent.aclose()
