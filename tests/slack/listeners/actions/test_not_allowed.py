"""A click by someone the runtime's rule does not allow changes nothing and gets an ephemeral explanation."""

from __future__ import annotations

import pytest

from memory import PolicyChange

from ...harness import ask_to_delete, record_ids


async def test_by_default_anyone_in_the_conversation_decides(bot, model):
    ask_to_delete(model)
    await bot.mention("delete record 3", user="U1")
    message = await bot.approval_message()

    await bot.sender.click(message, "tool_approve", user="U7")  # not the requester, just someone in the channel

    await bot.slack.wait_for("chat.stopStream")
    assert "Approved by <@U7>" in message.all_text and message.action_ids() == []
    assert bot.slack.calls_of("chat.postEphemeral") == []
    assert await record_ids(bot) == [1, 2, 4, 5]


@pytest.mark.parametrize("action_id", ["tool_approve", "tool_decline", "tool_decline_with_reason", "tool_edit_args"])
async def test_a_click_the_rule_refuses_changes_nothing(bot, slack, model, action_id):
    ask_to_delete(model)
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U9"]))
    await bot.mention("delete record 3", user="U1")
    message = await bot.approval_message()
    await bot.sender.click(message, action_id, user="U7")
    ephemeral = await slack.wait_for("chat.postEphemeral")
    assert ephemeral[0].params["user"] == "U7" and "Only <@U9>" in ephemeral[0].params["text"]
    await slack.settle()
    assert slack.calls_of("chat.update") == [] and slack.calls_of("views.open") == []
    assert message.action_ids()[0] == "tool_approve"
    assert await record_ids(bot) == [1, 2, 3, 4, 5]

    await bot.sender.click(message, "tool_approve", user="U9")
    await slack.wait_for("chat.stopStream")
    assert await record_ids(bot) == [1, 2, 4, 5]
