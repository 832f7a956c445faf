"""Whoever settles the last call of a step goes on with the run, exactly once, however the settles and the
worker's park interleave (`memory._run_sql.next_move`, `claim_after_turn`). Two `Storage`s on one database stand
for two replicas, each with connections of its own; each race is run many times, its two sides at once."""

from __future__ import annotations

import asyncio
import copy

import pytest

from memory import Audit, RunStatus, Storage, StoredRun, StoredToolCall, ToolCallState
from memory._run_sql import next_move, take_turn
from memory.states import NextMove
from tests.support.rows import a_call, a_run

ROUNDS = 30


async def a_step_at_work(
    storage: Storage, *, parked: bool, second_waits: bool = False
) -> tuple[StoredRun, StoredToolCall, StoredToolCall]:
    """A run at its first step with two calls whose tools started (`second_waits`: the second waits for approval);
    the run held by worker "A", or `parked` (its worker went away while the calls were carried out elsewhere)."""
    run = a_run()
    run.owner = "A"
    await storage.runs.create_run(run, [{"role": "user", "content": "delete records 1 and 2"}])
    run.step = 1
    second_state = ToolCallState.AWAITING_APPROVAL if second_waits else ToolCallState.PENDING
    first, second = a_call(run, ToolCallState.PENDING), a_call(run, second_state, tool_call_id="call-2")
    reply = {"role": "assistant", "content": None, "tool_calls": [{"id": "call-1"}, {"id": "call-2"}]}
    await storage.runs.record_step(run, reply, [first, second], suspend=parked)
    for call in (first, second)[: 1 if second_waits else 2]:
        assert await storage.runs.start(call) == (True, None)
    return run, first, second


async def settle(storage: Storage, run: StoredRun, call: StoredToolCall, *, owner: str, holds_run: bool) -> NextMove:
    """Store `call`'s result as the runtime does (`store_result_and_next_move`): the run's next move for `owner`."""
    message = {"role": "tool", "tool_call_id": call.tool_call_id, "content": '{"deleted": true}'}
    stored, move = await storage.runs.store_result_and_next_move(
        call, ToolCallState.DONE, run=copy.copy(run), messages=[message], audit=Audit(action="executed"),
        owner=owner, holds_run=holds_run, result={"deleted": True}, is_error=False,
    )  # fmt: skip
    assert stored and move is not None
    return move


async def decline(storage: Storage, run: StoredRun, call: StoredToolCall, *, owner: str) -> NextMove:
    """Decline `call` as a decision does (with the run's lease, in its turn), then the run's next move for `owner`."""
    message = {"role": "tool", "tool_call_id": call.tool_call_id, "content": "not approved"}
    assert await storage.runs.transition(
        call, ToolCallState.DECLINED, allowed_from=[ToolCallState.AWAITING_APPROVAL], messages=[message], run=run,
        audit=Audit(action="declined", actor="U1"), lease=owner, in_turn=True, decision="declined", decided_by="U1",
    )  # fmt: skip
    return await storage.runs.after_work(copy.copy(run), owner, holds_run=False, settled_in_turn=True)


async def exactly_one_goes_on(storage: Storage, run: StoredRun, moves: dict[str, NextMove]) -> None:
    going_on = [owner for owner, move in moves.items() if move == NextMove.CONTINUE]
    assert len(going_on) == 1, moves
    stored = await storage.runs.get_run(run.id)
    assert stored is not None and (stored.status, stored.owner) == (RunStatus.RUNNING, going_on[0]), moves


async def test_two_sibling_results_stored_at_once_by_two_replicas_go_on_once(storage, database_url, clock):
    """The last two calls of a parked run settle at the same moment in two replicas: one of them claims the run
    (a claim that saw neither the other's result nor its claim would leave the run parked, every call settled)."""
    other = Storage(database_url, clock=clock)
    try:
        for _ in range(ROUNDS):
            run, first, second = await a_step_at_work(storage, parked=True)
            a, b = await asyncio.gather(
                settle(storage, run, first, owner="B", holds_run=False),
                settle(other, run, second, owner="C", holds_run=False),
            )
            await exactly_one_goes_on(storage, run, {"B": a, "C": b})
    finally:
        await other.close()


async def test_a_result_stored_by_another_replica_while_the_worker_parks_goes_on_once(storage, database_url, clock):
    """The worker stores its call's result and parks the run while another replica stores its sibling's result
    and claims: either the park sees the other result (the worker goes on) or the claim sees the park."""
    other = Storage(database_url, clock=clock)
    try:
        for _ in range(ROUNDS):
            run, first, second = await a_step_at_work(storage, parked=False)
            a, b = await asyncio.gather(
                settle(storage, run, first, owner="A", holds_run=True),
                settle(other, run, second, owner="B", holds_run=False),
            )
            await exactly_one_goes_on(storage, run, {"A": a, "B": b})
    finally:
        await other.close()


@pytest.mark.parametrize("settled_by", ["result", "decline"])
async def test_what_settles_while_the_worker_parks_waits_for_the_park_then_claims(
    storage, database_url, clock, settled_by
):
    """The worker parks the run (its transaction of `RunStore.after_work`, held open here) while another replica
    settles the last call (stores its result; declines it, with the run's lease): that waits for the park to commit,
    and its claim then finds the run parked. Stored without waiting, its claim would find the run still `running`
    and give up, and the park that did not see it would leave the run parked with every call settled."""
    run, first, second = await a_step_at_work(storage, parked=False, second_waits=settled_by == "decline")
    assert await storage.runs.transition(first, ToolCallState.DONE, result={"deleted": True}, is_error=False)
    other = Storage(database_url, clock=clock)
    try:
        worker = copy.copy(run)
        async with storage.transaction() as connection:
            await take_turn(storage, connection, worker)
            assert await next_move(storage, connection, worker, owner="A", holds_run=True) == NextMove.SUSPENDED
            settled = (
                settle(other, run, second, owner="B", holds_run=False)
                if settled_by == "result"
                else decline(other, run, second, owner="B")
            )
            settling = asyncio.create_task(settled)
            await asyncio.sleep(0.5)
            assert not settling.done(), "the result waits for the park's turn"
        assert await settling == NextMove.CONTINUE
        await exactly_one_goes_on(storage, run, {"B": NextMove.CONTINUE})
    finally:
        await other.close()
