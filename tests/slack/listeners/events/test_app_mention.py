"""A mention starts a conversation in the message's thread; the answer is streamed there."""

from __future__ import annotations

import asyncio

from sqlalchemy import event as sql_event

from tests.support.scripted_model import call, reply, tool_calls
from tests.support.statements import statements_of
from tests.support.waiting import until

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


async def test_thinking_status_is_shown_until_the_answer_takes_it_away(bot: RunningBot, model):
    model.chat.push(reply("Done."))
    event = await bot.mention("hi")
    await bot.slack.wait_for("chat.stopStream", timeout=10)
    await bot.slack.settle()
    calls = bot.slack.calls_of("assistant.threads.setStatus")
    # Slack clears the status when the app replies: the answer did, so the bot does not call again
    assert [(c.params["status"], c.params["thread_ts"]) for c in calls] == [("is thinking…", event["ts"])]
    assert bot.slack.workspace.statuses == {}


async def test_a_slow_thinking_status_does_not_hold_the_model_up(bot: RunningBot, model):
    """Slack is slow to answer `setStatus`: the run is stored and the model asked meanwhile, and the answer
    is still written after the status was set, so that the answer takes it away."""
    model.chat.push(reply("Guten Tag! 你好！"))
    slow = bot.slack.hold("assistant.threads.setStatus")
    event = await bot.mention("Hallo, wie geht's?")
    await asyncio.wait_for(slow.arrived.wait(), 10)

    await asyncio.to_thread(model.chat.wait_for_requests, 1, 10)
    assert bot.slack.calls_of("chat.startStream") == []  # the answer waits for the status
    slow.release()
    stops = await bot.slack.wait_for("chat.stopStream", timeout=10)
    assert bot.slack.message("C1", stops[0].params["ts"]).text == "Guten Tag! 你好！"
    await bot.slack.settle()
    assert bot.slack.workspace.statuses == {}
    assert len(bot.slack.calls_of("assistant.threads.setStatus")) == 1
    assert bot.slack.message("C1", stops[0].params["ts"]).thread_ts == event["ts"]


async def test_a_thinking_status_slack_never_answers_does_not_cost_the_answer(bot: RunningBot, model):
    """The status's connection drops at every attempt (the client's three retries too): no status is
    shown, and the turn is answered anyway."""
    model.chat.push(reply("Bonjour ! Ça va très bien."))
    bot.slack.drop_connection("assistant.threads.setStatus", times=4, after=False)
    event = await bot.mention("Salut, ça va ?")

    stops = await bot.slack.wait_for("chat.stopStream", timeout=10)
    answer = bot.slack.message("C1", stops[0].params["ts"])
    assert (answer.text, answer.thread_ts) == ("Bonjour ! Ça va très bien.", event["ts"])
    assert [method for method, _ in bot.slack.failed] == ["assistant.threads.setStatus"] * 4
    assert bot.slack.calls_of("assistant.threads.setStatus") == []  # it never got through


async def test_a_status_shown_after_the_answer_began_is_cleared_by_the_bot(bot: RunningBot, model):
    model.chat.push(tool_calls(call("list-records", {}, id="call_1"), text="Let me look."), reply("There are 3."))
    event = await bot.mention("list records")
    await bot.slack.wait_for("chat.stopStream", timeout=10)
    await bot.slack.settle()
    calls = bot.slack.calls_of("assistant.threads.setStatus")
    assert [c.params["status"] for c in calls] == ["is thinking…", "is running list-records…", ""]
    assert all(c.params["thread_ts"] == event["ts"] for c in calls)
    assert bot.slack.workspace.statuses == {}


async def test_a_new_conversation_answered_at_once_is_not_searched_for_waiting_call_messages(bot: RunningBot, model):
    # such a thread holds no message of the bot's but the answer; a later turn in it looks again
    statements: list[str] = []

    def seen(_conn, _cursor, statement, *_args):
        statements.append(statement)

    sql_event.listen(bot.storage.engine.sync_engine, "before_cursor_execute", seen)
    model.chat.push(reply("你好！有什么可以帮你？"), reply("Bien sûr, voilà."))

    def turns_done(count: int):
        return lambda: sum(s.startswith("DELETE FROM slack_thread_turns") for s in statements) == count

    def searched() -> int:
        return sum(s.startswith("SELECT") and "FROM slack_tool_call_messages" in s for s in statements)

    try:
        first = await bot.mention("你好")
        await until(turns_done(1), what="the first turn to end")
        assert searched() == 0
        await bot.mention("encore une fois, s'il te plaît", thread_ts=first["ts"])
        await until(turns_done(2), what="the second turn to end")
        assert searched() == 1
    finally:
        sql_event.remove(bot.storage.engine.sync_engine, "before_cursor_execute", seen)
    answers = [c.params["ts"] for c in bot.slack.calls_of("chat.stopStream")]
    assert [bot.slack.message("C1", ts).text for ts in answers] == ["你好！有什么可以帮你？", "Bien sûr, voilà."]


async def test_a_mentions_turn_reads_its_conversation_with_its_start_alone(bot: RunningBot, model):
    # the conversation's record, with its starter's language, is written and read back with its turn's start
    model.chat.push(reply("Hello."), reply("Olá."))

    def turns_done(count: int):
        return lambda: sum(s.startswith("DELETE FROM slack_thread_turns") for s in statements) == count

    with statements_of(bot.storage) as statements:
        first = await bot.mention("hi")
        await until(turns_done(1), what="the turn")
        await bot.say("e agora?", thread_ts=first["ts"])  # a reply in the conversation, no mention
        await until(turns_done(2), what="the reply's turn")
    own = ("INSERT INTO slack_conversations", "UPDATE slack_conversations", "SELECT slack_conversations")
    conversations = [s.split(" ")[0] for s in statements if s.startswith(own)]
    assert conversations == ["INSERT"]  # the reply's turn read it with its start
    answers = [bot.slack.message("C1", c.params["ts"]).text for c in bot.slack.calls_of("chat.stopStream")]
    assert answers == ["Hello.", "Olá."]
