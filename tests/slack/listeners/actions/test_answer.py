"""A tool's question (suspend): posted in the thread, answered in the thread (auto-resume) or through the form."""

from __future__ import annotations

import json

from tests.support.scripted_model import call, reply, structured, tool_calls

from ...harness import RunningBot


def ask_for_weather(model) -> None:
    model.chat.push(tool_calls(call("get-weather", {}, id="call_1")))


async def test_question_is_posted_in_the_thread_with_an_answer_button(bot: RunningBot, model):
    ask_for_weather(model)
    event = await bot.mention("what's the weather?")
    question = await bot.question_message()
    assert question.thread_ts == event["ts"]
    assert "Which city?" in question.all_text and "get-weather" in question.all_text
    assert question.action_ids() == ["tool_answer", "tool_question_cancel"]


async def test_question_answered_in_the_thread_resumes_the_tool(bot: RunningBot, model):
    ask_for_weather(model)
    event = await bot.mention("what's the weather?")
    question = await bot.question_message()

    model.structured.push(structured({"city": "Paris"}))
    model.chat.push(reply("Paris: see above."))
    await bot.say("Paris", thread_ts=event["ts"])
    stops = await bot.slack.wait_for("chat.stopStream")
    assert bot.slack.message("C1", stops[-1].params["ts"]).text == "Paris: see above."
    tool_result = [m for m in model.chat.requests[-1]["messages"] if m.get("role") == "tool"][-1]
    assert json.loads(tool_result["content"])["city"] == "Paris"
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == question.ts)
    assert question.action_ids() == [] and "Answered in the thread: city = Paris" in question.all_text


async def test_question_answered_through_the_form(bot: RunningBot, model):
    ask_for_weather(model)
    await bot.mention("what's the weather?")
    question = await bot.question_message()

    await bot.sender.click(question, "tool_answer", user="U1")
    opened = await bot.slack.wait_for("views.open")
    view = opened[0].params["view"]
    assert view["callback_id"] == "tool_answer" and "Which city?" in opened[0].text
    inputs = [block for block in view["blocks"] if block["type"] == "input"]
    assert [block["block_id"] for block in inputs] == ["field:city"]

    # empty answer: the form shows the error, nothing resumes
    status, body = await bot.sender.submit(view, {"field:city": {"value": {"type": "plain_text_input", "value": None}}})
    assert json.loads(body)["response_action"] == "errors" and "field:city" in json.loads(body)["errors"]

    model.chat.push(reply("Sunny in Oslo."))
    status, body = await bot.sender.submit(
        view, {"field:city": {"value": {"type": "plain_text_input", "value": "Oslo"}}}
    )
    assert status == 200 and body == ""
    stops = await bot.slack.wait_for("chat.stopStream")
    assert bot.slack.message("C1", stops[-1].params["ts"]).text == "Sunny in Oslo."
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == question.ts)
    assert "Answered by <@U1>" in question.all_text and "Oslo" in question.all_text
    assert question.action_ids() == []

    # the button of the answered question: told so, nothing resumes again
    await bot.sender.click(question, "tool_answer", user="U1", value=view["private_metadata"])
    ephemeral = await bot.slack.wait_for("chat.postEphemeral")
    assert "already answered" in ephemeral[0].params["text"]


async def test_unrelated_thread_message_leaves_the_question_waiting(bot: RunningBot, model):
    ask_for_weather(model)
    event = await bot.mention("what's the weather?")
    question = await bot.question_message()
    model.structured.push(structured({"city": None}))  # not an answer
    model.chat.push(reply("Sure, tell me the city when you know it."))
    await bot.say("hmm, let me think", thread_ts=event["ts"])
    await bot.slack.wait_for("chat.stopStream")
    await bot.slack.settle()
    assert question.action_ids() == ["tool_answer", "tool_question_cancel"]
