"""Decline, and Decline with reason (modal)."""

from __future__ import annotations

from tests.support.scripted_model import call, reply, tool_calls

from ...harness import RunningBot, record_ids


async def test_decline_never_runs_the_tool(bot: RunningBot, model):
    model.chat.push(tool_calls(call("delete-record", {"id": 3}, id="call_1")), reply("OK, I will not delete it."))
    await bot.mention("delete record 3")
    message = await bot.approval_message()

    await bot.sender.click(message, "tool_decline", user="U2")
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert "Declined" in message.all_text and "<@U2>" in message.all_text and message.action_ids() == []
    stops = await bot.slack.wait_for("chat.stopStream")
    assert bot.slack.message("C1", stops[-1].params["ts"]).text == "OK, I will not delete it."
    assert await record_ids(bot) == [1, 2, 3, 4, 5]
    tool_message = next(m for m in model.chat.requests[1]["messages"] if m.get("role") == "tool")
    assert "not approve" in tool_message["content"]


async def test_decline_with_reason_opens_a_modal_and_the_model_hears_why(bot: RunningBot, model):
    model.chat.push(tool_calls(call("delete-record", {"id": 3}, id="call_1")), reply("Understood."))
    await bot.mention("delete record 3")
    message = await bot.approval_message()

    await bot.sender.click(message, "tool_decline_with_reason", user="U2")
    opened = await bot.slack.wait_for("views.open")
    view = opened[0].params["view"]
    assert view["callback_id"] == "tool_decline_reason"
    assert message.action_ids()  # nothing decided by opening the modal

    await bot.sender.submit(
        view, {"reason": {"value": {"type": "plain_text_input", "value": "It is the audit copy"}}}, user="U2"
    )
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert "Declined" in message.all_text and "It is the audit copy" in message.all_text
    await bot.slack.wait_for("chat.stopStream")
    tool_message = next(m for m in model.chat.requests[1]["messages"] if m.get("role") == "tool")
    assert "It is the audit copy" in tool_message["content"]
    assert await record_ids(bot) == [1, 2, 3, 4, 5]
