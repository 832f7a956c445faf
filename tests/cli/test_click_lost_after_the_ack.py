"""A click acknowledged and then lost with its replica is carried out after all (issue 41): `python -m bot
serve` killed (SIGKILL) right after an Approve click's 200, while the click's work waits for Slack, in
real processes on one database. The click was recorded before its ack (`slack_clicks`), so the restarted
bot's sweep carries it out: the tool runs once, the thread is answered, the approval shows the decision.
Before, the call kept waiting after the restart and nobody was told."""

from __future__ import annotations

from tests.support.processes import SECRET, bot_env, free_port, lines, start_serve, stop_bot
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import SignedSender, hang, hanging
from tests.support.waiting import until

QUICK_RECOVERY = {"BOT_RECOVERY_INTERVAL": "0.5", "BOT_STALE_AFTER": "2"}


async def test_an_approve_click_acknowledged_right_before_a_kill_is_carried_out_after_the_restart(
    database_url, slack, model, tmp_path
):
    effects = tmp_path / "effects.log"
    model.chat.push(
        tool_calls(call("delete-record", {"id": "2"}, id="call_1")), reply("Record 2 is deleted. 削除しました。")
    )
    env, port = bot_env(database_url, slack, EFFECTS=str(effects), **QUICK_RECOVERY), free_port()
    sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET, slack=slack)
    first = await start_serve(port, env, tmp_path / "a.log")
    try:
        event = sender.mention("supprime le record 2, bitte")
        assert (await sender.event(event))[0] == 200
        [posted] = await slack.wait_for("chat.postMessage", lambda c: "tool_approve" in str(c.params), timeout=30)
        approval = slack.posted_by(posted)
        held = hang(slack, "conversations.info", seconds=20)  # who is in the conversation: asked by the rule
        assert (await sender.click(approval, "tool_approve", user="U2"))[0] == 200
        await hanging(held)  # acknowledged; the decision waits for Slack's answer
    finally:
        first.kill()
        await first.wait()
    assert lines(effects, "started") == []
    assert "tool_approve" in approval.action_ids()  # nothing decided yet

    second = await start_serve(port, env, tmp_path / "b.log")
    try:
        await until(lambda: lines(effects, "finished delete-record 2"), 30, what="the approved tool")
        await until(
            lambda: "Record 2 is deleted. 削除しました。" in [m.text for m in slack.thread("C1", event["ts"])], 30
        )
        await slack.settle()
        assert len(lines(effects, "started delete-record 2")) == 1
        assert "Approved" in approval.all_text and approval.action_ids() == []
    finally:
        await stop_bot(second)
