"""A click by someone the decision rule does not allow changes nothing and gets an ephemeral explanation."""

from __future__ import annotations

import pytest

from bot.slack import DecisionCheck, Verdict

from ...harness import ask_to_delete, record_ids, running_bot


async def only_u9(check: DecisionCheck) -> Verdict:
    if check.user_id == "U9":
        return Verdict(True)
    return Verdict(False, f"Only <@U9> may decide `{check.tool_name}`.")


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
async def test_a_click_the_rule_refuses_changes_nothing(database_url, slack, model, action_id):
    ask_to_delete(model)
    async with running_bot(database_url=database_url, slack=slack, decision_rule=only_u9) as bot:
        await bot.mention("delete record 3")
        message = await bot.approval_message()
        await bot.sender.click(message, action_id, user="U1")
        ephemeral = await slack.wait_for("chat.postEphemeral")
        assert ephemeral[0].params["user"] == "U1" and "Only <@U9>" in ephemeral[0].params["text"]
        await slack.settle()
        assert slack.calls_of("chat.update") == [] and slack.calls_of("views.open") == []
        assert message.action_ids()[0] == "tool_approve"
        assert await record_ids(bot) == [1, 2, 3, 4, 5]

        await bot.sender.click(message, "tool_approve", user="U9")
        await slack.wait_for("chat.stopStream")
        assert await record_ids(bot) == [1, 2, 4, 5]
