"""Slack's 429 (Retry-After) and 5xx answers are retried by the web client's retry handlers."""

from __future__ import annotations

from tests.support.scripted_model import call, reply, tool_calls

from .harness import RunningBot


async def test_rate_limited_post_is_retried(bot: RunningBot, model):
    bot.slack.fail("chat.postMessage", status=429, times=2, retry_after=0)
    model.chat.push(tool_calls(call("delete-record", {"id": 3}, id="call_1")))
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    assert message.action_ids()[0] == "tool_approve"
    assert bot.slack.failed == [("chat.postMessage", 429), ("chat.postMessage", 429)]
    assert len(bot.slack.calls_of("chat.postMessage")) == 1


async def test_server_errors_are_retried(bot: RunningBot, model):
    bot.slack.fail("chat.startStream", status=500, times=1)
    bot.slack.fail("chat.update", status=503, times=1)
    model.chat.push(tool_calls(call("delete-record", {"id": 3}, id="call_1")), reply("Deleted."))
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    await bot.sender.click(message, "tool_approve")
    stops = await bot.slack.wait_for("chat.stopStream")
    assert bot.slack.message("C1", stops[0].params["ts"]).text == "Deleted."
    assert "Approved" in message.all_text
    assert ("chat.startStream", 500) in bot.slack.failed and ("chat.update", 503) in bot.slack.failed
