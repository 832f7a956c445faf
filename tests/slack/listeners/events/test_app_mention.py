"""A mention starts a conversation in the message's thread; the answer is streamed there."""

from __future__ import annotations

from tests.support.scripted_model import reply

from ...harness import RunningBot


async def test_mention_is_answered_in_its_thread(bot: RunningBot, model):
    model.chat.push(reply("Hello **there**! I can help."))
    event = await bot.mention("hi")

    stops = await bot.slack.wait_for("chat.stopStream")
    start = bot.slack.calls_of("chat.startStream")[0]
    assert start.params["thread_ts"] == event["ts"]
    assert start.params["recipient_user_id"] == "U1"
    message = bot.slack.message("C1", stops[0].params["ts"])
    assert message.text == "Hello **there**! I can help."
    assert message.thread_ts == event["ts"]
    # the model got the message without the mention
    assert model.chat.requests[0]["messages"][-1]["content"] == "hi"


async def test_thinking_status_is_shown_then_cleared(bot: RunningBot, model):
    model.chat.push(reply("Done."))
    event = await bot.mention("hi")
    await bot.slack.wait_for("assistant.threads.setStatus", lambda c: c.params.get("status") == "", timeout=10)
    statuses = [c.params["status"] for c in bot.slack.calls_of("assistant.threads.setStatus")]
    assert statuses[0] == "is thinking…" and statuses[-1] == ""
    assert all(c.params["thread_ts"] == event["ts"] for c in bot.slack.calls_of("assistant.threads.setStatus"))
