"""Harder cases around the same contract: races between different decisions, tampering with the
tool name, canonical arguments, memory with pending approvals, live policy vs stored record,
odd model output, many concurrent approvals, and streams read in unusual ways."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa
from pydantic import BaseModel

from bot.agent import AgentError, ToolCallNotSuspendedError
from memory import Memory
from tests.runtime.helpers import (
    FINISHED,
    assert_every_tool_call_answered,
    collect,
    decide,
    finish_reason,
    make_agent,
    of_type,
    one,
    record_tool,
    run_status,
    says_not_approved,
    tool_messages,
)
from tests.support.scripted_model import call, reply, tool_calls
from tools import create_tool

MEMORY_OPTIONS = dict(auto_resume_suspended_tools=False)


async def test_approve_and_decline_racing_have_one_outcome(model, storage):
    entered = asyncio.Event()
    release = asyncio.Event()
    runs = []

    async def slow(input, ctx):
        runs.append(input)
        entered.set()
        await release.wait()
        return {"ok": True}

    tool = create_tool(id="slow-delete", description="Delete slowly", require_approval=True, execute=slow)
    agent = make_agent([tool], storage=storage)
    model.chat.push(tool_calls(call("slow-delete", {}, id="c1")), reply("done"))
    output = await agent.generate("Go")

    async def attempt(coro):
        try:
            return await decide(coro)
        except ToolCallNotSuspendedError as exc:
            return exc

    approve = asyncio.create_task(attempt(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c1")))
    decline = asyncio.create_task(attempt(agent.decline_tool_call(run_id=output.run_id, tool_call_id="c1")))
    done, _ = await asyncio.wait({approve, decline}, timeout=2, return_when=asyncio.FIRST_COMPLETED)
    release.set()
    outcomes = await asyncio.gather(approve, decline)

    assert sum(isinstance(o, ToolCallNotSuspendedError) for o in outcomes) == 1, outcomes
    approved = not isinstance(outcomes[0], ToolCallNotSuspendedError)
    assert len(runs) == (1 if approved else 0)


_tool_calls_table = sa.table("tool_calls", sa.column("run_id"), sa.column("tool_call_id"), sa.column("tool_name"))


async def test_tool_name_changed_after_suspension_is_refused(model, storage):
    delete = record_tool("delete-record", require_approval=True)
    wipe = record_tool("wipe-database", require_approval=False)
    agent = make_agent([delete, wipe], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")), reply("refused"))
    output = await agent.generate("Delete 1")

    async with storage.engine.begin() as connection:
        await connection.execute(
            sa.update(_tool_calls_table)
            .where(_tool_calls_table.c.run_id == output.run_id, _tool_calls_table.c.tool_call_id == "c1")
            .values(tool_name="wipe-database")
        )
    chunks = await decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c1"))

    assert len(delete.calls) == 0 and len(wipe.calls) == 0
    assert one(chunks, "tool-result").payload["is_error"] is True


async def test_canonical_args_survive_storage_round_trip(model, storage):
    """Key order, nesting, unicode and numbers must not make an honest approval look tampered."""
    seen = []

    async def execute(input, ctx):
        seen.append(input)
        return {"ok": True}

    tool = create_tool(id="store", description="Store", require_approval=True, execute=execute)
    agent = make_agent([tool], storage=storage)
    args = {
        "zeta": 1,
        "alpha": {"y": [3, 2.5, None, True], "b": 'é✓ "quoted" \u2028'},
        "big": 12345678901234567890,
        "f": 0.1,
    }
    model.chat.push(tool_calls(call("store", args, id="c1")), reply("stored"))

    output = await agent.generate("Store it")
    chunks = await decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c1"))

    assert one(chunks, "tool-result").payload["is_error"] is False, one(chunks, "tool-result").payload
    assert seen == [args]


async def test_new_message_in_thread_with_pending_approval_sends_a_valid_history(model, storage):
    delete = record_tool()
    agent = make_agent([delete], memory=Memory(storage))
    options = dict(thread_id="t1", resource_id="u1", **MEMORY_OPTIONS)
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")), reply("Sure, it's sunny."))

    first = await agent.generate("Delete 1", **options)
    assert first.finish_reason == "suspended"
    second = await agent.generate("Meanwhile, how is the weather?", **options)

    assert second.finish_reason == "stop"
    assert_every_tool_call_answered(model.chat.requests[-1])
    assert await run_status(storage, first.run_id) == "suspended", "the approval still waits"


async def test_history_after_approval_and_decline_is_valid(model, storage):
    delete = record_tool()
    agent = make_agent([delete], memory=Memory(storage))
    options = dict(thread_id="t1", resource_id="u1", **MEMORY_OPTIONS)
    model.chat.push(
        tool_calls(call("delete-record", {"id": "1"}, id="c1")),
        reply("Deleted 1."),
        tool_calls(call("delete-record", {"id": "2"}, id="c2")),
        reply("Kept 2."),
        reply("You asked me to delete 1 and 2."),
    )

    one_ = await agent.generate("Delete 1", **options)
    await agent.approve_tool_call_generate(run_id=one_.run_id, tool_call_id="c1")
    two = await agent.generate("Delete 2", **options)
    await agent.decline_tool_call_generate(run_id=two.run_id, tool_call_id="c2", reason="keep 2")
    await agent.generate("What did I ask?", **options)

    last = model.chat.requests[-1]
    assert_every_tool_call_answered(last)
    told = tool_messages(last)
    assert set(told) >= {"c1", "c2"}
    assert says_not_approved(told["c2"]) and "keep 2" in told["c2"]
    users = [m["content"] for m in last["messages"] if m["role"] == "user"]
    assert users == ["Delete 1", "Delete 2", "What did I ask?"]


async def test_request_context_reaches_tool_after_approval(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")), reply("ok"))

    output = await agent.generate("Delete 1", request_context={"user": "U1", "team": "T1"})
    other = make_agent([delete], storage=storage)  # as another process would
    await other.approve_tool_call_generate(run_id=output.run_id, tool_call_id="c1")

    assert delete.calls.contexts[0].request_context == {"user": "U1", "team": "T1"}
    assert delete.calls.contexts[0].run_id == output.run_id


async def test_stored_record_not_live_policy_decides(model, storage):
    """After a restart the tool is no longer gated in code; the waiting approval is still honoured."""
    gated = record_tool("delete-record", require_approval=True)
    agent = make_agent([gated], storage=storage)
    model.chat.push(
        tool_calls(call("delete-record", {"id": "1"}, id="c1")),
        tool_calls(call("delete-record", {"id": "2"}, id="c2")),
        reply("declined"),
        reply("approved"),
    )
    declined_run = await agent.generate("Delete 1")
    approved_run = await agent.generate("Delete 2")

    relaxed = record_tool("delete-record", require_approval=False)
    restarted = make_agent([relaxed], storage=storage)
    listed = await restarted.list_suspended_runs()
    assert listed.total == 2
    assert all(c.requires_approval for r in listed.runs for c in r.tool_calls)

    await restarted.decline_tool_call_generate(run_id=declined_run.run_id, tool_call_id="c1")
    await restarted.approve_tool_call_generate(run_id=approved_run.run_id, tool_call_id="c2")

    assert [i["id"] for i in relaxed.calls.inputs] == ["2"]
    assert len(gated.calls) == 0


async def test_output_has_usage_tool_calls_and_results(model, storage):
    lookup = record_tool("get-record", require_approval=False, result={"name": "Alice"})
    agent = make_agent([lookup], storage=storage)
    model.chat.push(
        tool_calls(call("get-record", {"id": "1"}, id="c1"), usage={"prompt_tokens": 10, "completion_tokens": 3}),
        reply("Alice.", usage={"prompt_tokens": 20, "completion_tokens": 2}),
    )

    output = await agent.generate("Who is 1?")

    # the usage of both model calls of the run, added up
    assert output.usage["prompt_tokens"] == 30
    assert output.usage["completion_tokens"] == 5
    assert len(output.tool_calls) == 1
    assert len(output.tool_results) == 1


async def test_tool_returning_pydantic_model_is_serialized(model, storage):
    class Record(BaseModel):
        id: str
        name: str

    async def execute(input, ctx):
        return Record(id=input["id"], name="Alice")

    tool = create_tool(id="get-record", description="Read", execute=execute)
    agent = make_agent([tool], storage=storage)
    model.chat.push(tool_calls(call("get-record", {"id": "1"}, id="c1")), reply("Alice."))

    output = await agent.generate("Who is 1?")

    assert output.finish_reason == "stop"
    assert "Alice" in tool_messages(model.chat.requests[-1])["c1"]


async def test_model_reusing_tool_call_ids_across_steps(model, storage):
    """Some OpenAI-compatible servers number calls per message ("call_0" every step)."""
    lookup = record_tool("get-record", require_approval=False)
    delete = record_tool("delete-record", require_approval=True)
    agent = make_agent([lookup, delete], storage=storage)
    model.chat.push(
        tool_calls(call("get-record", {"id": "1"}, id="call_0")),
        tool_calls(call("delete-record", {"id": "1"}, id="call_0")),
        reply("done"),
    )

    output = await agent.generate("Look up 1 then delete it")
    assert output.finish_reason == "suspended", output
    assert output.suspend_payload.tool_name == "delete-record"
    waiting_id = output.suspend_payload.tool_call_id
    assert waiting_id != "call_0"  # the reused id was made unique within the run
    final = await agent.approve_tool_call_generate(run_id=output.run_id, tool_call_id=waiting_id)

    assert final.finish_reason == "stop"
    assert len(lookup.calls) == 1 and len(delete.calls) == 1


async def test_many_runs_approved_concurrently(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    run_ids = []
    for n in range(6):
        model.chat.push(tool_calls(call("delete-record", {"id": str(n)}, id=f"c{n}")))
        run_ids.append((await agent.generate(f"Delete {n}")).run_id)
    model.chat.push(*[reply("done") for _ in range(6)])

    results = await asyncio.gather(
        *[agent.approve_tool_call_generate(run_id=run_id) for run_id in run_ids], return_exceptions=True
    )

    assert [getattr(r, "finish_reason", r) for r in results] == ["stop"] * 6
    assert sorted(i["id"] for i in delete.calls.inputs) == [str(n) for n in range(6)]
    assert (await agent.list_suspended_runs()).total == 0


async def test_storage_only_agent_keeps_thread_and_resource(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")), reply("done"))

    output = await agent.generate("Delete 1", thread_id="t1", resource_id="u1")
    [run] = (await agent.list_suspended_runs(thread_id="t1", resource_id="u1")).runs
    assert run.run_id == output.run_id
    chunks = await decide(agent.send_tool_approval(thread_id="t1", resource_id="u1", approved=True))
    assert finish_reason(chunks) == "stop"
    assert len(delete.calls) == 1


async def test_other_agent_cannot_decide_this_agents_call(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage, id="agent-a")
    intruder = make_agent([delete], storage=storage, id="agent-b")
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")))
    output = await agent.generate("Delete 1")

    with pytest.raises(AgentError):
        await decide(intruder.approve_tool_call(run_id=output.run_id, tool_call_id="c1"))
    assert len(delete.calls) == 0
    assert await run_status(storage, output.run_id) == "suspended"


async def test_result_alone_without_reading_the_stream(model, storage):
    agent = make_agent([record_tool()], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")), reply("Deleted."))

    stream = await agent.stream("Delete 1")
    output = await asyncio.wait_for(stream.result(), 30)
    assert output.finish_reason == "suspended"

    approved = await agent.approve_tool_call(run_id=stream.run_id)
    text = "".join([t async for t in approved.text_stream])
    assert text == "Deleted."
    assert (await approved.result()).text == "Deleted."


async def test_breaking_out_of_the_stream_after_approval_chunk(model, storage):
    agent = make_agent([record_tool()], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")), reply("Deleted."))

    stream = await agent.stream("Delete 1")
    async for chunk in stream.full_stream:
        if chunk.type == "tool-call-approval":
            break

    output = await agent.approve_tool_call_generate(run_id=stream.run_id, tool_call_id="c1")
    assert output.text == "Deleted."
    assert await run_status(storage, stream.run_id) == "completed"


async def test_listing_shrinks_as_calls_of_a_step_are_decided(model, storage):
    agent = make_agent([record_tool()], storage=storage)
    model.chat.push(
        tool_calls(call("delete-record", {"id": "1"}, id="c1"), call("delete-record", {"id": "2"}, id="c2")),
        reply("done"),
    )
    output = await agent.generate("Delete 1 and 2")

    [run] = (await agent.list_suspended_runs()).runs
    assert sorted(c.tool_call_id for c in run.tool_calls) == ["c1", "c2"]
    await decide(agent.decline_tool_call(run_id=output.run_id, tool_call_id="c1"))
    [run] = (await agent.list_suspended_runs()).runs
    assert [c.tool_call_id for c in run.tool_calls] == ["c2"]
    await decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c2"))
    assert (await agent.list_suspended_runs()).total == 0
    assert await run_status(storage, output.run_id) in FINISHED


async def test_text_before_tool_call_is_streamed(model, storage):
    lookup = record_tool("get-record", require_approval=False)
    agent = make_agent([lookup], storage=storage)
    model.chat.push(tool_calls(call("get-record", {"id": "1"}), text="Let me check. "), reply("It is Alice."))

    stream = await agent.stream("Who is 1?")
    chunks = await collect(stream)

    assert "".join(c.payload["text"] for c in of_type(chunks, "text-delta")) == "Let me check. It is Alice."
    assert finish_reason(chunks) == "stop"
    assert_every_tool_call_answered(model.chat.requests[-1])


async def test_model_timeout_with_own_client_fails_the_run(model, storage):
    import openai

    from tests.support.scripted_model import failure

    client = openai.AsyncOpenAI(base_url=model.base_url, api_key="test", timeout=0.5, max_retries=0)
    agent = make_agent([record_tool()], storage=storage, model_client=client)
    model.chat.push(failure("timeout", seconds=3))

    output = await agent.generate("Hi")

    # the client's own timeout fails the step like any model failure: the run ends failed, nothing waits
    assert output.finish_reason == "error"
    assert await run_status(storage, output.run_id) == "failed"
    assert (await agent.list_suspended_runs()).total == 0
    await client.close()


async def test_memory_is_scoped_to_thread(model, storage):
    agent = make_agent([record_tool()], memory=Memory(storage))
    model.chat.push(reply("noted one"), reply("noted two"), reply("answer"))

    await agent.generate("secret of thread one", thread_id="t1", resource_id="u1", **MEMORY_OPTIONS)
    await agent.generate("secret of thread two", thread_id="t2", resource_id="u1", **MEMORY_OPTIONS)
    await agent.generate("what did I say?", thread_id="t1", resource_id="u1", **MEMORY_OPTIONS)

    sent = str(model.chat.requests[-1]["messages"])
    assert "secret of thread one" in sent and "noted one" in sent
    assert "secret of thread two" not in sent


async def test_an_approval_whose_stream_is_never_read_is_not_stranded(model, storage):
    """A front end that awaits `approve_tool_call` but never reads the stream (or a process that dies
    right after deciding) must not leave the call decided-but-never-run: the tool runs anyway, once,
    and the run finishes; the call is not decidable again."""
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")), reply("Deleted."))
    output = await agent.generate("Delete 1")

    stream = await agent.approve_tool_call(run_id=output.run_id, tool_call_id="c1")
    del stream
    deadline = asyncio.get_running_loop().time() + 30
    while await run_status(storage, output.run_id) != "completed":  # nobody reads the stream
        assert asyncio.get_running_loop().time() < deadline, "the approved call never ran"
        await asyncio.sleep(0.05)

    assert len(delete.calls) == 1
    assert (await agent.get_tool_call(output.run_id, "c1")).state == "done"
    restarted = make_agent([delete], storage=storage)
    assert (await restarted.list_suspended_runs()).total == 0
    with pytest.raises(ToolCallNotSuspendedError):
        await restarted.approve_tool_call_generate(run_id=output.run_id, tool_call_id="c1")
    assert len(delete.calls) == 1
