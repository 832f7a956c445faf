"""Status writes come from the lifecycle's tables (`memory.states`): a run is stored in `RUN_STARTS_IN`, a
proposed call in `CALL_STARTS_IN`, and a step that parks its run does so only from a status the table
lets it leave; a write the tables refuse stores nothing. On SQLite and PostgreSQL (the `storage` fixture)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memory import RunTakenOverError
from memory.states import CALL_STARTS_IN, RunStatus, ToolCallState
from tests.support.rows import a_call, a_run


async def test_a_run_is_stored_only_in_its_initial_status(storage):
    parked = a_run(status=str(RunStatus.SUSPENDED))
    with pytest.raises(ValueError, match="running"):
        await storage.runs.create_run(parked, [{"role": "user", "content": "héllo"}])
    assert await storage.runs.get_run(parked.id) is None


async def test_a_step_parks_only_a_running_run_and_stores_nothing_otherwise(storage):
    run = a_run()
    await storage.runs.create_run(run, [{"role": "user", "content": "删除记录 42"}])
    assert await storage.runs.move_run(run, RunStatus.COMPLETED, finish_reason="stop")
    run.step = 1
    reply = {"role": "assistant", "content": None, "tool_calls": []}

    with pytest.raises(RunTakenOverError, match="not recorded"):
        await storage.runs.record_step(run, reply, [a_call(run, ToolCallState.AWAITING_APPROVAL)], suspend=True)

    stored = await storage.runs.get_run(run.id)
    assert (stored.status, stored.step) == ("completed", 0)
    assert await storage.runs.run_calls(run.id) == []
    assert await storage.runs.run_messages(run.id) == [{"role": "user", "content": "删除记录 42"}]


async def test_a_call_is_stored_only_in_a_state_a_proposed_call_starts_in(storage):
    run = a_run()
    await storage.runs.create_run(run)
    run.step = 1
    reply = {"role": "assistant", "content": None, "tool_calls": []}
    assert ToolCallState.RUNNING not in CALL_STARTS_IN

    with pytest.raises(ValueError, match="c_running"):
        await storage.runs.record_step(run, reply, [a_call(run, ToolCallState.RUNNING, tool_call_id="c_running")])
    assert await storage.runs.run_calls(run.id) == []

    await storage.runs.record_step(run, reply, [a_call(run, ToolCallState.AWAITING_APPROVAL)], suspend=True)
    assert (await storage.runs.get_run(run.id)).status == "suspended"
    assert [c.state for c in await storage.runs.run_calls(run.id)] == ["awaiting_approval"]


async def test_a_step_is_recorded_once_over_the_step_before_it(storage):
    """Two workers that asked the model at the same step (one stalled past the lease while the other took the
    run over): the second reply to that step stores nothing, neither its message nor its calls, and the
    final answer of a step that is no longer the run's is not stored either."""
    run = a_run()
    await storage.runs.create_run(run, [{"role": "user", "content": "退款 Ø-7"}])
    taker, stalled = replace(run, step=1), replace(run, step=1)
    reply = {"role": "assistant", "content": None, "tool_calls": [{"id": "call_taker", "type": "function"}]}
    await storage.runs.record_step(taker, reply, [a_call(taker, ToolCallState.PENDING, tool_call_id="call_taker")])

    late = {"role": "assistant", "content": None, "tool_calls": [{"id": "call_stalled", "type": "function"}]}
    with pytest.raises(RunTakenOverError, match="another process"):
        await storage.runs.record_step(
            stalled, late, [a_call(stalled, ToolCallState.PENDING, tool_call_id="call_stalled")]
        )
    answer = [{"role": "assistant", "content": "Remboursé."}]
    assert not await storage.runs.move_run(
        stalled, RunStatus.COMPLETED, only_from=[RunStatus.RUNNING], from_step=0, messages=answer, step=1
    )

    assert [c.tool_call_id for c in await storage.runs.run_calls(run.id)] == ["call_taker"]
    assert [m.get("tool_calls", [{}])[0].get("id") for m in await storage.runs.run_messages(run.id)] == [
        None,
        "call_taker",
    ]
    assert (await storage.runs.get_run(run.id)).status == "running"
