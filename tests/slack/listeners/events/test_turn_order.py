"""One turn at a time per thread, in the order the messages were sent, across replicas; turns of
different threads run side by side, and one waiting for the model holds no work slot; model requests
are bounded on their own and a 429 is waited out; a wait behind another message of the thread is told
in the thread; a thread left by a crashed replica is taken over."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update

from bot.agent import limit_model_requests
from bot.defaults import DEFAULT_MAX_MODEL_REQUESTS
from bot.slack.listeners.events.turn import kept
from bot.slack.services import services_of_app
from bot.slack.stores import SlackStores, prepare_slack_tables
from bot.slack.tables import SlackThreadTurnRow
from bot.slack.threads import SlackThread
from bot.slack.turn_queue import INTERRUPTED_TEXT, QUEUED_TEXT
from memory import StoredRun, with_source_id
from memory.states import RUN_STARTS_IN, RunStatus
from memory.tables import RunRow, utcnow
from tests.support.scripted_model import failure, reply

from ...harness import running_bot

pytestmark = pytest.mark.both_databases


def last_user_text(request: dict) -> str:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


async def answers_in_thread(slack, thread_ts: str, count: int) -> list[str]:
    stops = await slack.wait_for("chat.stopStream", count=count, timeout=30)
    messages = [slack.message("C1", stop.params["ts"]) for stop in stops]
    return [m.text for m in sorted(messages, key=lambda m: float(m.ts)) if m.thread_ts == thread_ts]


async def test_messages_in_one_thread_are_answered_one_at_a_time_in_order_across_replicas(database_url, slack, model):
    # the first answer is slow: the messages sent meanwhile, to either replica, wait for it
    model.chat.push(
        failure("timeout", seconds=1.5, then=reply("Answer one.")), reply("Answer two."), reply("Answer three.")
    )
    async with (
        running_bot(database_url=database_url, slack=slack) as one,
        running_bot(database_url=database_url, slack=slack) as two,
    ):
        first = await one.mention("first")
        await two.say("second", thread_ts=first["ts"])
        await one.say("third", thread_ts=first["ts"])
        answers = await answers_in_thread(slack, first["ts"], 3)

    assert answers == ["Answer one.", "Answer two.", "Answer three."]
    requests = model.chat.requests
    assert [last_user_text(r) for r in requests] == ["first", "second", "third"]
    # each turn saw the answers before it: the second did not start while the first was running
    assert "Answer one." in [m.get("content") for m in requests[1]["messages"]]
    assert "Answer two." in [m.get("content") for m in requests[2]["messages"]]


async def test_a_thread_is_told_when_a_message_waits_behind_a_long_turn(database_url, slack, model):
    model.chat.push(failure("timeout", seconds=2.0, then=reply("Slow answer.")), reply("Next answer."))
    async with running_bot(database_url=database_url, slack=slack, queued_notice_after=0.3) as bot:
        first = await bot.mention("first")
        await bot.say("second", thread_ts=first["ts"])
        notices = await slack.wait_for("chat.postMessage", lambda c: c.params.get("text") == QUEUED_TEXT)
        assert notices[0].params["thread_ts"] == first["ts"]
        assert slack.calls_of("chat.stopStream") == []  # told while the first turn still runs
        assert await answers_in_thread(slack, first["ts"], 2) == ["Slow answer.", "Next answer."]
        await slack.settle()
    assert len(slack.calls_of("chat.postMessage")) == 1  # the first message waited for nothing: no notice


async def test_different_threads_run_side_by_side(database_url, slack, model):
    model.chat.push(
        failure("timeout", seconds=1.5, then=reply("Answer A.")),
        failure("timeout", seconds=1.5, then=reply("Answer B.")),
    )
    async with running_bot(database_url=database_url, slack=slack) as bot:
        await bot.mention("in thread A")
        await bot.mention("in thread B")
        await bot.slack.wait_until(lambda: len(model.chat.requests) == 2 or None, what="both model requests")
        assert slack.calls_of("chat.stopStream") == []  # the second started before the first was answered
        await slack.wait_for("chat.stopStream", count=2)


def answer_once_all_have_asked(model, count: int, text: str):
    """A model that answers each request only once `count` requests have come: they are all in flight
    at once, or (if the bot holds some back until others are answered) the first ones time out."""

    def respond(body: dict) -> str:
        model.chat.wait_for_requests(count, timeout=20)  # raises (a 500, in model.errors) if they never all come
        return f"{text} {last_user_text(body)}"

    return respond


async def test_a_burst_of_threads_waits_for_the_model_together_and_nobody_is_told_queued(database_url, slack, model):
    """Turns waiting for the model hold no work slot: with 2 slots, 12 threads' requests are all in flight
    at once, so the burst takes about one model delay, not six. None of them waits behind another
    message of its own thread, so none is told it is queued (told at once here, if it were)."""
    threads = 12
    model.chat.push(*[answer_once_all_have_asked(model, threads, "Answer to") for _ in range(threads)])
    async with running_bot(
        database_url=database_url, slack=slack, max_concurrent_turns=2, queued_notice_after=0.0
    ) as bot:
        sent = [await bot.mention(f"question {n} 你好 ¿qué tal? مرحبا") for n in range(threads)]
        stops = await slack.wait_for("chat.stopStream", count=threads, timeout=40)
        await slack.settle()
    assert model.errors == []
    assert model.max_in_flight == threads
    answers = {
        slack.message("C1", stop.params["ts"]).thread_ts: slack.message("C1", stop.params["ts"]).text for stop in stops
    }
    assert answers == {event["ts"]: f"Answer to question {n} 你好 ¿qué tal? مرحبا" for n, event in enumerate(sent)}
    assert [c for c in slack.calls_of("chat.postMessage") if c.params.get("text") == QUEUED_TEXT] == []


async def test_the_model_request_limit_holds_requests_of_other_threads_back(database_url, slack, model):
    def answer(body: dict) -> str:
        return f"Answer to {last_user_text(body)}"

    model.chat.push(failure("timeout", seconds=1.0, then=answer), answer)
    limit_model_requests(1)
    try:
        async with running_bot(database_url=database_url, slack=slack) as bot:
            sent = [await bot.mention("in thread A"), await bot.mention("in thread B")]
            stops = await slack.wait_for("chat.stopStream", count=2)
    finally:
        limit_model_requests(DEFAULT_MAX_MODEL_REQUESTS)
    answers = {slack.message("C1", s.params["ts"]).thread_ts: slack.message("C1", s.params["ts"]).text for s in stops}
    assert answers == {sent[0]["ts"]: "Answer to in thread A", sent[1]["ts"]: "Answer to in thread B"}
    # the second request was sent only once the first (slow) one was answered
    assert model.max_in_flight == 1


async def test_a_rate_limited_model_is_asked_again_after_its_retry_after_and_the_user_sees_no_error(
    database_url, slack, model
):
    model.chat.push(
        failure(429, headers={"Retry-After": "0.3"}),
        failure(429, headers={"retry-after-ms": "200"}),
        reply("Here is the answer, après l'attente."),
    )
    async with running_bot(database_url=database_url, slack=slack) as bot:
        await bot.mention("hello")
        stops = await slack.wait_for("chat.stopStream")
        await slack.settle()
    assert slack.message("C1", stops[0].params["ts"]).text == "Here is the answer, après l'attente."
    assert len(model.chat.requests) == 3
    assert not [c for c in slack.calls_of("chat.postMessage") if ":warning:" in str(c.params.get("text"))]


async def crashed_mid_turn(
    storage, *, reached_the_agent: bool, answered: bool = False, waiting: bool = False
) -> tuple[dict, str]:
    """What a replica that died mid-turn leaves: its turn row, a message whose turn it started (and, if
    `reached_the_agent`, whose text the runtime had stored in the thread, in a run that goes on, or that
    finished with its answer if `answered`), a message queued behind it."""
    await prepare_slack_tables(storage)
    stores = SlackStores.on(storage)
    sender_event = {"type": "app_mention", "user": "U1", "text": "<@U0BOT> first", "ts": "1800000001.000100"}
    first = {**sender_event, "channel": "C1", "team": "T1"}
    second = {"type": "message", "user": "U1", "text": "second", "ts": "1800000002.000100", "channel": "C1"}
    second |= {"channel_type": "channel", "thread_ts": first["ts"], "team": "T1"}
    thread_id = f"slack:T1:C1:{first['ts']}"
    for event_id, event in (("EvCRASH1", first), ("EvCRASH2", second)):
        assert await stores.events.claim(event_id, "T1", thread_id=thread_id, event=kept(event), bot_user_id="U0BOT")
    assert (await stores.take_thread(thread_id, "dead-host:1:x", stale_after=30)).event_id == "EvCRASH1"
    await stores.conversations.start(SlackThread(team_id="T1", channel="C1", thread_ts=first["ts"]), "U1")
    async with storage.session() as session:  # the dead replica's last heartbeat, a minute ago
        await session.execute(update(SlackThreadTurnRow).values(heartbeat_at=utcnow() - timedelta(seconds=60)))
    if reached_the_agent:  # the run it started stored the message (the runtime's recovery goes on with it)
        run = StoredRun(id="run-dead", agent_id="demo", thread_id=thread_id, resource_id="U1", uses_memory=True,
                     status=RUN_STARTS_IN, step=1, max_steps=10)  # fmt: skip
        await storage.runs.create_run(run, with_source_id([{"role": "user", "content": "first"}], first["ts"]))
        if waiting:  # its call waits for a person: the approval is in the thread, the run goes on after it
            async with storage.session() as session:
                await session.execute(update(RunRow).where(RunRow.id == run.id).values(status=RunStatus.SUSPENDED))
        if answered:
            async with storage.session() as session:  # and finished it before the replica died
                await session.execute(update(RunRow).where(RunRow.id == run.id).values(status=RunStatus.COMPLETED))
    return first, thread_id


async def test_a_thread_left_by_a_crashed_replica_is_taken_over(database_url, slack, model, storage):
    """The crashed replica's turn had handed its message to the runtime: that message is not run again
    (the runtime's recovery continues what it started); the message queued behind it is answered."""
    first, _ = await crashed_mid_turn(storage, reached_the_agent=True)
    model.chat.push(reply("Answer two."))
    async with running_bot(database_url=database_url, slack=slack, stale_after=5) as bot:
        turns = services_of_app(bot.app).turns
        turns.sweep_every = 0.01  # nothing newer than that is left to its receiver
        # this sweep takes the thread, or the bot's own sweep at its start did (on a loaded machine the start
        # can come more than its 5 s after the crash): either way once, as the answers below show
        await turns.sweep()
        notice = await slack.wait_for("chat.postMessage", lambda c: c.params.get("text") == INTERRUPTED_TEXT)
        assert notice[0].params["thread_ts"] == first["ts"]
        stops = await slack.wait_for("chat.stopStream")
        assert slack.message("C1", stops[0].params["ts"]).text == "Answer two."
        assert [last_user_text(r) for r in model.chat.requests] == ["second"]  # the interrupted one is not re-run
        await slack.settle()
        assert await turns.sweep() == 0


async def test_a_message_answered_before_its_replica_died_gets_no_send_it_again(database_url, slack, model, storage):
    """Issue 41: the replica died (or stalled past its lease) after the message's answer, before it marked the
    turn done: the answer came, so "please send it again" would be false; the next message is answered."""
    first, _ = await crashed_mid_turn(storage, reached_the_agent=True, answered=True)
    model.chat.push(reply("答え二つ目。"))
    async with running_bot(database_url=database_url, slack=slack, stale_after=5) as bot:
        turns = services_of_app(bot.app).turns
        turns.sweep_every = 0.01
        await turns.sweep()  # or the bot's own sweep at its start took it (see the test above)
        assert await answers_in_thread(slack, first["ts"], 1) == ["答え二つ目。"]
        await slack.settle()
        assert INTERRUPTED_TEXT not in [m.text for m in slack.thread("C1", first["ts"])]
        assert [last_user_text(r) for r in model.chat.requests] == ["second"]  # the answered one is not re-run
        assert await turns.sweep() == 0


async def test_a_message_whose_turn_a_crashed_replica_started_before_the_runtime_took_it_is_answered(
    database_url, slack, model, storage
):
    """Issue 17: the replica died between the ack (the message recorded) and the run: nothing of the
    message reached the runtime, so the replica that takes the thread over answers it, then the next."""
    first, _ = await crashed_mid_turn(storage, reached_the_agent=False)
    model.chat.push(reply("Answer one."), reply("Answer two."))
    async with running_bot(database_url=database_url, slack=slack, stale_after=5) as bot:
        turns = services_of_app(bot.app).turns
        turns.sweep_every = 0.01
        await turns.sweep()  # or the bot's own sweep at its start took it (see the test above)
        assert await answers_in_thread(slack, first["ts"], 2) == ["Answer one.", "Answer two."]
        assert [last_user_text(r) for r in model.chat.requests] == ["first", "second"]
        await slack.settle()
        assert INTERRUPTED_TEXT not in [m.text for m in slack.thread("C1", first["ts"])]
        assert await turns.sweep() == 0


async def test_a_message_whose_run_waits_for_a_person_gets_no_send_it_again(database_url, slack, model, storage):
    """Issue 41's long soak: the replica stopped after its turn's run had asked for an approval (or the call was
    interrupted and waits to be approved again), before it marked the turn done. The run that took the message
    waits for a person in the thread, so "please send it again" would be false; the next message is answered."""
    first, _ = await crashed_mid_turn(storage, reached_the_agent=True, waiting=True)
    model.chat.push(reply("二つ目の答え。"))
    async with running_bot(database_url=database_url, slack=slack, stale_after=5) as bot:
        turns = services_of_app(bot.app).turns
        turns.sweep_every = 0.01
        await turns.sweep()  # or the bot's own sweep at its start took it (see above)
        assert await answers_in_thread(slack, first["ts"], 1) == ["二つ目の答え。"]
        await slack.settle()
        assert INTERRUPTED_TEXT not in [m.text for m in slack.thread("C1", first["ts"])]
        assert [last_user_text(r) for r in model.chat.requests] == ["second"]
