"""The adapter's own stores: claiming events once, conversations, thread leases, and forgetting old event ids."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from bot.slack.stores import Conversations, EventLog, SlackStores, prepare_slack_tables
from bot.slack.threads import SlackThread
from memory.tables import utcnow
from tests.support.statements import statements_of

pytestmark = pytest.mark.both_databases


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


async def test_a_claim_tried_again_after_it_landed_still_wins(slack_storage):
    """A claim's statement commits by itself; tried again after a lost connection (`retried_while_away`) it
    meets its own row, and wins still, where another claim of the event loses."""
    events = EventLog(slack_storage)
    claim = {"event_id": "Ev1", "team_id": "T1", "received_at": utcnow(), "thread_id": None}
    claim |= {"message_ts": None, "event": None, "bot_user_id": None}
    assert await events._insert_claims([claim]) == {"Ev1"}
    assert await events._insert_claims([claim]) == {"Ev1"}  # the same claim, tried again
    assert await events._insert_claims([{**claim, "received_at": utcnow()}]) == set()  # another one
    assert await events.claim("Ev1", "T1") is False


async def test_old_event_ids_are_forgotten(slack_storage):
    events = EventLog(slack_storage, keep_events=timedelta(seconds=-1), prune_every=2)
    assert await events.claim("Ev1", None)
    assert await events.claim("Ev2", None)  # the second claim prunes everything older than "the future"
    assert await events.claim("Ev1", None)


async def test_conversation_belongs_to_whoever_started_it(slack_storage):
    conversations = Conversations(slack_storage)
    thread = SlackThread(team_id="T1", channel="C1", thread_ts="1.0")
    assert await conversations.get(thread) is None
    first, created = await conversations.start(thread, "U1")
    assert (first.started_by, created) == ("U1", True)
    again, created = await conversations.start(thread, "U2")
    assert (again.started_by, created) == ("U1", False)
    assert thread.thread_id == "slack:T1:C1:1.0"


async def test_a_turn_with_nothing_after_it_ends_in_one_statement(slack_storage):
    """Its mark and the lease's release: one statement on PostgreSQL, which does not count the message its
    own mark ends as waiting (its parts see the queue as it was before the mark)."""
    stores = SlackStores.on(slack_storage)
    thread_id = "slack:T1:C1:1.0"
    await stores.events.claim("Ev1", "T1", thread_id=thread_id, event={"ts": "1.0", "text": "Grüß Gott"})
    first = await stores.take_thread(thread_id, "replica-a", stale_after=30)
    with statements_of(slack_storage) as seen:
        assert await stores.finish_turn(first, "replica-a") is None
    verbs = [statement.split(" ")[0] for statement in seen if not statement.startswith("BEGIN")]
    assert verbs == (["UPDATE", "DELETE"] if slack_storage.is_sqlite else ["WITH"]), seen
    assert not await stores.events.any_queued(thread_id)
    assert await stores.thread_turns.take(thread_id, "replica-b", stale_after=30)  # let go


async def test_a_thread_turn_has_one_holder_until_its_last_message_is_done(slack_storage):
    stores = SlackStores.on(slack_storage)
    thread_id = "slack:T1:C1:1.0"
    assert await stores.take_thread(thread_id, "replica-a", stale_after=30) is None  # nothing waits
    assert await stores.thread_turns.take(thread_id, "replica-b", stale_after=30)  # so it was let go
    await stores.thread_turns.release(thread_id, "replica-b")
    await stores.events.claim("Ev1", "T1", thread_id=thread_id, event={"ts": "1.0", "text": "東京の天気は?"})
    await stores.events.claim("Ev2", "T1", thread_id=thread_id, event={"ts": "2.0", "text": "서울 날씨는?"})
    first = await stores.take_thread(thread_id, "replica-a", stale_after=30)
    assert (first.event["text"], first.started) == ("東京の天気は?", False)
    assert await stores.take_thread(thread_id, "replica-b", stale_after=30) is None
    assert await stores.thread_turns.keep(thread_id, "replica-a")
    assert not await stores.thread_turns.keep(thread_id, "replica-b")
    second = await stores.finish_turn(first, "replica-a")
    assert second.event["text"] == "서울 날씨는?"
    assert await stores.finish_turn(second, "replica-a") is None
    assert not await stores.events.any_queued(thread_id)
    assert not await stores.thread_turns.keep(thread_id, "replica-a")  # let go with the last message


async def test_a_mention_starts_its_conversation_with_its_turn(slack_storage):
    stores = SlackStores.on(slack_storage)
    thread = SlackThread(team_id="T1", channel="C1", thread_ts="1.0")
    mention = {"type": "app_mention", "channel": "C1", "user": "U1", "ts": "1.0", "text": "<@UBOT> שלום"}
    reply = {"type": "message", "channel": "C1", "user": "U2", "ts": "2.0", "thread_ts": "1.0", "text": "et après ?"}
    again = {**mention, "user": "U2", "ts": "3.0", "thread_ts": "1.0", "text": "<@UBOT> 又见面了"}
    for event_id, event in (("Ev1", mention), ("Ev2", reply), ("Ev3", again)):
        await stores.events.claim(event_id, "T1", thread_id=thread.thread_id, event=event)
    first = await stores.take_thread(thread.thread_id, "replica-a", stale_after=30)
    assert (first.conversation.started_by, first.new_conversation) == ("U1", True)
    assert (await stores.conversations.get(thread)).started_by == "U1"
    second = await stores.finish_turn(first, "replica-a")
    assert (second.event["text"], second.conversation.started_by, second.new_conversation) == (
        "et après ?",
        "U1",
        False,
    )
    third = await stores.finish_turn(second, "replica-a")
    assert (third.conversation.started_by, third.new_conversation) == ("U1", False)  # the first speaker's still


async def test_a_thread_with_a_message_waiting_is_not_let_go(slack_storage):
    """The message's receiver found the thread busy and left it to the holder: the lease stays."""
    stores = SlackStores.on(slack_storage)
    thread_id = "slack:T1:C1:1.0"
    assert await stores.thread_turns.take(thread_id, "replica-a", stale_after=30)
    await stores.events.claim("Ev1", "T1", thread_id=thread_id, event={"ts": "1.0", "text": "مرحبا"})
    assert not await stores.thread_turns.release_if_idle(thread_id, "replica-a")
    assert not await stores.thread_turns.release_if_idle(thread_id, "replica-b")
    assert await stores.thread_turns.keep(thread_id, "replica-a")


