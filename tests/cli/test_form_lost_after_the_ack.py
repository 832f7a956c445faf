"""A submitted form is recorded before its ack, as a click is (issue 41), in real processes:

- one of two `python -m bot serve` replicas killed (SIGKILL) right after an edit form's 200, while the
  decision it starts waits for Slack: the form was recorded (`slack_clicks`), so the other replica's sweep
  carries it out, and the edited arguments run once. Before, the call kept waiting and nobody was told:
  the modal had closed.
- a form submitted while the database is down cannot be recorded: the modal stays open, saying so under
  its first field, nothing is decided, and a Submit once the database is back works."""

from __future__ import annotations

import asyncio
import json

from bot.slack.clicks import FORM_LOST_TEXT
from bot.slack.translator import translator
from tests.support.processes import SECRET, bot_env, free_port, lines, start_serve, stop_bot
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import SignedSender, hang, hanging
from tests.support.waiting import until

QUICK_RECOVERY = {"BOT_RECOVERY_INTERVAL": "0.5", "BOT_STALE_AFTER": "2"}
SLACK_WAITS = 3.0
"""Seconds Slack waits for an answer to a submission."""
EDITED = {"field:id": {"value": {"type": "plain_text_input", "value": "5"}}}
"""The edit form's values: record 5 instead of the 2 the model asked for."""


async def _edit_form(slack, sender, approval) -> dict:
    assert (await sender.click(approval, "tool_edit_args", user="U2"))[0] == 200
    [opened] = await slack.wait_for("views.open", timeout=30)
    return opened.params["view"]


async def test_an_edit_form_acknowledged_right_before_a_kill_is_carried_out_by_the_other_replica(
    database_url, slack, model, tmp_path
):
    effects = tmp_path / "effects.log"
    model.chat.push(tool_calls(call("delete-record", {"id": "2"}, id="call_1")), reply("Record 5 is deleted."))
    env, ports = bot_env(database_url, slack, EFFECTS=str(effects), **QUICK_RECOVERY), (free_port(), free_port())
    first, second = (SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET, slack=slack) for port in ports)
    kept = await start_serve(ports[0], env, tmp_path / "a.log")
    try:
        event = first.mention("delete record 2")
        assert (await first.event(event))[0] == 200
        [posted] = await slack.wait_for("chat.postMessage", lambda c: "tool_approve" in str(c.params), timeout=30)
        approval = slack.posted_by(posted)
        view = await _edit_form(slack, first, approval)

        killed = await start_serve(ports[1], env, tmp_path / "b.log")  # it has asked Slack nothing yet
        try:
            held = hang(slack, "conversations.info", seconds=20)  # who is in the conversation: asked by the rule
            assert await second.submit(view, EDITED, user="U2") == (200, "")  # the modal closed
            await hanging(held)  # acknowledged; the decision waits for Slack's answer
        finally:
            killed.kill()
            await killed.wait()
        assert lines(effects, "started") == []

        await until(lambda: lines(effects, "finished delete-record 5"), 30, what="the edited call")
        await until(lambda: "Record 5 is deleted." in [m.text for m in slack.thread("C1", event["ts"])], 30)
        await slack.settle()
        assert len(lines(effects, "started delete-record")) == 1
        assert "edited arguments" in approval.all_text and approval.action_ids() == []
    finally:
        await stop_bot(kept)


async def test_a_form_submitted_while_the_database_is_down_stays_open_and_works_once_it_is_back(
    postgres_cluster, slack, model, tmp_path
):
    effects = tmp_path / "effects.log"
    model.chat.push(tool_calls(call("delete-record", {"id": "2"}, id="call_1")), reply("Record 5 is deleted."))
    env, port = bot_env(postgres_cluster.url, slack, EFFECTS=str(effects), BOT_RECOVERY_INTERVAL="0.5"), free_port()
    sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET, slack=slack)
    bot = await start_serve(port, env, tmp_path / "bot.log")
    try:
        event = sender.mention("delete record 2")
        assert (await sender.event(event))[0] == 200
        [posted] = await slack.wait_for("chat.postMessage", lambda c: "tool_approve" in str(c.params), timeout=30)
        approval = slack.posted_by(posted)
        view = await _edit_form(slack, sender, approval)

        await asyncio.to_thread(postgres_cluster.stop, "fast")
        status, body = await asyncio.wait_for(sender.submit(view, EDITED, user="U2"), SLACK_WAITS)
        assert status == 200
        assert json.loads(body) == {
            "response_action": "errors",
            "errors": {"field:id": translator("en").gettext(FORM_LOST_TEXT)},
        }  # the modal stays open, saying why

        await asyncio.to_thread(postgres_cluster.start)
        await asyncio.sleep(11)  # past the bot's wait for the database: the lost form's record gives up or lands
        assert "tool_approve" in approval.action_ids() and lines(effects, "started") == []  # nothing decided
        assert await asyncio.wait_for(sender.submit(view, EDITED, user="U2"), SLACK_WAITS) == (200, "")
        await until(lambda: "Record 5 is deleted." in [m.text for m in slack.thread("C1", event["ts"])], 30)
        await slack.settle()
        assert len(lines(effects, "started delete-record")) == 1
        assert lines(effects, "started delete-record 5")
    finally:
        await stop_bot(bot)
