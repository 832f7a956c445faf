"""The promises of `memory.protocols.RunStorage`, checked against the storage the runtime runs on: each
test runs on SQLite and on PostgreSQL (the `storage` fixture), so a backend that breaks one fails here,
not only deep inside an end-to-end test.

What is checked is what the runtime relies on: what is stored reads back as it was written (in any
script), every move of a call or a run is conditional (of racing movers exactly one wins, a move from a
state that may not go there changes nothing), a stale lease is taken over once and a fresh one not at
all, and a thread belongs to its first resource.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from memory import PolicyChange, RunStatus, StoredToolCall, ThreadOwnerError, ToolCallState
from memory.protocols import RunStorage
from memory.tables import utcnow
from tests.support.rows import a_call, a_run


async def a_waiting_call(runs: RunStorage, state: ToolCallState = ToolCallState.AWAITING_APPROVAL) -> StoredToolCall:
    run = a_run()
    await runs.create_run(run, [{"role": "user", "content": "delete record 3"}])
    run.step = 1  # the step the model's reply makes, recorded over the one before
    call = a_call(run, state)
    reply = {"role": "assistant", "content": None, "tool_calls": [{"id": call.tool_call_id, "type": "function"}]}
    await runs.record_step(run, reply, [call])
    return call


async def test_a_run_and_its_messages_read_back_as_written(storage):
    runs: RunStorage = storage.runs
    run = a_run(thread_id="thread-1")
    said = ["Bonjour, où est la gare ?", "東京の天気は？", "서울로 가요", "مرحبا بالعالم", "Ünïcödé ✓"]
    await runs.create_run(run, [{"role": "user", "content": text} for text in said])
    stored = await runs.get_run(run.id)
    assert (stored.id, stored.status, stored.thread_id, stored.resource_id) == (run.id, "running", "thread-1", "user-1")
    assert [m["content"] for m in await runs.run_messages(run.id)] == said
    assert await runs.get_run("no-such-run") is None


async def test_a_recorded_call_reads_back_with_its_arguments(storage):
    call = await a_waiting_call(storage.runs)
    stored = await storage.runs.get_tool_call(call.run_id, call.tool_call_id)
    assert (stored.state, stored.args) == ("awaiting_approval", {"id": 3, "note": "削除してください"})
    assert (await storage.runs.latest_waiting_call(call.run_id)).tool_call_id == call.tool_call_id
    assert await storage.runs.call_ids(call.run_id) == {call.tool_call_id}


async def test_a_run_its_call_and_the_policy_read_back_in_one(storage):
    call = await a_waiting_call(storage.runs)
    run, stored, policy = await storage.runs.run_call_and_policy(call.run_id, call.tool_call_id)
    assert (run.id, run.step, stored.tool_call_id, stored.args) == (call.run_id, 1, "call-1", call.args)
    assert (policy.tool_name, policy.version, policy.approvals_required) == ("delete-record", 0, 1)  # the defaults
    await storage.policies.set("delete-record", PolicyChange(approvals_required=2, approvers=["U1", "U2"]))
    _run, latest, policy = await storage.runs.run_call_and_policy(call.run_id, None)  # the call that waits latest
    assert (latest.tool_call_id, policy.version, policy.approvals_required) == ("call-1", 1, 2)
    assert policy.approvers == ("U1", "U2")
    # a supervisor's call is decided under the policy of the tool it shows
    await storage.runs.transition(stored, ToolCallState.RUNNING, allowed_from=[ToolCallState.AWAITING_APPROVAL])
    await storage.runs.transition(stored, ToolCallState.AWAITING_APPROVAL, shown_tool_name="send-mail")
    _run, shown, policy = await storage.runs.run_call_and_policy(call.run_id, "call-1")
    assert (shown.displayed_tool_name, policy.tool_name, policy.version) == ("send-mail", "send-mail", 0)
    assert await storage.runs.run_call_and_policy(call.run_id, "no-such-call") == (run, None, None)
    await storage.runs.transition(shown, ToolCallState.DECLINED)
    assert (await storage.runs.run_call_and_policy(call.run_id, None))[1:] == (None, None)  # nothing waits
    assert await storage.runs.run_call_and_policy("no-such-run", "call-1") == (None, None, None)


async def test_of_racing_decisions_on_one_call_exactly_one_wins(storage):
    call = await a_waiting_call(storage.runs)
    copies = [await storage.runs.get_tool_call(call.run_id, call.tool_call_id) for _ in range(4)]
    moves = [ToolCallState.APPROVED, ToolCallState.DECLINED, ToolCallState.APPROVED, ToolCallState.DECLINED]
    won = await asyncio.gather(
        *(
            storage.runs.transition(copy, to, decided_by=f"U{i}")
            for i, (copy, to) in enumerate(zip(copies, moves, strict=True))
        )
    )
    assert sorted(won) == [False, False, False, True]
    winner = won.index(True)
    stored = await storage.runs.get_tool_call(call.run_id, call.tool_call_id)
    assert (stored.state, stored.decided_by) == (str(moves[winner]), f"U{winner}")


async def test_a_call_does_not_move_from_a_state_that_may_not_go_there(storage):
    call = await a_waiting_call(storage.runs, ToolCallState.PENDING)
    assert not await storage.runs.transition(call, ToolCallState.DECLINED)  # only a waiting call is declined
    assert (await storage.runs.get_tool_call(call.run_id, call.tool_call_id)).state == "pending"
    assert await storage.runs.transition(call, ToolCallState.RUNNING)
    assert not await storage.runs.transition(call, ToolCallState.RUNNING)  # the started mark is taken once


async def test_a_run_moves_only_where_its_status_may_go(storage):
    runs: RunStorage = storage.runs
    run = a_run()
    await runs.create_run(run)
    assert await runs.move_run(run, RunStatus.COMPLETED)
    again = await runs.get_run(run.id)
    assert not await runs.move_run(again, RunStatus.RUNNING)  # a finished run stays finished
    assert not await runs.move_run(again, RunStatus.SUSPENDED)
    assert (await runs.get_run(run.id)).status == "completed"


async def test_a_stale_lease_is_taken_over_once_and_a_fresh_one_not_at_all(storage):
    runs: RunStorage = storage.runs
    fresh, stale = a_run(), a_run()
    stale.heartbeat_at = utcnow() - timedelta(seconds=60)
    await runs.create_run(fresh)
    await runs.create_run(stale)
    cutoff = utcnow() - timedelta(seconds=30)
    assert await runs.take_over(fresh.id, stale_before=cutoff, owner="other") is None
    taken = await asyncio.gather(*(runs.take_over(stale.id, stale_before=cutoff, owner=f"r{i}") for i in range(4)))
    winners = [row for row in taken if row is not None]
    assert len(winners) == 1
    assert (await runs.get_run(stale.id)).owner == winners[0].owner


async def test_a_heartbeat_keeps_the_lease(storage):
    runs: RunStorage = storage.runs
    run = a_run()
    run.heartbeat_at = utcnow() - timedelta(seconds=60)  # a lease gone stale
    await runs.create_run(run)
    await runs.heartbeat(run.id, "me")
    assert await runs.take_over(run.id, stale_before=utcnow() - timedelta(seconds=30), owner="other") is None


async def test_a_thread_belongs_to_its_first_resource(storage):
    runs: RunStorage = storage.runs
    assert not await runs.open_thread("thread-1", "user-1")  # not there yet: made with its first run
    await runs.create_run(a_run(thread_id="thread-1", resource_id="user-1"), new_thread=True)
    assert await runs.open_thread("thread-1", "user-1")
    with pytest.raises(ThreadOwnerError):
        await runs.open_thread("thread-1", "user-2")
    with pytest.raises(ThreadOwnerError):  # another replica's first run in the same new thread lost the race
        await runs.create_run(a_run(thread_id="thread-1", resource_id="user-2"), new_thread=True)
    await runs.create_run(
        a_run(thread_id="thread-1", resource_id="user-1"), new_thread=True
    )  # the owner's own race: fine


async def test_a_thread_is_read_with_its_waiting_calls_their_runs_and_policies(storage):
    runs: RunStorage = storage.runs
    assert await runs.open_thread_with_waits("thread-ü", "user-1") == (False, [])  # made with its first run
    run = a_run(thread_id="thread-ü", resource_id="user-1")
    await runs.create_run(run, new_thread=True)
    assert await runs.open_thread_with_waits("thread-ü", "user-1") == (True, [])
    run.step = 1
    first, second = (
        a_call(run, ToolCallState.AWAITING_APPROVAL),
        a_call(run, ToolCallState.AWAITING_APPROVAL, tool_call_id="c2"),
    )
    second.shown_tool_name = "send-mail"
    reply = {"role": "assistant", "content": None, "tool_calls": [{"id": "call-1"}, {"id": "c2"}]}
    await runs.record_step(run, reply, [first, second])
    await storage.policies.set("send-mail", PolicyChange(approvers=["U1"]))
    found, waits = await runs.open_thread_with_waits("thread-ü", "user-1")
    assert found and [(r.id, c.tool_call_id, p.tool_name, p.version) for r, c, p in waits] == [
        (run.id, "call-1", "delete-record", 0),  # the defaults: no policy is stored
        (run.id, "c2", "send-mail", 1),
    ]
    assert await runs.transition(first, ToolCallState.DECLINED)
    assert [c.tool_call_id for _r, c, _p in (await runs.open_thread_with_waits("thread-ü", None))[1]] == ["c2"]
    with pytest.raises(ThreadOwnerError):
        await runs.open_thread_with_waits("thread-ü", "user-2")


async def test_a_thread_started_without_an_owner_takes_its_first_one(storage):
    """Created with no resource (one INSERT), the thread belongs to the first resource that uses it, and
    then to that one only; the others at once are refused as for any owned thread."""
    runs: RunStorage = storage.runs
    await runs.create_run(a_run(thread_id="スレッド-ü", resource_id=None), new_thread=True)
    assert await runs.open_thread("スレッド-ü", None)
    await runs.create_run(a_run(thread_id="스레드-user", resource_id="utilisateur-é"), new_thread=True)
    assert await runs.open_thread("スレッド-ü", "utilisateur-é")
    assert await runs.open_thread("スレッド-ü", "utilisateur-é")
    with pytest.raises(ThreadOwnerError, match="utilisateur-é"):
        await runs.open_thread("スレッド-ü", "用户-2")