async def test_a_replica_that_lost_the_thread_while_it_stalled_starts_nothing_more_there(slack_storage):
    """Replica a stalls in a turn past its lease (a paused VM), b takes the thread over and goes on with its
    messages; when a wakes and ends its turn it starts none of them: one turn at a time per thread."""
    stores = SlackStores.on(slack_storage)
    thread_id = "slack:T1:C1:1.0"
    for n, text in enumerate(["Grüß Gott", "你好吗？", "שלום לכולם"], start=1):
        await stores.events.claim(f"Ev{n}", "T1", thread_id=thread_id, event={"ts": f"{n}.0", "text": text})
    stalled = await stores.take_thread(thread_id, "replica-a", stale_after=30)
    taken_over = await stores.take_thread(thread_id, "replica-b", stale_after=-1)  # a's heartbeat is "stale"
    assert (taken_over.event_id, taken_over.started) == ("Ev1", True)
    second = await stores.finish_turn(taken_over, "replica-b")
    assert (second.event["text"], second.started) == ("你好吗？", False)

    assert await stores.finish_turn(stalled, "replica-a") is None
    assert not await stores.thread_turns.keep(thread_id, "replica-a")
    third = await stores.finish_turn(second, "replica-b")
    assert (third.event["text"], third.started) == ("שלום לכולם", False)  # b's to start, not a's


async def test_a_turn_started_by_a_replica_that_stopped_says_so(slack_storage):
    stores = SlackStores.on(slack_storage)
    thread_id = "slack:T1:C1:1.0"
    await stores.events.claim("Ev1", "T1", thread_id=thread_id, event={"ts": "1.0", "text": "Grüß Gott"})
    assert not (await stores.take_thread(thread_id, "replica-a", stale_after=30)).started
    taken_over = await stores.take_thread(thread_id, "replica-b", stale_after=-1)  # a's heartbeat is "stale"
    assert (taken_over.event_id, taken_over.started) == ("Ev1", True)


async def test_a_conversations_language_is_fixed_by_the_first_to_fix_it(slack_storage):
    conversations = Conversations(slack_storage)
    thread = SlackThread(team_id="T1", channel="C1", thread_ts="1.0")
    assert await conversations.keep_language(thread.thread_id, "fr") is None  # no conversation: nothing fixed
    await conversations.start(thread, "U1")
    assert await conversations.keep_language(thread.thread_id, "fr") == "fr"
    assert await conversations.keep_language(thread.thread_id, "de") == "fr"
    assert (await conversations.get(thread)).language == "fr"


