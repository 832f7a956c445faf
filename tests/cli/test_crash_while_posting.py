"""`python -m bot serve` killed (SIGKILL) while it posts an approval, in real processes on one database:
the restarted bot's recovery shows the approval exactly once, a click decides it, the tool runs once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from sqlalchemy import select

from bot.demo.tables import DemoRecordRow
from bot.slack.tables import ToolCallMessageRow
from bot.slack_emulator import SlackEmulator
from tests.support.processes import (
    SECRET,
    bot_env,
    free_port,
    lines,
    read,
    start_bot,
    start_serve,
    stop_bot,
)
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import SignedSender, hang, hanging

QUICK_RECOVERY = {"BOT_RECOVERY_INTERVAL": "0.5", "BOT_STALE_AFTER": "2"}


async def message_row_when(database_url: str, ready: Callable[[ToolCallMessageRow], bool]) -> ToolCallMessageRow:
    """The approval's row in the bot's database, once `ready(row)` (polled)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = await read(database_url, select(ToolCallMessageRow))
        if rows and ready(rows[0]):
            return rows[0]
        await asyncio.sleep(0.1)
    raise AssertionError("the approval's message row never got ready")


def approvals_in(slack: SlackEmulator, thread_ts: str) -> list:
    return [m for m in slack.thread("C1", thread_ts) if "tool_approve" in str(m.history) + str(m.blocks)]


async def decide_and_check(slack: SlackEmulator, sender: SignedSender, database_url: str, thread_ts: str) -> None:
    """One approval shows in the thread; approving it runs the tool once and answers."""
    [message] = approvals_in(slack, thread_ts)
    assert message.action_ids()[0] == "tool_approve"
    assert (await sender.click(message, "tool_approve", user="U2"))[0] == 200
    stops = await slack.wait_for("chat.stopStream", timeout=30)
    assert slack.message("C1", stops[-1].params["ts"]).text == "Record 2 is deleted."
    await slack.settle()
    assert "Approved" in message.all_text and message.action_ids() in ([], ["tool_undo"])  # nothing left to decide
    assert approvals_in(slack, thread_ts) == [message]
    assert await read(database_url, select(DemoRecordRow.id).order_by(DemoRecordRow.id)) == [1, 3, 4, 5]


async def test_killed_before_slack_created_the_approval(database_url, slack, model, tmp_path):
    model.chat.push(tool_calls(call("delete-record", {"id": 2}, id="call_1")), reply("Record 2 is deleted."))
    post = hang(slack, "chat.postMessage")  # the post hangs; the bot dies before Slack does anything
    env, port = bot_env(database_url, slack, **QUICK_RECOVERY), free_port()
    sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET, slack=slack)
    first = await start_bot(port, env, tmp_path / "bot.log")
    try:
        event = sender.mention("delete record 2")
        assert (await sender.event(event))[0] == 200
        await message_row_when(database_url, lambda row: row.ts is None)
        await hanging(post)
    finally:
        first.kill()
        await first.wait()
    assert approvals_in(slack, event["ts"]) == []

    second = await start_bot(port, env, tmp_path / "bot.log")
    try:
        await message_row_when(database_url, lambda row: row.ts is not None)
        await decide_and_check(slack, sender, database_url, event["ts"])
    finally:
        await stop_bot(second)


async def test_killed_after_slack_created_the_approval_but_before_its_ts_was_stored(
    database_url, slack, model, tmp_path
):
    model.chat.push(tool_calls(call("delete-record", {"id": 2}, id="call_1")), reply("Record 2 is deleted."))
    slack.drop_connection("chat.postMessage", after=True)  # created; the answer is lost
    search = hang(slack, "conversations.replies")  # the bot dies while it looks for what it created
    env, port = bot_env(database_url, slack, **QUICK_RECOVERY), free_port()
    sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET, slack=slack)
    first = await start_bot(port, env, tmp_path / "bot.log")
    try:
        event = sender.mention("delete record 2")
        assert (await sender.event(event))[0] == 200
        await message_row_when(database_url, lambda row: row.maybe_copies)
        await hanging(search)
    finally:
        first.kill()
        await first.wait()
    [created] = approvals_in(slack, event["ts"])

    second = await start_bot(port, env, tmp_path / "bot.log")
    try:
        row = await message_row_when(database_url, lambda row: row.ts is not None)
        assert row.ts == created.ts  # found in the thread and adopted, not posted again
        await decide_and_check(slack, sender, database_url, event["ts"])
        assert len([c for c in slack.calls_of("chat.postMessage") if "tool_approve" in str(c.params)]) == 1
    finally:
        await stop_bot(second)


