"""`chat.postMessage` on a bad day, through the strict Slack emulation's faults: a connection dropped after
Slack created the approval, copies left by retries the bot could not check, Slack down for a while.
Whatever happened, the call is shown, every message that shows it decides it, and the tool runs once."""

from __future__ import annotations

import asyncio
import copy

from bot.slack import run_slack_recovery
from bot.slack.recovery import recover_messages
from bot.slack.services import services_of_app

from .harness import RunningBot, ask_to_delete, record_ids


def approvals_in(bot: RunningBot, thread_ts: str) -> list:
    """The messages of the thread that show an approval (with buttons, or updated after the decision)."""
    messages = [
        m
        for m in bot.slack.workspace.messages.values()
        if m.thread_ts == thread_ts and "tool_approve" in str(m.history) + str(m.blocks)
    ]
    return sorted(messages, key=lambda m: float(m.ts))


async def test_a_connection_dropped_after_slack_created_the_approval_leaves_one_message(bot: RunningBot, model):
    bot.slack.drop_connection("chat.postMessage", after=True)
    ask_to_delete(model)
    event = await bot.mention("delete record 3")
    await bot.slack.wait_for("conversations.replies")  # the bot looked before posting again
    await bot.slack.settle()

    [message] = approvals_in(bot, event["ts"])  # adopted, not posted a second time
    assert message.action_ids()[0] == "tool_approve"
    assert not [c for c in bot.slack.calls_of("chat.postMessage") if "will post it here again" in c.text]
    await bot.sender.click(message, "tool_approve", user="U2")
    stops = await bot.slack.wait_for("chat.stopStream")
    assert bot.slack.message("C1", stops[-1].params["ts"]).text == "Deleted record 3."
    assert "Approved" in message.all_text and message.action_ids() == []
    assert await record_ids(bot) == [1, 2, 4, 5]


async def test_every_copy_decides_the_one_call_and_all_are_updated(bot: RunningBot, model):
    # Two posts are created but their answers lost, and the thread cannot be read to check: three copies.
    bot.slack.drop_connection("chat.postMessage", times=2, after=True)
    bot.slack.fail("conversations.replies", status=500, times=8)  # two looks, each tried four times
    ask_to_delete(model)
    event = await bot.mention("delete record 3")
    await bot.slack.wait_until(lambda: len(approvals_in(bot, event["ts"])) == 3, what="three copies", timeout=40)
    await bot.slack.settle()
    first, second, third = approvals_in(bot, event["ts"])
    assert (
        first.button_value("tool_approve") == second.button_value("tool_approve") == third.button_value("tool_approve")
    )

    stale_screen = copy.deepcopy(second)  # how someone who has not reloaded still sees it
    await bot.sender.click(first, "tool_approve", user="U2")  # a copy the bot never heard back about

    stops = await bot.slack.wait_for("chat.stopStream")
    assert bot.slack.message("C1", stops[-1].params["ts"]).text == "Deleted record 3."
    await bot.slack.settle()
    for shown in (first, second, third):
        assert shown.action_ids() in ([], ["tool_undo"]) and "Approved" in shown.all_text and "<@U2>" in shown.all_text

    await bot.sender.click(stale_screen, "tool_approve", user="U3")  # buttons still shown there
    told = await bot.slack.wait_for("chat.postEphemeral", lambda c: c.params["user"] == "U3")
    assert "already decided" in told[0].params["text"]
    await bot.slack.settle()
    assert await record_ids(bot) == [1, 2, 4, 5]  # the tool ran once
    assert len(bot.slack.calls_of("chat.stopStream")) == 1


