"""A preview before approving: a tool's dry run (`preview=` on `create_tool`) runs before the approval is
posted, the message shows what it said, it changes nothing, and a failing or hanging one is shown as
such while Approve and Decline still work."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from pydantic import BaseModel

from bot.agent import Agent
from tests.support.scripted_model import call, reply, tool_calls
from tools import create_tool

from .harness import MODEL, RunningBot, ask_to_delete, record_ids, running_bot

TOKEN = "preview-token"


class Rows(BaseModel):
    table: str


def counting_agent(preview, *, preview_timeout: float = 5.0):
    """An agent with one tool, `purge-rows`, whose executions (and previews) are counted on the agent."""
    seen: dict[str, list[Any]] = {"previews": [], "executions": []}

    async def execute(input: Rows, _ctx) -> dict[str, Any]:
        seen["executions"].append(input.table)
        return {"purged": input.table}

    async def counted_preview(input: Rows, ctx) -> Any:
        seen["previews"].append((input.table, ctx.tool_call_id))
        return await preview(input)

    def build(_storage) -> Agent:
        tool = create_tool(
            id="purge-rows",
            description="Delete every row of a table",
            input_schema=Rows,
            require_approval=True,
            execute=execute,
            preview=counted_preview,
            preview_timeout=preview_timeout,
        )
        agent = Agent(id="purge-agent", model=MODEL, tools=[tool])
        agent.seen = seen  # type: ignore[attr-defined]  # a test handle
        return agent

    return build


def ask_to_purge(model, table: str = "orders") -> None:
    model.chat.push(tool_calls(call("purge-rows", {"table": table}, id="call_p")), reply("Purged."))


async def test_the_approval_shows_the_demo_preview_and_nothing_is_deleted_before_approval(bot: RunningBot, model):
    ask_to_delete(model, 3)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    assert "Preview" in message.all_text
    assert "Will delete 1 record: #3 “Old invoices” (4 would remain)." in message.all_text
    assert message.action_ids()[:2] == ["tool_approve", "tool_decline"]
    assert await record_ids(bot) == [1, 2, 3, 4, 5]  # the dry run deleted nothing

    requested = [e for e in await bot.storage.audit_log.entries() if e.action == "requested"]
    assert len(requested) == 1 and "Will delete 1 record: #3" in requested[0].detail

    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.stopStream")
    assert await record_ids(bot) == [1, 2, 4, 5]
    assert "Approved" in message.all_text and "Will delete 1 record" in message.all_text  # kept once decided


async def test_a_preview_of_a_record_that_is_not_there_says_so(bot: RunningBot, model):
    ask_to_delete(model, 42)
    await bot.mention("delete record 42")
    message = await bot.approval_message()
    assert "There is no record 42: nothing would be deleted." in message.all_text


async def test_a_failing_preview_is_shown_and_approve_still_runs_the_tool_once(database_url, slack, model):
    async def broken(_input: Rows) -> str:
        raise RuntimeError("the catalogue is offline")

    ask_to_purge(model)
    async with running_bot(database_url=database_url, slack=slack, agent_factory=counting_agent(broken)) as bot:
        await bot.mention("purge the orders table")
        message = await bot.approval_message()
        assert "Preview failed" in message.all_text
        assert "RuntimeError: the catalogue is offline" in message.all_text
        assert "You can still approve or decline" in message.all_text
        assert bot.agent.seen["executions"] == []

        await bot.sender.click(message, "tool_approve", user="U2")
        await slack.wait_for("chat.stopStream")
        assert bot.agent.seen["executions"] == ["orders"]
        assert len(bot.agent.seen["previews"]) == 1
        requested = [e for e in await bot.storage.audit_log.entries() if e.action == "requested"]
        assert "preview failed: RuntimeError: the catalogue is offline" in requested[0].detail


async def test_a_hanging_preview_is_cut_off_and_decline_still_works(database_url, slack, model):
    never = asyncio.Event()

    async def hangs(_input: Rows) -> str:
        await never.wait()
        return "never shown"

    ask_to_purge(model)
    model.chat.push(reply("Not purged."))
    factory = counting_agent(hangs, preview_timeout=0.3)
    async with running_bot(database_url=database_url, slack=slack, agent_factory=factory) as bot:
        await bot.mention("purge the orders table")
        message = await bot.approval_message()
        assert "Preview failed" in message.all_text and "did not answer within 0.3 s" in message.all_text
        await bot.sender.click(message, "tool_decline", user="U2")
        await slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
        assert "Declined" in message.all_text
        await slack.settle()
        assert bot.agent.seen["executions"] == []  # a declined call never runs, preview or not


async def test_a_preview_in_other_scripts_is_shown_as_written(database_url, slack, model):
    async def says(input: Rows) -> str:
        return f"将删除 3 行：東京, 서울, Montréal, مرحبا ({input.table})"

    ask_to_purge(model, "注文")
    async with running_bot(database_url=database_url, slack=slack, agent_factory=counting_agent(says)) as bot:
        await bot.mention("注文テーブルを削除して")
        message = await bot.approval_message()
        assert "将删除 3 行：東京, 서울, Montréal, مرحبا (注文)" in message.all_text


async def test_a_preview_with_markup_cannot_ping_or_break_the_message(database_url, slack, model):
    async def loud(_input: Rows) -> dict[str, Any]:
        return {"rows": 2, "note": "<!channel> ``` *bold*"}

    ask_to_purge(model)
    async with running_bot(database_url=database_url, slack=slack, agent_factory=counting_agent(loud)) as bot:
        await bot.mention("purge the orders table")
        message = await bot.approval_message()
        assert "<!channel>" not in message.all_text and "&lt;!channel&gt;" in message.all_text
        assert '"rows": 2' in message.all_text


async def test_the_http_api_lists_the_preview_and_the_chunk_carries_it(database_url, slack, model):
    async def says(input: Rows) -> dict[str, Any]:
        return {"would_purge": 17, "table": input.table}

    model.chat.push(tool_calls(call("purge-rows", {"table": "orders"}, id="call_p")))
    factory = counting_agent(says)
    async with running_bot(database_url=database_url, slack=slack, agent_factory=factory, api_token=TOKEN) as bot:
        await bot.mention("purge the orders table")
        await bot.approval_message()
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                bot.base_url + "/api/agents/purge-agent/suspended-runs", headers={"Authorization": f"Bearer {TOKEN}"}
            ) as response,
        ):
            page = json.loads(await response.text())
        (tool_call,) = page["runs"][0]["toolCalls"]
        assert tool_call["preview"] == {"ok": True, "result": {"would_purge": 17, "table": "orders"}, "error": None}

        # the runtime's own stream: the approval chunk carries the preview
        model.chat.push(tool_calls(call("purge-rows", {"table": "users"}, id="call_q")))
        stream = await bot.agent.stream("purge users", thread_id="t-api", resource_id="U1")
        chunks = [chunk async for chunk in stream.full_stream]
        (approval,) = [c for c in chunks if c.type == "tool-call-approval"]
        assert approval.payload["preview"] == {"ok": True, "result": {"would_purge": 17, "table": "users"}}
        record = await bot.agent.get_tool_call(stream.run_id, "call_q")
        assert record.preview is not None and record.preview.result == {"would_purge": 17, "table": "users"}
        assert len(bot.agent.seen["previews"]) == 2 and bot.agent.seen["executions"] == []
