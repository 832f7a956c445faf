"""Thread replies continue a conversation without a mention; DMs are conversations; other messages are ignored."""

from __future__ import annotations

from bot.slack_emulator import BOT_ID, BOT_USER_ID
from tests.support.scripted_model import reply

from ...harness import RunningBot


async def test_follow_up_in_the_thread_needs_no_mention(bot: RunningBot, model):
    model.chat.push(reply("First answer."), reply("Second answer."))
    first = await bot.mention("remember the number 7")
    await bot.slack.wait_for("chat.stopStream")

    await bot.say("what number?", thread_ts=first["ts"])
    stops = await bot.slack.wait_for("chat.stopStream", count=2)
    second = bot.slack.message("C1", stops[1].params["ts"])
    assert second.text == "Second answer." and second.thread_ts == first["ts"]
    # same memory thread: the model sees the earlier turn
    contents = [m.get("content") for m in model.chat.requests[1]["messages"]]
    assert "remember the number 7" in contents and "First answer." in contents


async def test_another_user_in_the_thread_continues_the_same_conversation(bot: RunningBot, model):
    model.chat.push(reply("Hi U1."), reply("Hi U2."))
    first = await bot.mention("hello", user="U1")
    await bot.slack.wait_for("chat.stopStream")
    await bot.say("and me?", user="U2", thread_ts=first["ts"])
    await bot.slack.wait_for("chat.stopStream", count=2)
    assert "U2" in model.chat.requests[1]["messages"][-1]["content"]


async def test_thread_reply_without_a_conversation_is_ignored(bot: RunningBot, model):
    await bot.say("just chatting", thread_ts="1700000000.000001")
    await bot.say("top-level channel message")
    await bot.slack.settle()
    assert model.chat.requests == []
    assert bot.slack.calls_of("chat.startStream") == [] and bot.slack.calls_of("chat.postMessage") == []


async def test_a_direct_message_is_a_conversation(bot: RunningBot, model):
    model.chat.push(reply("Hi in DM."), reply("Still here."))
    dm = await bot.say("hello", channel="D1", channel_type="im")
    stops = await bot.slack.wait_for("chat.stopStream")
    assert bot.slack.message("D1", stops[0].params["ts"]).thread_ts == dm["ts"]
    await bot.say("again", channel="D1", channel_type="im", thread_ts=dm["ts"])
    await bot.slack.wait_for("chat.stopStream", count=2)
    assert len(model.chat.requests) == 2


async def test_bot_messages_edits_and_subtypes_are_ignored(bot: RunningBot, model):
    model.chat.push(reply("ok"))
    first = await bot.mention("hi")
    await bot.slack.wait_for("chat.stopStream")
    await bot.say("from a bot", thread_ts=first["ts"], bot_id="B2")
    await bot.say("edited", thread_ts=first["ts"], subtype="message_changed")
    await bot.say("joined", thread_ts=first["ts"], subtype="channel_join")
    await bot.say("myself", thread_ts=first["ts"], user=BOT_USER_ID, bot_id=BOT_ID)
    await bot.slack.settle()
    assert len(model.chat.requests) == 1


async def test_a_mention_inside_a_thread_is_answered_once(bot: RunningBot, model):
    """Slack sends both app_mention and message for a mention in a thread; only one answer."""
    model.chat.push(reply("one"), reply("two"))
    first = await bot.mention("hi")
    await bot.slack.wait_for("chat.stopStream")
    mention = bot.sender.mention("again", thread_ts=first["ts"])
    await bot.sender.event(mention)
    await bot.sender.event(bot.sender.message(mention["text"], ts=mention["ts"], thread_ts=first["ts"]))
    await bot.slack.wait_for("chat.stopStream", count=2)
    await bot.slack.settle()
    assert len(model.chat.requests) == 2