async def test_a_tool_killed_midway_comes_back_to_slack_as_interrupted_and_runs_again_once_approved(
    database_url, slack, model, tmp_path, monkeypatch
):
    """`python -m bot serve` dies inside the approved tool; the restarted bot's recovery shows the call
    in its thread as interrupted (it may or may not have taken effect), and Run it again runs it."""
    effects = tmp_path / "effects.log"
    monkeypatch.setenv("EFFECTS", str(effects))
    model.chat.push(tool_calls(call("delete-record", {"id": "5"}, id="call_del")), reply("Deleted record 5."))
    port = free_port()
    sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET, slack=slack)
    quick = {"BOT_STALE_AFTER": "1", "BOT_RECOVERY_INTERVAL": "0.5"}
    first = await start_serve(port, bot_env(database_url, slack, CRASH_AT="in_tool", **quick), tmp_path / "a.log")
    try:
        event = sender.mention("delete record 5")
        assert (await sender.event(event))[0] == 200
        [posted] = await slack.wait_for("chat.postMessage", lambda c: "tool_approve" in str(c.params), timeout=30)
        approval = slack.posted_by(posted)
        assert (await sender.click(approval, "tool_approve", user="U2"))[0] == 200
        await asyncio.wait_for(first.wait(), 30)  # killed inside the tool, after its "started" line
    finally:
        if first.returncode is None:
            first.kill()
            await first.wait()
    assert len(lines(effects, "started delete-record 5")) == 1 and lines(effects, "finished") == []

    second = await start_serve(port, bot_env(database_url, slack, **quick), tmp_path / "b.log")
    try:
        [again] = await slack.wait_for(
            "chat.postMessage", lambda c: "may or may not have taken effect" in c.text, timeout=30
        )
        interrupted = slack.posted_by(again)
        assert interrupted.thread_ts == event["ts"]
        assert interrupted.action_ids() == ["tool_approve", "tool_decline", "tool_decline_with_reason", "tool_cancel"]
        # the first message has no buttons left: it shows the approval, or (when the crash came before that
        # update) that the call was interrupted and waits again below
        assert approval.action_ids() in ([], ["tool_undo"])
        assert "Approved" in approval.all_text or "waits for a decision again" in approval.all_text

        assert (await sender.click(interrupted, "tool_approve", user="U2"))[0] == 200
        await slack.wait_for("chat.stopStream", timeout=30)
        await slack.settle()
        answers = [m for m in slack.thread("C1", event["ts"]) if m.text == "Deleted record 5."]
        assert len(answers) == 1
        assert "Run again" in interrupted.all_text and interrupted.action_ids() in ([], ["tool_undo"])
        assert len(lines(effects, "started delete-record 5")) == 2  # once before the crash, once approved again
        assert len(lines(effects, "finished delete-record 5")) == 1
        assert len([c for c in slack.calls_of("chat.postMessage") if "may or may not" in c.text]) == 1
    finally:
        await stop_bot(second)


async def test_a_slow_post_that_lands_after_the_recovery_posted_again_shows_the_decision_too(
    database_url, slack, model, tmp_path
):
    """Issue 17: Slack is slow with the approval's post; the bot dies while it waits; the restarted bot's
    recovery looks in the thread, finds nothing yet and posts again; then the slow post lands. After the
    decision both copies show it (before, the first kept its buttons and said "already decided")."""
    model.chat.push(tool_calls(call("delete-record", {"id": 2}, id="call_1")), reply("Record 2 is deleted."))
    slow = slack.hold("chat.postMessage")
    env, port = bot_env(database_url, slack, **QUICK_RECOVERY), free_port()
    sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET, slack=slack)
    first = await start_bot(port, env, tmp_path / "a.log")
    try:
        event = sender.mention("delete record 2")
        assert (await sender.event(event))[0] == 200
        await asyncio.wait_for(slow.arrived.wait(), 30)  # Slack has the post; it answers late
    finally:
        first.kill()
        await first.wait()

    second = await start_bot(port, env, tmp_path / "b.log")
    try:
        await message_row_when(database_url, lambda row: row.ts is not None)  # the recovery posted it again
        [again] = approvals_in(slack, event["ts"])
        slow.release()  # now the first post lands, in a thread that already shows the approval
        await slack.wait_for("chat.postMessage", lambda c: "tool_approve" in str(c.params), count=2, timeout=30)
        copies = approvals_in(slack, event["ts"])
        assert len(copies) == 2 and again in copies

        assert (await sender.click(again, "tool_approve", user="U2"))[0] == 200
        stops = await slack.wait_for("chat.stopStream", timeout=30)
        assert slack.message("C1", stops[-1].params["ts"]).text == "Record 2 is deleted."
        await slack.settle()
        for copy in copies:  # every copy shows the decision, none has buttons left
            assert "Approved" in copy.all_text and copy.action_ids() in ([], ["tool_undo"])
        assert await read(database_url, select(DemoRecordRow.id).order_by(DemoRecordRow.id)) == [1, 3, 4, 5]
    finally:
        slow.release()
        await stop_bot(second)