async def test_an_approval_posted_while_slack_was_down_appears_once_slack_is_back(bot: RunningBot, model, clock):
    # Slack fails every try of the turn (three posts) and the note about it; the recovery loop runs.
    bot.slack.fail("chat.postMessage", status=500, times=7)
    ask_to_delete(model)
    event = await bot.mention("delete record 3")
    # three posts, each with the client's retries and the turn's backoff, then the note: under load
    # this takes longer than the emulator's default 10 s wait
    await bot.slack.wait_until(lambda: len(bot.slack.failed) >= 7, what="Slack's failures", timeout=60)
    assert approvals_in(bot, event["ts"]) == []
    recovery = asyncio.create_task(run_slack_recovery(bot.app, every=0.3, repost_after=0.5))
    try:
        await bot.slack.wait_until(lambda: approvals_in(bot, event["ts"]), what="the recovered approval")
        services = services_of_app(bot.app)
        async with asyncio.timeout(10):  # the pass that posted it also stores its ts before the loop stops
            while await services.stores.messages.unposted():
                await asyncio.sleep(0.05)
        recovery.cancel()
        await asyncio.gather(recovery, return_exceptions=True)
        for _ in range(3):  # more passes, each after any backoff would be over: none posts it again
            clock.advance(3601)  # past the longest backoff (an hour)
            report = await recover_messages(services, bot.app.client, repost_after=0.5)
            assert report.posted == 0
            assert len(approvals_in(bot, event["ts"])) == 1
        [message] = approvals_in(bot, event["ts"])
        await bot.sender.click(message, "tool_approve", user="U2")
        await bot.slack.wait_for("chat.stopStream")
        await bot.slack.settle()
    finally:
        recovery.cancel()
        await asyncio.gather(recovery, return_exceptions=True)
    assert "Approved" in message.all_text and message.action_ids() in ([], ["tool_undo"])  # only Undo, once it ran
    assert await record_ids(bot) == [1, 2, 4, 5]


async def test_a_replica_that_stalled_mid_post_posts_nothing_after_another_posted_and_it_was_decided(
    bot: RunningBot, model
):
    # The turn's post gets a 503; while it waits to try again (a stall: here its look at the thread is held),
    # the recovery (as another replica's) takes the post over, posts it, and it is approved and runs.
    bot.slack.fail("chat.postMessage", status=503)
    stalled = bot.slack.hold("conversations.replies")
    ask_to_delete(model)
    event = await bot.mention("删除记录 3")
    await stalled.arrived.wait()
    report = await recover_messages(services_of_app(bot.app), bot.app.client, repost_after=0)
    assert report.posted == 1
    [message] = approvals_in(bot, event["ts"])
    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.stopStream")
    await bot.slack.settle()

    stalled.release()  # the stalled post wakes up: it must not post a second, live approval
    await bot.slack.settle()
    assert [m.action_ids() for m in approvals_in(bot, event["ts"])] == [[]]
    assert not [c for c in bot.slack.calls_of("chat.postMessage") if "will post it here again" in c.text]
    assert await record_ids(bot) == [1, 2, 4, 5]


async def test_a_copy_that_lands_after_the_decision_shows_the_decision_at_once(bot: RunningBot, model):
    # The turn's post is on its way (Slack holds it) when another replica takes the post over, posts it, and
    # it is approved; then Slack carries out the first post too: that copy must not keep live buttons.
    slow = bot.slack.hold("chat.postMessage")
    ask_to_delete(model)
    event = await bot.mention("レコード 3 を削除して")
    await slow.arrived.wait()
    report = await recover_messages(services_of_app(bot.app), bot.app.client, repost_after=0)
    assert report.posted == 1
    [message] = approvals_in(bot, event["ts"])
    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.stopStream")
    await bot.slack.settle()

    slow.release()
    await bot.slack.wait_until(lambda: len(approvals_in(bot, event["ts"])) == 2, what="the late copy")
    await bot.slack.settle()
    assert [m.action_ids() for m in approvals_in(bot, event["ts"])] == [[], []]
    assert all("Approved" in m.all_text for m in approvals_in(bot, event["ts"]))
    assert await record_ids(bot) == [1, 2, 4, 5]
