"""The adapter's own storage: claiming events once, conversations, and forgetting old event ids."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from bot.slack.store import SlackStore
from bot.slack.threads import SlackThread


async def test_an_event_is_claimed_once_even_by_racing_claimers(storage):
    store = SlackStore(storage)
    results = await asyncio.gather(*(store.claim_event("Ev1", "T1") for _ in range(5)))
    assert sorted(results) == [False, False, False, False, True]
    assert await store.claim_event("Ev2", "T1") is True


async def test_old_event_ids_are_forgotten(storage):
    store = SlackStore(storage, keep_events=timedelta(seconds=-1), prune_every=2)
    assert await store.claim_event("Ev1", None)
    assert await store.claim_event("Ev2", None)  # the second claim prunes everything older than "the future"
    assert await store.claim_event("Ev1", None)


async def test_conversation_belongs_to_whoever_started_it(storage):
    store = SlackStore(storage)
    thread = SlackThread(team_id="T1", channel="C1", thread_ts="1.0")
    assert await store.conversation(thread) is None
    assert (await store.start_conversation(thread, "U1")).started_by == "U1"
    assert (await store.start_conversation(thread, "U2")).started_by == "U1"
    assert thread.thread_id == "slack:T1:C1:1.0"
