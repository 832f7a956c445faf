"""`python -m bot serve` acknowledges Slack's deliveries while a turn holds the bot's event loop (issue 42):
the ack path (read, verify, record, 200) runs in a thread of its own (`bot/slack/intake_thread.py`), so it
never waits for what a turn does between its awaits. Here a tool blocks the bot's loop outright until the
test lets it go; a mention sent meanwhile must still get its 200 within Slack's 3 seconds, and the two
mentions are answered once each when the loop is free again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp

from tests.support.processes import SECRET, bot_env, free_port, start_serve, stop_bot
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import SignedSender
from tests.support.waiting import until

SLACK_WAITS = 3.0
"""Seconds Slack waits for an ack before it counts the delivery as failed and sends it again."""


async def test_a_mention_is_acknowledged_while_a_turn_holds_the_bots_loop(database_url, slack, model, tmp_path):
    gate = tmp_path / "let-go"
    model.chat.push(tool_calls(call("list-records", {"id": "7"}, id="call_1")), reply("Done."), reply("Done."))
    env, port = (
        bot_env(database_url, slack, HOLD_LOOP_IN_TOOL=str(gate), EFFECTS=str(tmp_path / "effects")),
        free_port(),
    )
    url = f"http://127.0.0.1:{port}"
    sender = SignedSender(f"{url}/slack/events", SECRET, slack=slack)
    bot = await start_serve(port, env, tmp_path / "bot.log")
    try:
        first = sender.mention("list record 7, s'il vous plaît")
        assert (await sender.event(first))[0] == 200
        await until(lambda: Path(f"{gate}.reached").exists(), 30, what="the tool holding the bot's loop")

        second = sender.mention("你好, are you there?", channel="C2")
        status, _ = await asyncio.wait_for(sender.event(second), SLACK_WAITS)
        assert status == 200

        gate.touch()
        async with aiohttp.ClientSession() as session:  # the bot's other routes, through the same port
            async with session.get(f"{url}/health") as health:
                assert health.status == 200 and await health.json() == {"ok": True}
        await slack.wait_for("chat.stopStream", count=2, timeout=30)
        await slack.settle()
        for event in (first, second):
            answers = [m.text for m in slack.thread(event["channel"], event["ts"]) if m.user != event["user"]]
            assert answers == ["Done."], answers
    finally:
        await stop_bot(bot)
