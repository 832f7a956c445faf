"""`python -m bot serve` end to end, in real processes: the demo agent answers over HTTP, and a pending
approval is decided by a second process after the first one was stopped."""

from __future__ import annotations

from tests.support.processes import SECRET, bot_env, free_port, start_bot, stop_bot
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import SignedSender


async def test_serve_answers_and_a_new_process_decides_the_pending_approval(database_url, slack, model, tmp_path):
    env = bot_env(database_url, slack)
    model.chat.push(tool_calls(call("delete-record", {"id": 2}, id="call_1")), reply("Record 2 is deleted."))
    port = free_port()
    first = await start_bot(port, env, tmp_path / "bot.log")
    sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET, slack=slack)
    try:
        event = sender.mention("delete record 2")
        assert (await sender.event(event))[0] == 200
        posted = await slack.wait_for(
            "chat.postMessage", lambda c: "tool_approve" in str(c.params.get("blocks")), timeout=30
        )
        # the thinking status is cleared once the turn is over (the message's ts recorded)
        await slack.wait_for("assistant.threads.setStatus", lambda c: c.params.get("status") == "", timeout=30)
    finally:
        await stop_bot(first)
    message = slack.posted_by(posted[0])

    second = await start_bot(port, env, tmp_path / "bot.log")
    try:
        assert (await sender.click(message, "tool_approve", user="U2"))[0] == 200
        stops = await slack.wait_for("chat.stopStream", timeout=30)
        assert slack.message("C1", stops[-1].params["ts"]).text == "Record 2 is deleted."
        assert "Approved" in message.all_text and message.action_ids() == []
        listing = [c for c in slack.calls if c.method == "chat.update"]
        assert listing
        assert event["ts"] == slack.message("C1", stops[-1].params["ts"]).thread_ts
    finally:
        await stop_bot(second)
