"""A submitted form is acked within Slack's 3 seconds whatever Slack itself is slow with: before the ack
only the database is read (the call, its schema, the form's errors); asking Slack who may decide, and
the decision, come after it. Slack is held here for exactly as long as the test needs."""

from __future__ import annotations

import asyncio

from memory import PolicyChange
from tests.support.scripted_model import call, reply, tool_calls

from ...harness import RunningBot, ask_to_delete, record_ids


async def test_the_edit_form_is_acked_before_slack_says_who_may_decide(bot: RunningBot, model):
    ask_to_delete(model, 3)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    await bot.sender.click(message, "tool_edit_args", user="U2")
    view = (await bot.slack.wait_for("views.open"))[-1].params["view"]
    # the policy now names a user group: the submission asks Slack for its members, and Slack is slow
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["S1"]))
    slow = bot.slack.hold("usergroups.users.list")

    submitted = asyncio.create_task(
        bot.sender.submit(view, {"field:id": {"value": {"type": "number_input", "value": "5"}}}, user="U2")
    )
    status, body = await asyncio.wait_for(submitted, 30)  # answered while Slack still holds the lookup
    assert (status, body) == (200, "")  # the modal closes
    assert not slow.released.is_set() and "Approved" not in message.all_text

    slow.release()
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert "Approved with edited arguments" in message.all_text and "<@U2>" in message.all_text
    await bot.slack.wait_for("chat.stopStream")
    assert await record_ids(bot) == [1, 2, 3, 4]


async def test_the_answer_form_is_acked_before_the_question_resumes(bot: RunningBot, model):
    model.chat.push(tool_calls(call("get-weather", {}, id="call_1")))
    await bot.mention("what's the weather?")
    question = await bot.question_message()
    await bot.sender.click(question, "tool_answer", user="U1")
    view = (await bot.slack.wait_for("views.open"))[-1].params["view"]
    # an answer that does not fit still gets its error in the form, and nothing resumes
    status, body = await bot.sender.submit(view, {"field:city": {"value": {"type": "plain_text_input", "value": None}}})
    assert status == 200 and '"response_action": "errors"' in body and "field:city" in body
    model.chat.push(reply("Sonnig in Zürich, 東京も晴れ."))
    slow = bot.slack.hold("chat.update")  # the question's message, updated once answered

    submitted = bot.sender.submit(view, {"field:city": {"value": {"type": "plain_text_input", "value": "Zürich"}}})
    status, body = await asyncio.wait_for(submitted, 30)
    assert (status, body) == (200, "")

    slow.release()
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == question.ts)
    assert "Answered by <@U1>" in question.all_text and "Zürich" in question.all_text
    stops = await bot.slack.wait_for("chat.stopStream")
    assert bot.slack.message("C1", stops[-1].params["ts"]).text == "Sonnig in Zürich, 東京も晴れ."
