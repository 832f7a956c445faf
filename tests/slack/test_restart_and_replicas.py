"""A pending approval survives a restart (the click lands on a new app instance), and two instances on
one database give the same results as one."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.scripted_model import reply

from .harness import ask_to_delete, record_ids, running_bot

pytestmark = pytest.mark.both_databases


async def test_pending_approval_is_decided_after_a_restart(database_url, slack, model):
    ask_to_delete(model)
    async with running_bot(database_url=database_url, slack=slack) as before:
        event = await before.mention("delete record 3")
        message = await before.approval_message()
    # the first instance is gone (its storage closed, its server stopped); a new one serves the click
    async with running_bot(database_url=database_url, slack=slack) as after:
        await after.sender.click(message, "tool_approve", user="U2")
        stops = await slack.wait_for("chat.stopStream")
        assert slack.message("C1", stops[-1].params["ts"]).text == "Deleted record 3."
        assert slack.message("C1", stops[-1].params["ts"]).thread_ts == event["ts"]
        assert "Approved" in message.all_text and message.action_ids() == []
        assert await record_ids(after) == [1, 2, 4, 5]


async def test_two_instances_racing_on_one_approval_run_the_tool_once(database_url, slack, model):
    ask_to_delete(model)
    async with (
        running_bot(database_url=database_url, slack=slack) as one,
        running_bot(database_url=database_url, slack=slack) as two,
    ):
        await one.mention("delete record 3")
        message = await one.approval_message()
        await asyncio.gather(
            one.sender.click(message, "tool_approve", user="U1"), two.sender.click(message, "tool_approve", user="U2")
        )
        await slack.wait_for("chat.stopStream")
        await slack.wait_for("chat.postEphemeral", lambda c: "already decided" in c.params["text"])
        await slack.settle()
        assert await record_ids(one) == [1, 2, 4, 5]
        assert len(model.chat.requests) == 2
        assert len(slack.calls_of("chat.stopStream")) == 1


async def test_conversation_continues_on_the_other_instance(database_url, slack, model):
    model.chat.push(reply("one"), reply("two"))
    async with (
        running_bot(database_url=database_url, slack=slack) as one,
        running_bot(database_url=database_url, slack=slack) as two,
    ):
        first = await one.mention("remember 7")
        await slack.wait_for("chat.stopStream")
        await two.say("what number?", thread_ts=first["ts"])
        await slack.wait_for("chat.stopStream", count=2)
        assert "remember 7" in [m.get("content") for m in model.chat.requests[1]["messages"]]
