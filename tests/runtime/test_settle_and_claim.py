"""After a call is settled, the run goes on exactly once: a decision made while the run's worker still runs a
sibling call."""

from __future__ import annotations

import asyncio

import pytest

from tests.runtime.helpers import RECORD_INPUT, collect, decide, make_agent, of_type, run_status, text_of
from tests.support.scripted_model import call, reply, tool_calls
from tools import create_tool


@pytest.mark.parametrize("decision", ["approve", "decline"])
async def test_a_decision_while_the_worker_runs_a_sibling_call_leaves_the_run_going_on(model, storage, decision):
    """The run's worker still runs a call that needed no approval when its sibling is decided: the deciding
    process takes the run's lease and parks the run (a call is still at work). The worker then settles the last
    call: it claims the parked run and asks the model, rather than leaving it parked with every call settled."""
    started, release = asyncio.Event(), asyncio.Event()

    async def look_up(input, ctx):
        started.set()
        await release.wait()
        return {"name": "Alice"}

    async def delete(input, ctx):
        return {"deleted": True}

    agent = make_agent(
        [
            create_tool(id="get-record", description="Look up", input_schema=RECORD_INPUT, execute=look_up),
            create_tool(id="delete-record", description="Delete", input_schema=RECORD_INPUT, require_approval=True,
                        execute=delete),
        ],
        storage=storage,
    )  # fmt: skip
    model.chat.push(
        tool_calls(call("get-record", {"id": "1"}, id="c_get"), call("delete-record", {"id": "2"}, id="c_del")),
        reply("Looked up 1, handled 2."),
    )
    stream = await agent.stream("Look up 1, delete 2")
    worker = asyncio.create_task(collect(stream))
    await asyncio.wait_for(started.wait(), 10)  # the step is stored, its approval waits, the lookup runs

    decided = agent.approve_tool_call if decision == "approve" else agent.decline_tool_call
    chunks = await decide(decided(run_id=stream.run_id, tool_call_id="c_del"))
    assert of_type(chunks, "finish")[-1].payload["finish_reason"] == "suspended"  # the lookup is still at work
    release.set()
    answered = await asyncio.wait_for(worker, 10)

    assert text_of(answered) == "Looked up 1, handled 2."
    assert len(model.chat.requests) == 2
    assert await run_status(storage, stream.run_id) == "completed"
