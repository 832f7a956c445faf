"""Every event and click acknowledged, and none lost after its ack, while the database restarts (issue 41):
`python -m bot serve` on a PostgreSQL cluster of the test's own, which the test stops and starts.

- An event is answered 200 only once it is recorded. While the database is down its record cannot land, so
  it is answered 503 within Slack's 3 seconds (Slack then sends it again), and a retry once the database
  is back gets its 200 within 3 seconds; the message is answered once. Before, the first try waited for
  the database for 10 s, past Slack's deadline, and ended in a 500.
- A click cannot be recorded while the database is down; Slack never sends a click again, so the clicker
  is told at once that nothing was done, and the buttons stay live: a click once the database is back
  decides the call, and the tool runs once."""

from __future__ import annotations

import asyncio

from bot.slack.clicks import LOST_TEXT
from bot.slack.translator import translator
from bot.slack_emulator.app_requests import event_body
from tests.support.processes import SECRET, bot_env, free_port, lines, start_bot, start_serve, stop_bot
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import SignedSender
from tests.support.waiting import until

SLACK_WAITS = 3.0
"""Seconds Slack waits for an ack before it counts the delivery as failed."""


async def test_an_event_sent_while_the_database_is_down_is_acknowledged_on_a_retry(
    postgres_cluster, slack, model, tmp_path
):
    model.chat.push(reply("Bonjour ! 你好。"))
    env, port = bot_env(postgres_cluster.url, slack, BOT_RECOVERY_INTERVAL="0.5"), free_port()
    sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET, slack=slack)
    bot = await start_bot(port, env, tmp_path / "bot.log")
    try:
        await asyncio.to_thread(postgres_cluster.stop, "fast")
        event = sender.mention("bonjour, 你好")
        body = event_body(event, event_id="EvRESTART0001")
        status, _ = await asyncio.wait_for(sender.post(body, content_type="application/json"), SLACK_WAITS)
        assert status == 503  # not recorded: not a 200, so Slack sends it again

        await asyncio.to_thread(postgres_cluster.start)
        statuses = []
        for retry in range(1, 4):  # Slack's retries of the same delivery
            headers = {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_error"}
            retried = sender.post(body, content_type="application/json", headers=headers)
            statuses.append((await asyncio.wait_for(retried, SLACK_WAITS))[0])
            if statuses[-1] == 200:
                break
            await asyncio.sleep(1)
        assert statuses[-1] == 200, statuses

        await until(lambda: "Bonjour ! 你好。" in [m.text for m in slack.thread("C1", event["ts"])], 30)
        await slack.settle()
        assert [m.text for m in slack.thread("C1", event["ts"])].count("Bonjour ! 你好。") == 1
        assert len(model.chat.requests) == 1
    finally:
        await stop_bot(bot)


async def test_a_click_while_the_database_is_down_is_told_lost_and_its_buttons_still_work(
    postgres_cluster, slack, model, tmp_path
):
    effects = tmp_path / "effects.log"
    model.chat.push(tool_calls(call("delete-record", {"id": "3"}, id="call_1")), reply("Record 3 is deleted."))
    env, port = bot_env(postgres_cluster.url, slack, EFFECTS=str(effects), BOT_RECOVERY_INTERVAL="0.5"), free_port()
    sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET, slack=slack)
    bot = await start_serve(port, env, tmp_path / "bot.log")
    try:
        event = sender.mention("delete record 3, s'il te plaît")
        assert (await sender.event(event))[0] == 200
        [posted] = await slack.wait_for("chat.postMessage", lambda c: "tool_approve" in str(c.params), timeout=30)
        approval = slack.posted_by(posted)

        await asyncio.to_thread(postgres_cluster.stop, "fast")
        status, _ = await asyncio.wait_for(sender.click(approval, "tool_approve", user="U2"), SLACK_WAITS)
        assert status == 200  # never Bolt's "didn't call ack()" 404
        [note] = await slack.wait_for("chat.postEphemeral", lambda c: c.params.get("user") == "U2", timeout=30)
        assert note.params["text"] == translator("en").gettext(LOST_TEXT)
        assert note.params.get("thread_ts") == event["ts"]
        assert "tool_approve" in approval.action_ids()  # still live

        await asyncio.to_thread(postgres_cluster.start)
        await asyncio.sleep(11)  # past the bot's wait for the database: the lost click's record gives up or lands
        assert (await asyncio.wait_for(sender.click(approval, "tool_approve", user="U2"), SLACK_WAITS))[0] == 200
        await until(lambda: "Record 3 is deleted." in [m.text for m in slack.thread("C1", event["ts"])], 30)
        await slack.settle()
        assert len(lines(effects, "started delete-record 3")) == 1
        assert "Approved" in approval.all_text and approval.action_ids() == []
    finally:
        await stop_bot(bot)
