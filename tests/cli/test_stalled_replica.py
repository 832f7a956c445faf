"""Two `python -m bot serve` replicas on one database; one is stopped with SIGSTOP in the middle of a turn for
longer than its leases (a paused VM, a long pause of the process), the other takes the thread and the run over
and goes on with it, then the stalled one is woken with SIGCONT and its model reply comes in while the run is
still at work elsewhere. The run's step is recorded once and the request it asks for is carried out once:
the woken replica asks the model nothing more, and says in the thread that the answer came from elsewhere.

PostgreSQL only: SQLite has one writer, and a replica stopped while it holds the write lock (a heartbeat's
commit) stops every replica until it wakes. On SQLite the same fences are tested in one process
(`tests/runtime/test_recovery.py`, `tests/slack/test_store.py`)."""

from __future__ import annotations

import asyncio
import signal
import threading

import pytest

from bot.agent._run import TAKEN_OVER
from tests.support.processes import SECRET, bot_env, free_port, start_bot, stop_bot
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import SignedSender
from tests.support.waiting import until

ANSWER = "Records: 1, 2, 3 — 记录 1、2、3。"


def texts(slack, thread_ts: str) -> list[str]:
    return [m.text for m in slack.thread("C1", thread_ts)]


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_replica_woken_after_another_took_its_turn_over_asks_and_runs_nothing_more(
    database_url, slack, model, tmp_path
):
    held, answer_held = threading.Event(), threading.Event()

    def stalled_reply(body):  # what the stopped replica asked for, answered while it cannot read it
        held.wait(60)
        return tool_calls(call("list-records", {}, id="call_stalled"))

    def answer(body):  # the other replica's last model call, held until the woken one is done
        answer_held.wait(60)
        return reply(ANSWER)

    model.chat.push(stalled_reply, tool_calls(call("list-records", {}, id="call_taken_over")), answer)
    env = bot_env(database_url, slack, BOT_RECOVERY_INTERVAL="0.5", BOT_STALE_AFTER="2")
    port = free_port()
    sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET, slack=slack)
    stalled = await start_bot(port, env, tmp_path / "stalled.log")
    other = None
    try:
        event = sender.mention("list the records, bitte")
        assert (await sender.event(event))[0] == 200
        await asyncio.to_thread(model.chat.wait_for_requests, 1, 30)
        stalled.send_signal(signal.SIGSTOP)
        other = await start_bot(free_port(), env, tmp_path / "other.log")
        # the other replica took the run over, ran the step's call and asks for the answer: the run goes on
        await asyncio.to_thread(model.chat.wait_for_requests, 3, 60)

        held.set()
        stalled.send_signal(signal.SIGCONT)
        await until(lambda: any(TAKEN_OVER in t for t in texts(slack, event["ts"])), 30, what="the woken one's note")
        answer_held.set()
        await until(lambda: ANSWER in texts(slack, event["ts"]), 30, what="the other replica's answer")
        await slack.settle()

        assert texts(slack, event["ts"]).count(ANSWER) == 1
        assert len(model.chat.requests) == 3  # the stalled request, then the other replica's two
        tool_messages = [m for m in model.chat.requests[-1]["messages"] if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in tool_messages] == ["call_taken_over"]  # its step, and only its
    finally:
        held.set()
        answer_held.set()
        if stalled.returncode is None:
            stalled.send_signal(signal.SIGCONT)
        await stop_bot(stalled)
        if other is not None:
            await stop_bot(other)


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_replica_woken_with_a_final_answer_for_a_run_answered_elsewhere_shows_only_the_note(
    database_url, slack, model, tmp_path
):
    """The same stall at the run's last step: the woken replica's model reply is a final answer, for a run
    the other replica answered meanwhile. Its text is taken back before the note (the long soak, seed 44001:
    it stayed, a second answer beside the real one, because the step's end was streamed before the fence)."""
    held = threading.Event()
    stale = "Stale answer — 过时的回答。"

    def stalled_reply(body):
        held.wait(60)
        return reply(stale)

    model.chat.push(stalled_reply, reply(ANSWER))
    env = bot_env(database_url, slack, BOT_RECOVERY_INTERVAL="0.5", BOT_STALE_AFTER="2")
    port = free_port()
    sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET, slack=slack)
    stalled = await start_bot(port, env, tmp_path / "stalled.log")
    other = None
    try:
        event = sender.mention("how many records, bitte")
        assert (await sender.event(event))[0] == 200
        await asyncio.to_thread(model.chat.wait_for_requests, 1, 30)
        stalled.send_signal(signal.SIGSTOP)
        other = await start_bot(free_port(), env, tmp_path / "other.log")
        await until(lambda: ANSWER in texts(slack, event["ts"]), 60, what="the other replica's answer")

        held.set()
        stalled.send_signal(signal.SIGCONT)
        await until(lambda: any(TAKEN_OVER in t for t in texts(slack, event["ts"])), 30, what="the woken one's note")
        await slack.settle()
        assert texts(slack, event["ts"]).count(ANSWER) == 1
        assert not any(stale in t for t in texts(slack, event["ts"])), texts(slack, event["ts"])
    finally:
        held.set()
        if stalled.returncode is None:
            stalled.send_signal(signal.SIGCONT)
        await stop_bot(stalled)
        if other is not None:
            await stop_bot(other)
