"""An MCP server's question waits inside a live call held by one bot process; the answer may reach any
replica (Slack delivers a click to any of them). It is stored as a decision there, and the process that
holds the call is told (PostgreSQL `NOTIFY`, or its poll of at most a second on SQLite) and completes it.
Two bot replicas on one database, each its own Bolt app and agent, the example server over stdio."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack

import pytest

from bot.agent import Agent, QuestionHeldElsewhereError
from bot.assemble import add_tools
from bot.demo import build_demo_agent
from memory import Storage
from tests.slack.harness import API_TOKEN, MODEL, decide_path, request, running_bot, waiting_call
from tests.support.scripted_model import call, reply, tool_calls

from .servers import TITLE, configs, connected, stdio_entry, titles


@pytest.fixture
async def mcp_servers(tmp_path):
    async with connected(configs(tmp_path, {"tickets": stdio_entry()})) as servers:
        yield servers


@pytest.fixture
async def replicas(tmp_path, database_url, slack, model, mcp_servers):
    """Two replicas; each has MCP servers of its own, as two processes would (the first's are
    `mcp_servers`, where the tickets it opens are); the second also serves the HTTP API."""

    def agent_with(servers):
        def agent(storage):
            built = build_demo_agent(storage, model=MODEL)
            add_tools(built, servers.tools)
            return built

        return agent

    async with AsyncExitStack() as stack:
        others = await stack.enter_async_context(connected(configs(tmp_path, {"tickets": stdio_entry()})))
        first = await stack.enter_async_context(
            running_bot(database_url=database_url, slack=slack, agent_factory=agent_with(mcp_servers))
        )
        second = await stack.enter_async_context(
            running_bot(database_url=database_url, slack=slack, agent_factory=agent_with(others), api_token=API_TOKEN)
        )
        yield first, second


async def question_on_the_first(first, model):
    model.chat.push(tool_calls(call("tickets__open_ticket", {"title": TITLE}, id="call_1")))
    await first.mention("open a ticket: the printer is on fire")
    approval = await first.approval_message()
    await first.sender.click(approval, "tool_approve", user="U2")
    return await first.question_message()


def tool_results(model) -> list[str]:
    return [m["content"] for r in model.chat.requests for m in r["messages"] if m.get("role") == "tool"]


async def test_a_form_answer_on_another_replica_reaches_the_server_through_the_holder(replicas, model, mcp_servers):
    first, second = replicas
    question = await question_on_the_first(first, model)
    await second.sender.click(question, "tool_answer", user="U1")
    opened = await second.slack.wait_for("views.open")
    model.chat.push(reply("Opened, high priority · 已开 · 優先度高."))
    high = {"text": {"type": "plain_text", "text": "high"}, "value": json.dumps("high")}
    await second.sender.submit(
        opened[0].params["view"],
        {
            "field:priority": {"value": {"type": "static_select", "selected_option": high}},
            "field:confirm": {"value": {"type": "checkboxes", "selected_options": [{"value": "true"}]}},
        },
    )
    stops = await first.slack.wait_for("chat.stopStream")
    assert first.slack.message("C1", stops[-1].params["ts"]).text == "Opened, high priority · 已开 · 優先度高."
    assert any("opened ticket 4 (high)" in r for r in tool_results(model))
    assert TITLE in await titles(mcp_servers)
    (line,) = [
        a for a in await first.storage.audit_log.entries(tool_name="tickets__open_ticket") if a.action == "resumed"
    ]
    assert line.actor == "U1"


async def test_a_decline_on_another_replica_tells_the_server_decline(replicas, model, mcp_servers):
    first, second = replicas
    question = await question_on_the_first(first, model)
    model.chat.push(reply("OK, I did not open it."))
    await second.sender.click(question, "tool_question_decline", user="U1")
    stops = await first.slack.wait_for("chat.stopStream")
    assert first.slack.message("C1", stops[-1].params["ts"]).text == "OK, I did not open it."
    assert any("not opened: the user chose decline" in r for r in tool_results(model))
    assert TITLE not in await titles(mcp_servers)
    updates = await first.slack.wait_for("chat.update", lambda c: c.params.get("ts") == question.ts)
    assert "Declined by <@U1>" in str(updates[-1].params["blocks"])


async def test_a_cancel_through_the_http_api_of_another_replica_tells_the_server_cancel(replicas, model, mcp_servers):
    first, second = replicas
    question = await question_on_the_first(first, model)
    run_id, call_id = await waiting_call(second)
    model.chat.push(reply("取消了，没有开票。"))
    body = {"action": "cancel", "resumedBy": "U1"}
    status, answer = await request(second, "POST", decide_path(run_id, call_id, "resume"), body=body)
    assert (status, answer["status"]) == (200, "cancelled")
    stops = await first.slack.wait_for("chat.stopStream")
    assert first.slack.message("C1", stops[-1].params["ts"]).text == "取消了，没有开票。"
    assert any("not opened: the user chose cancel" in r for r in tool_results(model))
    updates = await first.slack.wait_for("chat.update", lambda c: c.params.get("ts") == question.ts)
    assert "Cancelled by <@U1>" in str(updates[-1].params["blocks"])
    status, _ = await request(second, "POST", decide_path(run_id, call_id, "resume"), body=body)
    assert status == 409


async def test_a_sub_agents_question_held_by_another_process_is_refused_there_and_nothing_is_decided(
    tmp_path, database_url, model, mcp_servers
):
    """A supervisor's run cannot follow a hand-over yet: the other process refuses the answer before it
    decides anything, and the process that holds the question still takes it."""

    def supervisor(storage, servers):
        inner = Agent(id="tickets-agent", model=MODEL, tools=servers.tools, description="Files tickets")
        return Agent(id="boss", model=MODEL, agents=[inner], storage=storage)

    storage = Storage(database_url)
    try:
        async with connected(configs(tmp_path, {"tickets": stdio_entry()})) as others:
            holder, other = supervisor(storage, mcp_servers), supervisor(storage, others)
            model.chat.push(tool_calls(call("agent-tickets-agent", {"prompt": "open a ticket"}, id="s1")))
            model.chat.push(tool_calls(call("tickets__open_ticket", {"title": TITLE}, id="c1")))
            approval = await holder.generate("open a ticket")
            question = await holder.approve_tool_call_generate(run_id=approval.run_id)
            assert question.finish_reason == "suspended"
            answer = {"priority": "low", "confirm": True}
            with pytest.raises(QuestionHeldElsewhereError):
                await other.resume_stream(answer, run_id=question.run_id)
            assert (await holder.get_tool_call(question.run_id, "s1")).state == "suspended"

            model.chat.push(reply("The ticket is open."))
            model.chat.push(reply("Opened it."))
            done = await holder.resume_generate(answer, run_id=question.run_id)
            assert done.text == "Opened it."
            assert TITLE in await titles(mcp_servers)
    finally:
        await storage.close()
