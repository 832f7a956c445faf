"""`python -m bot serve` killed (SIGKILL) right after it acknowledged a message, in real processes on one
database: the message was recorded before the ack, so the restarted bot answers it (issue 17: the
recovery told the thread "I was stopped while answering ... please send it again" and never answered)."""

from __future__ import annotations

from sqlalchemy import select

from bot.slack.tables import SlackEventRow
from bot.slack.turn_queue import INTERRUPTED_TEXT
from tests.support.processes import SECRET, bot_env, free_port, read, start_bot, stop_bot
from tests.support.scripted_model import reply
from tests.support.slack import SignedSender, hang
from tests.support.waiting import until


async def started_turns(database_url: str) -> list:
    return [t for t in await read(database_url, select(SlackEventRow.started_at)) if t is not None]


async def test_a_message_acknowledged_right_before_a_crash_is_answered_after_the_restart(
    database_url, slack, model, tmp_path
):
    model.chat.push(reply("Hello! 你好, こんにちは, שלום"))
    # the turn of the message starts, then its thinking status hangs: the bot dies before any run is made
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
