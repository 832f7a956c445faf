"""Events are acknowledged at once, and a retried event (same event_id) is answered 200 and not processed again."""

from __future__ import annotations

import json
import time

import pytest

from tests.support.scripted_model import failure, reply

from ...harness import RunningBot, running_bot

pytestmark = pytest.mark.both_databases


async def test_retried_event_is_not_processed_twice(bot: RunningBot, model):
    model.chat.push(reply("Only once."), reply("must not be used"))
    event = bot.sender.mention("hi")
    assert (await bot.sender.event(event, event_id="Ev000RETRY"))[0] == 200
    assert (await bot.sender.event(event, event_id="Ev000RETRY", retry_num=1))[0] == 200
    assert (await bot.sender.event(event, event_id="Ev000RETRY", retry_num=2))[0] == 200
    await bot.slack.wait_for("chat.stopStream")
    await bot.slack.settle()
    assert len(model.chat.requests) == 1
    assert len(bot.slack.calls_of("chat.startStream")) == 1


async def test_event_is_acknowledged_before_the_work(bot: RunningBot, model):
    model.chat.push(failure("timeout", seconds=2.0, then=reply("slow")))
    started = time.monotonic()
    status, _ = await bot.sender.event(bot.sender.mention("hi"))
    assert status == 200 and time.monotonic() - started < 1.5
    await bot.slack.wait_for("chat.stopStream")


async def test_unsigned_or_forged_requests_are_refused(bot: RunningBot, model):
    event = bot.sender.mention("hi")
    status, _ = await bot.sender.post(
        json.dumps({"type": "event_callback", "event": event, "event_id": "Ev1"}),
        content_type="application/json",
        signature="v0=forged",
    )
    assert status == 401
    await bot.slack.settle()
    assert model.chat.requests == []


async def test_two_bot_processes_on_one_database_handle_an_event_once(database_url, slack, model):
    model.chat.push(reply("Once."), reply("must not be used"))
    async with (
        running_bot(database_url=database_url, slack=slack) as one,
        running_bot(database_url=database_url, slack=slack) as two,
    ):
        event = one.sender.mention("hi")
        await one.sender.event(event, event_id="Ev000TWO")
        await two.sender.event(event, event_id="Ev000TWO", retry_num=1)
        await slack.wait_for("chat.stopStream")
        await slack.settle()
    assert len(model.chat.requests) == 1
