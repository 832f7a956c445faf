"""The adapter's own stores: claiming events once, conversations, thread leases, and forgetting old event ids."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from bot.slack.stores import Conversations, EventLog, ThreadTurns, prepare_slack_tables
from bot.slack.threads import SlackThread


@pytest.fixture
async def slack_storage(storage):
    await prepare_slack_tables(storage)
    return storage


async def test_an_event_is_claimed_once_even_by_racing_claimers(slack_storage):
    events = EventLog(slack_storage)
    results = await asyncio.gather(*(events.claim("Ev1", "T1") for _ in range(5)))
    assert sorted(results) == [False, False, False, False, True]
    assert await events.claim("Ev2", "T1") is True


async def test_claims_of_one_burst_are_decided_each(slack_storage):
    """Claims written in one batch: each event has one winner, a repeat of an earlier one loses."""
    events = EventLog(slack_storage)
    assert await events.claim("Ev0", "T1")
    claims = ["Ev0", "Ev1", "Ev2", "Ev1", "Ev3"]
    results = await asyncio.gather(*(events.claim(event_id, "T1") for event_id in claims))
    assert results == [False, True, True, False, True]


async def test_old_event_ids_are_forgotten(slack_storage):
    events = EventLog(slack_storage, keep_events=timedelta(seconds=-1), prune_every=2)
    assert await events.claim("Ev1", None)
    assert await events.claim("Ev2", None)  # the second claim prunes everything older than "the future"
    assert await events.claim("Ev1", None)


async def test_conversation_belongs_to_whoever_started_it(slack_storage):
    conversations = Conversations(slack_storage)
    thread = SlackThread(team_id="T1", channel="C1", thread_ts="1.0")
    assert await conversations.get(thread) is None
    assert (await conversations.start(thread, "U1")).started_by == "U1"
    assert (await conversations.start(thread, "U2")).started_by == "U1"
    assert thread.thread_id == "slack:T1:C1:1.0"


async def test_a_thread_turn_has_one_holder_until_released(slack_storage):
    leases, events = ThreadTurns(slack_storage), EventLog(slack_storage)
    thread_id = "slack:T1:C1:1.0"
    assert await leases.take(thread_id, "replica-a", stale_after=30)
    assert not await leases.take(thread_id, "replica-b", stale_after=30)
    assert await leases.keep(thread_id, "replica-a")
    assert not await leases.keep(thread_id, "replica-b")
    await events.claim("Ev1", "T1", thread_id=thread_id, event={"ts": "1.0", "text": "東京の天気は?"})
    assert await events.any_queued(thread_id)
    await leases.release(thread_id, "replica-a")
    assert await leases.take(thread_id, "replica-b", stale_after=30)
    assert (await events.next_queued(thread_id)).event["text"] == "東京の天気は?"
