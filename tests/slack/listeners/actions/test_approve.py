"""The approval message and its Approve button."""

from __future__ import annotations

import asyncio

from sqlalchemy import select

from tests.support.scripted_model import call, tool_calls

from ...harness import RunningBot, ask_to_delete, record_ids


async def test_approval_message_shows_tool_args_and_who_asked(bot: RunningBot, model):
    ask_to_delete(model)
    event = await bot.mention("please delete record 3")
    message = await bot.approval_message()
    assert message.thread_ts == event["ts"]
    assert message.action_ids() == [
        "tool_approve",
        "tool_decline",
        "tool_decline_with_reason",
        "tool_edit_args",
        "tool_cancel",
    ]
    text = message.all_text
    assert "delete-record" in text and "Delete a record by ID" in text
    assert '"id": 3' in text and "<@U1>" in text and "please delete record 3" in text
    # the value is an opaque reference, not the run or call id
    value = message.button_value("tool_approve")
    assert "call_1" not in value and len(value) >= 20
    assert await record_ids(bot) == [1, 2, 3, 4, 5]  # nothing ran yet


async def test_approve_runs_the_tool_and_updates_the_message(bot: RunningBot, model):
    ask_to_delete(model)
    event = await bot.mention("delete record 3")
    message = await bot.approval_message()

    status, _ = await bot.sender.click(message, "tool_approve", user="U2")
    assert status == 200
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert message.action_ids() == []
    assert "Approved" in message.all_text and "<@U2>" in message.all_text and "<!date^" in message.all_text
    stops = await bot.slack.wait_for("chat.stopStream")
    answer = bot.slack.message("C1", stops[-1].params["ts"])
    assert answer.text == "Deleted record 3." and answer.thread_ts == event["ts"]
    assert await record_ids(bot) == [1, 2, 4, 5]
    record = await bot.agent.get_tool_call(model.chat.requests[0] and (await _run_id(bot)), "call_1")
    assert record.decided_by == "U2"


async def _run_id(bot: RunningBot) -> str:
    from bot.slack.tables import ToolCallMessageRow

    async with bot.storage.session() as session:
        return (await session.scalars(select(ToolCallMessageRow.run_id))).first()


async def test_double_click_runs_the_tool_once(bot: RunningBot, model):
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    results = await asyncio.gather(
        bot.sender.click(message, "tool_approve", user="U1"), bot.sender.click(message, "tool_approve", user="U2")
    )
    assert [status for status, _ in results] == [200, 200]
    await bot.slack.wait_for("chat.postEphemeral", lambda c: "already decided" in c.params["text"])
    await bot.slack.wait_for("chat.stopStream")
    await bot.slack.settle()
    assert await record_ids(bot) == [1, 2, 4, 5]
    assert len(model.chat.requests) == 2  # one decision, one continuation
    assert message.action_ids() == ["tool_undo"]  # the deletion ran: it may be undone, nothing else


async def test_click_on_an_already_decided_message(bot: RunningBot, model):
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    stale = type(message)(**{**message.__dict__, "blocks": list(message.blocks)})  # what a stale client still shows
    await bot.sender.click(message, "tool_approve", user="U1")
    await bot.slack.wait_for("chat.stopStream")
    await bot.slack.wait_for("chat.update", lambda c: "tool_undo" in str(c.params.get("blocks")))  # it ran
    updates_before = len(bot.slack.calls_of("chat.update"))

    await bot.sender.click(stale, "tool_decline", user="U3")
    ephemeral = await bot.slack.wait_for("chat.postEphemeral")
    assert ephemeral[0].params["user"] == "U3" and "already decided" in ephemeral[0].params["text"]
    await bot.slack.wait_for("chat.update", count=updates_before + 2)  # shown again, its Undo kept
    assert "Approved" in message.all_text and message.action_ids() == ["tool_undo"]
    assert await record_ids(bot) == [1, 2, 4, 5]


async def test_forged_button_value_changes_nothing(bot: RunningBot, model):
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    for forged in ("call_1", "", "x" * 500, '{"run_id": "r", "tool_call_id": "call_1"}'):
        await bot.sender.click(message, "tool_approve", value=forged)
    await bot.slack.wait_for("chat.postEphemeral", count=4)
    assert all("does not belong" in c.params["text"] for c in bot.slack.calls_of("chat.postEphemeral"))
    assert message.action_ids()[0] == "tool_approve"
    assert await record_ids(bot) == [1, 2, 3, 4, 5]


async def test_a_button_copied_onto_another_message_changes_nothing(bot: RunningBot, model):
    model.chat.push(
        tool_calls(call("delete-record", {"id": 3}, id="call_1")),
        tool_calls(call("delete-record", {"id": 4}, id="call_2")),
    )
    await bot.mention("delete record 3")
    first = await bot.approval_message()
    await bot.mention("delete record 4")
    second = await bot.approval_message(count=2)
    # the value of the first message's button, clicked on the second message
    await bot.sender.click(second, "tool_approve", value=first.button_value("tool_approve"), user="U2")
    [told] = await bot.slack.wait_for("chat.postEphemeral")
    await bot.slack.settle()
    assert told.params["user"] == "U2" and "does not belong" in told.params["text"]
    assert told.params["thread_ts"] == second.thread_ts  # said where the click was, to the clicker alone
    assert await record_ids(bot) == [1, 2, 3, 4, 5]
    assert first.action_ids()[0] == second.action_ids()[0] == "tool_approve"  # both still wait
    assert bot.slack.calls_of("chat.update") == []


async def test_a_button_copied_onto_another_message_of_the_same_thread_changes_nothing(bot: RunningBot, model):
    model.chat.push(
        tool_calls(call("delete-record", {"id": 3}, id="call_1")),
        tool_calls(call("delete-record", {"id": 4}, id="call_2")),
    )
    event = await bot.mention("delete record 3")
    first = await bot.approval_message()
    await bot.slack.settle()
    await bot.say("and record 4", thread_ts=event["ts"])
    second = await bot.approval_message(count=2)
    assert second.thread_ts == first.thread_ts
    # the first message's reference, clicked on the second message (whose buttons do not carry it)
    await bot.sender.click(second, "tool_approve", value=first.button_value("tool_approve"))
    await bot.slack.wait_for("chat.postEphemeral", lambda c: "does not belong" in c.params["text"])
    await bot.slack.settle()
    assert await record_ids(bot) == [1, 2, 3, 4, 5]
    assert first.action_ids() and second.action_ids()
