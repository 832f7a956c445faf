"""Nothing waits unseen in Slack: an approval or question whose message Slack refused, or that was never
recorded, is posted by the recovery pass; a message whose update failed is brought up to date; runs the
runtime continues on its own are relayed into their thread."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import update

from bot.slack.recovery import recover_messages
from bot.slack.services import services_of_app
from bot.slack.threads import SlackThread
from memory.tables import ToolCallRow
from tests.support.scripted_model import call, reply, tool_calls

from .harness import RunningBot, ask_to_delete, record_ids, running_bot


def approvals(bot: RunningBot) -> list:
    """The approval messages in Slack (with buttons or not), oldest first."""
    return sorted(
        (m for m in bot.slack.messages.values() if "tool_approve" in str(m.history) + str(m.blocks)),
        key=lambda m: float(m.ts),
    )


async def recover(bot: RunningBot, repost_after: float = 0):
    """One recovery pass; with `repost_after=0` a post someone took on may be taken over at once."""
    return await recover_messages(services_of_app(bot.app), bot.app.client, repost_after=repost_after)


async def test_an_approval_slack_refused_is_posted_by_the_recovery_and_decides_the_call(bot: RunningBot, model):
    bot.slack.fail("chat.postMessage", status=500, times=3)
    ask_to_delete(model)
    event = await bot.mention("delete record 3")
    note = await bot.slack.wait_for("chat.postMessage", lambda c: "will post it here again" in c.text)
    await bot.slack.settle()
    assert note[0].params["thread_ts"] == event["ts"]
    assert approvals(bot) == []  # Slack took none of the three tries
    assert (await bot.agent.list_suspended_runs()).total == 1  # the call waits all the same

    report = await recover(bot)

    assert report.posted == 1
    message = await bot.approval_message()
    assert message.thread_ts == event["ts"] and message.action_ids()[0] == "tool_approve"
    assert "please" not in message.all_text and '"id": 3' in message.all_text
    await bot.sender.click(message, "tool_approve", user="U2")
    stops = await bot.slack.wait_for("chat.stopStream")
    assert bot.slack.message("C1", stops[-1].params["ts"]).text == "Deleted record 3."
    assert "Approved" in message.all_text and message.action_ids() == []
    assert await record_ids(bot) == [1, 2, 4, 5]
    assert (await recover(bot)).posted == 0  # posted once, never again


@pytest.mark.both_databases
async def test_two_replicas_recovering_at_once_post_the_message_once(database_url, slack, model, clock):
    ask_to_delete(model)
    async with (
        running_bot(database_url=database_url, slack=slack, clock=clock) as one,
        running_bot(database_url=database_url, slack=slack, clock=clock) as two,
    ):
        slack.fail("chat.postMessage", status=500, times=3)
        await one.mention("delete record 3")
        await slack.wait_for("chat.postMessage", lambda c: "will post it here again" in c.text)
        await slack.settle()
        clock.advance(1)  # the first post was taken on more than `repost_after` ago

        reports = await asyncio.gather(*(recover(bot, repost_after=1) for bot in (one, two, one, two)))

        assert sum(report.posted for report in reports) == 1
        await slack.settle()
        assert len(approvals(one)) == 1
        message = await two.approval_message()
        await two.sender.click(message, "tool_approve")
        await slack.wait_for("chat.stopStream")
        assert await record_ids(one) == [1, 2, 4, 5]


async def start_unseen_approval(bot: RunningBot, model) -> tuple[dict, str]:
    """A conversation in a thread, then a run in that thread that stops at an approval nobody relayed to
    Slack (as when the process died between storing the suspension and recording its message)."""
    model.chat.push(reply("Hello."))
    event = await bot.mention("hi")
    await bot.slack.wait_for("chat.stopStream")
    thread = SlackThread(team_id="T0TEAM", channel="C1", thread_ts=event["ts"])
    model.chat.push(tool_calls(call("delete-record", {"id": 2}, id="call_9")), reply("Deleted record 2."))
    stream = await bot.agent.stream(
        "delete record 2",
        thread_id=thread.thread_id,
        resource_id="U1",
        request_context={"slack": {"user": "U1", "channel": "C1", "thread_ts": event["ts"], "team_id": "T0TEAM"}},
    )
    output = await stream.result()
    assert output.finish_reason == "suspended"
    return event, stream.run_id


async def test_a_waiting_call_with_no_message_is_posted_by_the_recovery(bot: RunningBot, model):
    event, run_id = await start_unseen_approval(bot, model)
    await bot.slack.settle()
    assert approvals(bot) == []

    report = await recover(bot)

    assert (report.recorded, report.posted) == (1, 1)
    message = await bot.approval_message()
    assert message.thread_ts == event["ts"] and "<@U1>" in message.all_text and '"id": 2' in message.all_text
    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.stopStream", lambda c: "Deleted record 2." in c.text or True, count=2)
    await bot.slack.settle()
    assert await record_ids(bot) == [1, 3, 4, 5]
    assert "Approved" in message.all_text and message.action_ids() in ([], ["tool_undo"])  # only Undo, once it ran
    assert (await recover(bot)).posted == 0


async def test_an_interrupted_call_says_it_may_have_taken_effect_and_offers_to_run_it_again(bot: RunningBot, model):
    # The runtime's recovery marks a call whose tool started and never stored a result this way; here the
    # mark is written directly, so the adapter's part is tested on its own.
    _event, run_id = await start_unseen_approval(bot, model)
    async with bot.storage.session() as session:
        await session.execute(
            update(ToolCallRow)
            .where(ToolCallRow.run_id == run_id)
            .values(interrupted=True, suspend_payload={"started_at": "earlier"})
        )

    await recover(bot)

    message = await bot.approval_message()
    assert "may or may not have taken effect" in message.all_text
    assert message.action_ids() == ["tool_approve", "tool_decline", "tool_decline_with_reason", "tool_cancel"]
    assert "Run it again" in str(message.blocks)
    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert "Run again" in message.all_text and "<@U2>" in message.all_text and message.action_ids() == []
    await bot.slack.settle()
    assert await record_ids(bot) == [1, 3, 4, 5]


async def test_a_message_whose_update_failed_is_brought_up_to_date_by_the_recovery(bot: RunningBot, model):
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    await bot.slack.settle()  # the turn is over (its last look at the thread's messages included)
    # each update is tried four times (the client retries three); the decision's and the turn's end both fail
    bot.slack.fail("chat.update", status=500, times=8)
    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.stopStream")
    await bot.slack.settle()
    assert message.action_ids()[0] == "tool_approve"  # Slack did not take the update

    report = await recover(bot)

    assert report.closed == 1
    assert "Approved" in message.all_text and "<@U2>" in message.all_text and message.action_ids() == []
    assert await record_ids(bot) == [1, 2, 4, 5]


async def test_a_run_the_runtime_continues_on_its_own_is_relayed_into_its_thread(bot: RunningBot, model):
    ask_to_delete(model)
    event = await bot.mention("delete record 3")
    message = await bot.approval_message()
    [run] = (await bot.agent.list_suspended_runs()).runs
    # decided outside Slack, its continuation read by nobody: the runtime hands it to the hook
    stream = await bot.agent.approve_tool_call(run_id=run.run_id, tool_call_id="call_1", approver="U2")
    bot.agent.hooks["on_background_stream"](stream)

    stops = await bot.slack.wait_for("chat.stopStream")
    answer = bot.slack.message("C1", stops[-1].params["ts"])
    assert answer.text == "Deleted record 3." and answer.thread_ts == event["ts"]
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert "Approved" in message.all_text and message.action_ids() == []


async def test_a_model_that_does_not_answer_fails_the_turn_with_a_clear_message_and_the_thread_goes_on(
    bot: RunningBot, model
):
    from tests.support.scripted_model import failure

    bot.agent.set_default_option("model_timeout", 1.0)
    model.chat.push(failure("timeout", seconds=5, retry=False), reply("Here again."))
    event = await bot.mention("hello?")
    said = await bot.slack.wait_until(
        lambda: [m for m in bot.slack.thread("C1", event["ts"]) if "did not answer within 1 s" in m.all_text],
        what="the timeout message",
    )
    assert said[0].thread_ts == event["ts"]
    await bot.slack.settle()
    await bot.say("still there?", thread_ts=event["ts"])
    await bot.slack.wait_until(
        lambda: [m for m in bot.slack.thread("C1", event["ts"]) if m.text == "Here again."], what="the next answer"
    )
