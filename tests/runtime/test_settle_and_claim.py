"""After a call is settled, the run goes on exactly once: a decision made while the run's worker still runs a
sibling call; what a settle and its claim cost on PostgreSQL (`memory._run_sql.claim_after_turn`); a process
that stops between the two."""

from __future__ import annotations

import asyncio

import pytest

from memory import ToolCallState
from tests.runtime.helpers import RECORD_INPUT, collect, decide, make_agent, of_type, record_tool, run_status, text_of
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.statements import statements_of, transactions_of
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


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("decision", ["approve", "decline"])
async def test_a_settle_and_its_claim_need_no_transaction_on_postgres(model, storage, decision):
    """What settles the call (a decline; the tool's result after an approval) holds the run's row lock when it
    commits, and the claim of the run needs no transaction and no lock of its own. The tool's result claims the
    parked run in its own statement (its step has no other call); a decline's claim is the next statement."""
    agent = make_agent([record_tool("delete-record", require_approval=True)], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "2"}, id="c_del")), reply("Handled 2."))
    output = await agent.generate("Delete 2")
    assert output.finish_reason == "suspended"

    decided = agent.approve_tool_call if decision == "approve" else agent.decline_tool_call
    with statements_of(storage) as seen, transactions_of(storage) as begun:
        chunks = await decide(decided(run_id=output.run_id, tool_call_id="c_del"))

    assert text_of(chunks) == "Handled 2."
    assert begun == []
    assert not [s for s in seen if "FOR NO KEY UPDATE" in s and not s.startswith("WITH turn AS")]
    claims = [n for n, s in enumerate(seen) if "UPDATE runs SET status=" in s and "'suspended'" in s]
    assert len(claims) == 1, seen
    if decision == "decline":
        assert seen[claims[0]].startswith("UPDATE runs SET status=")
        assert seen[claims[0] - 1].startswith("WITH moved AS (UPDATE tool_calls")
    else:  # the result and the claim: one statement
        assert seen[claims[0]].startswith("WITH turn AS (")
        assert "UPDATE tool_calls SET state=" in seen[claims[0]]
    settled = await storage.runs.get_tool_call(output.run_id, "c_del")
    assert settled is not None and settled.state == ("declined" if decision == "decline" else "done")


@pytest.mark.parametrize("settled_by", ["decline", "result"])
async def test_a_crash_between_a_settle_and_its_claim_leaves_the_run_to_the_recovery(model, storage, clock, settled_by):
    """The last call of a step is settled (declined; its tool's result stored) and its process stops before it
    claims the run: the run is left `suspended` with no call waiting, under the stopped process's lease. The
    recovery takes it over once that lease is stale and goes on with it (`RunQueries.stale_runs`)."""
    agent = make_agent([record_tool("delete-record", require_approval=True)], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "2"}, id="c_del")), reply("Handled 2."))
    output = await agent.generate("Delete 2")
    run = await storage.runs.get_run(output.run_id)
    waiting = await storage.runs.get_tool_call(output.run_id, "c_del")
    assert run is not None and waiting is not None and output.finish_reason == "suspended"

    # what the stopped process stored, as its decision and its result store them; and no claim
    runs = storage.runs
    message = {"role": "tool", "tool_call_id": "c_del", "content": "not approved" if settled_by == "decline" else "ok"}
    if settled_by == "decline":
        assert await runs.transition(
            waiting, ToolCallState.DECLINED, allowed_from=[ToolCallState.AWAITING_APPROVAL], messages=[message],
            run=run, lease="stopped", in_turn=True, decision="declined", decided_by="U1",
        )  # fmt: skip
    else:
        assert await runs.transition(waiting, ToolCallState.APPROVED, lease="stopped", decision="approved")
        assert await runs.start(waiting) == (True, None)
        assert await runs.transition(
            waiting, ToolCallState.DONE, messages=[message], run=run, in_turn=True, result={"ok": True}
        )
    assert (await agent.list_suspended_runs()).total == 0  # nobody is asked: it waits for no one
    assert await run_status(storage, output.run_id) == "suspended"

    fresh = make_agent([record_tool("delete-record", require_approval=True)], storage=storage)  # a restart
    streams = []
    fresh.hooks["on_background_stream"] = streams.append
    assert await fresh.recover_stale_runs(stale_after=5) == []  # the stopped process's lease is still fresh
    clock.advance(6)
    assert await fresh.recover_stale_runs(stale_after=5) == [output.run_id]
    [recovered] = [await stream.result() for stream in streams]
    assert recovered.text == "Handled 2."
    assert await run_status(storage, output.run_id) == "completed"


async def test_a_result_claims_the_run_only_once_every_call_of_its_step_is_settled(model, storage):
    """Two calls of one step wait for approval. The first approved runs, and its result finds the other still
    waiting: the run stays parked and the model is not asked. The second's result then claims the run."""
    agent = make_agent([record_tool("delete-record", require_approval=True)], storage=storage)
    model.chat.push(
        tool_calls(call("delete-record", {"id": "2"}, id="c_two"), call("delete-record", {"id": "3"}, id="c_three")),
        reply("Handled 2 and 3."),
    )
    output = await agent.generate("Delete 2 and 3")
    assert output.finish_reason == "suspended"
    asked = len(model.chat.requests)

    first = await decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c_two"))
    assert text_of(first) == ""
    assert len(model.chat.requests) == asked
    assert await run_status(storage, output.run_id) == "suspended"
    done = await storage.runs.get_tool_call(output.run_id, "c_two")
    assert done is not None and done.state == ToolCallState.DONE

    second = await decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c_three"))
    assert text_of(second) == "Handled 2 and 3."
    assert await run_status(storage, output.run_id) == "completed"
