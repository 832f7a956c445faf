"""`python -m bot serve` killed (SIGKILL) right after it acknowledged a message, in real processes on one
database: the message was recorded before the ack, so the restarted bot answers it (issue 17: the
recovery told the thread "I was stopped while answering ... please send it again" and never answered).

The thinking status is asked for beside the run's start (`conversation.run_turn`), so a hanging status
does not say whether the run was stored before the kill: the first test passes either way (the run,
stored, is continued; not stored, the message is answered again). The second dies where no run can have
been made yet: while the message is read against a question that waits in the thread (auto-resume)."""

from __future__ import annotations

import asyncio
import threading

from sqlalchemy import select

from bot.slack.tables import SlackEventRow
from bot.slack.turn_queue import INTERRUPTED_TEXT
from tests.support.processes import SECRET, bot_env, free_port, read, start_bot, stop_bot
from tests.support.scripted_model import call, reply, structured, tool_calls
from tests.support.slack import SignedSender, hang
from tests.support.waiting import until


async def started_turns(database_url: str) -> list:
    return [t for t in await read(database_url, select(SlackEventRow.started_at)) if t is not None]


async def test_a_message_acknowledged_right_before_a_crash_is_answered_after_the_restart(
    database_url, slack, model, tmp_path
):
    model.chat.push(reply("Hello! 你好, こんにちは, שלום"))
    # the turn of the message starts, then its thinking status hangs: the bot dies before the model is asked
    hang(slack, "assistant.threads.setStatus")
    env, port = bot_env(database_url, slack, BOT_RECOVERY_INTERVAL="0.5", BOT_STALE_AFTER="2"), free_port()
    sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET, slack=slack)
    first = await start_bot(port, env, tmp_path / "a.log")
    try:
        event = sender.mention("say hello, s'il vous plaît")
        assert (await sender.event(event))[0] == 200
        await until(lambda: started_turns(database_url), 30, what="the turn's start")
    finally:
        first.kill()
        await first.wait()
    assert model.chat.requests == []  # nothing reached the model

    second = await start_bot(port, env, tmp_path / "b.log")
    try:
        stops = await slack.wait_for("chat.stopStream", timeout=30)
        answer = slack.message("C1", stops[0].params["ts"])
        assert answer.thread_ts == event["ts"] and answer.text == "Hello! 你好, こんにちは, שלום"
        await slack.settle()
        assert [m.text for m in slack.thread("C1", event["ts"]) if m.text == INTERRUPTED_TEXT] == []
        assert len(model.chat.requests) == 1  # answered once
        assert "say hello, s'il vous plaît" in str(model.chat.requests[0]["messages"][-1])
    finally:
        await stop_bot(second)


async def test_a_message_whose_turn_died_before_its_run_was_made_is_answered_after_the_restart(
    database_url, slack, model, tmp_path
):
    model.chat.push(tool_calls(call("get-weather", {}, id="call_city")))  # the tool asks: which city?
    env, port = bot_env(database_url, slack, BOT_RECOVERY_INTERVAL="0.5", BOT_STALE_AFTER="2"), free_port()
    sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET, slack=slack)
    first = await start_bot(port, env, tmp_path / "a.log")
    held = threading.Event()

    def reading(body):  # the reply read against the question: held until the bot is dead
        held.wait(30)
        return structured({"city": "Paris"})

    try:
        asked = sender.mention("quel temps fait-il ?")
        assert (await sender.event(asked))[0] == 200
        await slack.wait_for("chat.postMessage", lambda c: c.params.get("thread_ts") == asked["ts"], timeout=30)
        model.structured.push(reading)
        answer = sender.message("Paris, s'il vous plaît", thread_ts=asked["ts"])
        assert (await sender.event(answer))[0] == 200
        await asyncio.to_thread(model.structured.wait_for_requests, 1, 30)
    finally:
        first.kill()
        await first.wait()
        held.set()
    assert len(model.chat.requests) == 1  # only the question's step: the answer made no run

    model.structured.push(structured({"city": "Paris"}))
    model.chat.push(reply("Il fait beau à Paris. 晴れ。"))
    second = await start_bot(port, env, tmp_path / "b.log")
    try:
        await until(lambda: "Il fait beau à Paris. 晴れ。" in [m.text for m in slack.thread("C1", asked["ts"])], 30)
        await slack.settle()
        texts = [m.text for m in slack.thread("C1", asked["ts"])]
        assert INTERRUPTED_TEXT not in texts
        assert texts.count("Il fait beau à Paris. 晴れ。") == 1
        assert len(model.structured.requests) == 2  # read again after the restart, once
    finally:
        await stop_bot(second)