async def test_a_mentions_turn_starts_in_two_statements_and_only_for_the_leases_holder(slack_storage):
    """The lease with the message's start (and the read of the queue), the conversation with its language."""
    stores = SlackStores.on(slack_storage)
    thread = SlackThread(team_id="T1", channel="C1", thread_ts="1.0")
    mention = {"type": "app_mention", "channel": "C1", "user": "U1", "ts": "1.0", "text": "<@UBOT> hej"}
    await stores.events.claim("Ev1", "T1", thread_id=thread.thread_id, event=mention)

    async def swedish(thread_id: str, user: str) -> str:
        return "sv"

    with statements_of(slack_storage) as seen:
        first = await stores.take_thread(thread.thread_id, "replica-a", stale_after=30, language_of=swedish)
    verbs = [statement.split(" ")[0] for statement in seen if not statement.startswith("BEGIN")]
    # the lease and the start: one statement on PostgreSQL (SQLite has no INSERT or UPDATE inside a WITH)
    assert verbs == (["INSERT", "UPDATE", "INSERT"] if slack_storage.is_sqlite else ["WITH", "INSERT"]), seen
    assert (first.event_id, first.started, first.new_conversation) == ("Ev1", False, True)
    assert (first.conversation.started_by, first.conversation.language) == ("U1", "sv")
    assert await stores.events.start_next(thread.thread_id, "replica-b") is None  # not b's thread
    again = await stores.events.start_next(thread.thread_id, "replica-a")
    assert (again.event_id, again.started) == ("Ev1", True)  # its turn was started before (by the first)


async def test_a_conversation_takes_its_starters_language_once(slack_storage):
    conversations = Conversations(slack_storage)
    thread = SlackThread(team_id="T1", channel="C1", thread_ts="1.0")
    first, _ = await conversations.start(thread, "U1")
    assert first.language is None  # none given: fixed later (`ReaderLanguages.of_thread`)
    other, _ = await conversations.start(thread, "U2", language="de")
    assert other.language is None  # not the starter's
    starter, _ = await conversations.start(thread, "U1", language="ja")
    assert starter.language == "ja"
    again, created = await conversations.start(thread, "U1", language="fr")
    assert (again.language, again.started_by, created) == ("ja", "U1", False)


async def test_a_turn_in_a_conversation_with_its_language_reads_it_with_its_start(slack_storage):
    """A reply in the thread, or another mention there: the lease and the start, which reads the conversation."""
    stores = SlackStores.on(slack_storage)
    thread = SlackThread(team_id="T1", channel="C1", thread_ts="1.0")
    await stores.conversations.start(thread, "U1", language="pt")
    reply = {"type": "message", "channel": "C1", "user": "U2", "ts": "2.0", "thread_ts": "1.0", "text": "e aí?"}
    mention = {
        "type": "app_mention",
        "channel": "C1",
        "user": "U2",
        "ts": "3.0",
        "thread_ts": "1.0",
        "text": "<@UBOT> oi",
    }
    for event_id, event in (("Ev2", reply), ("Ev3", mention)):
        await stores.events.claim(event_id, "T1", thread_id=thread.thread_id, event=event)
        with statements_of(slack_storage) as seen:
            started = await stores.take_thread(thread.thread_id, "replica-a", stale_after=30)
        verbs = [statement.split(" ")[0] for statement in seen if not statement.startswith("BEGIN")]
        assert verbs == (["INSERT", "UPDATE"] if slack_storage.is_sqlite else ["WITH"]), seen
        conversation = started.conversation
        assert (started.event_id, conversation.started_by, conversation.language) == (event_id, "U1", "pt")
        assert (conversation.thread_id, conversation.channel, conversation.thread_ts) == (thread.thread_id, "C1", "1.0")
        assert not started.new_conversation
        assert await stores.finish_turn(started, "replica-a") is None


async def test_a_thread_held_by_another_starts_nothing_for_who_failed_to_take_it(slack_storage):
    stores = SlackStores.on(slack_storage)
    thread_id = "slack:T1:C1:1.0"
    assert await stores.thread_turns.take(thread_id, "replica-a", stale_after=30)
    await stores.events.claim("Ev1", "T1", thread_id=thread_id, event={"ts": "1.0", "text": "Καλημέρα"})
    assert await stores.take_thread(thread_id, "replica-b", stale_after=30) is None
    first = await stores.events.start_next(thread_id, "replica-a")
    assert (first.event_id, first.started) == ("Ev1", False)  # b's failed take started nothing
