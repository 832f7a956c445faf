"""The contract's guarantees inside one process: decided once, args bound to the approval, stored
state finished on every terminal path, storage cost independent of thread length, step limits,
several calls in one step, and every tool call answered in the next model request."""

from __future__ import annotations

import asyncio

import pytest

from bot.agent import ToolCallNotSuspendedError
from memory import Memory
from tests.runtime.helpers import (
    FINISHED,
    RECORD_INPUT,
    assert_every_tool_call_answered,
    collect,
    database_bytes,
    decide,
    finish_reason,
    make_agent,
    of_type,
    one,
    record_tool,
    run_status,
    says_not_approved,
    tamper_args,
    text_of,
    tool_messages,
)
from tests.support.scripted_model import call, failure, reply, tool_calls
from tools import create_tool


def gated_delete(execute):
    """`delete-record`, which needs approval, carried out by `execute` (a test controls when it returns)."""
    return create_tool(
        id="delete-record", description="Delete", input_schema=RECORD_INPUT, require_approval=True, execute=execute
    )


# -- 1. stored before it is shown --------------------------------------------------------------------


async def test_suspension_is_stored_when_the_chunk_is_yielded(model, storage):
    agent = make_agent([record_tool()], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="c1")), reply("done"))

    stream = await agent.stream("Delete 42")
    async for chunk in stream.full_stream:
        if chunk.type == "tool-call-approval":
            # Another agent object on the same storage (as another process would) sees it at once.
            other = make_agent([record_tool()], storage=storage)
            page = await other.list_suspended_runs()
            assert [r.run_id for r in page.runs] == [stream.run_id]
            assert [c.tool_call_id for c in page.runs[0].tool_calls] == ["c1"]


# -- 2. decided once ---------------------------------------------------------------------------------


async def test_double_approval_runs_tool_once(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="c1")), reply("Deleted."))

    output = await agent.generate("Delete 42")
    first = await decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c1"))
    with pytest.raises(ToolCallNotSuspendedError):
        await decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c1"))
    with pytest.raises(ToolCallNotSuspendedError):
        await agent.decline_tool_call_generate(run_id=output.run_id, tool_call_id="c1")

    assert finish_reason(first) == "stop"
    assert len(delete.calls) == 1
    assert len(model.chat.requests) == 2


async def test_concurrent_double_click_runs_tool_once(model, storage):
    entered = asyncio.Event()
    release = asyncio.Event()
    runs = []

    async def slow_delete(input, ctx):
        runs.append(input["id"])
        entered.set()
        await release.wait()
        return {"deleted": True}

    tool = gated_delete(slow_delete)
    agent = make_agent([tool], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="c1")), reply("Deleted."))
    output = await agent.generate("Delete 42")

    async def click():
        try:
            return await decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c1"))
        except ToolCallNotSuspendedError as exc:
            return exc

    first = asyncio.create_task(click())
    second = asyncio.create_task(click())
    await asyncio.wait_for(entered.wait(), 10)
    # The loser's answer comes while the winner's tool is still held: the second click was refused
    # while the tool ran, not after it had finished.
    done, _ = await asyncio.wait({first, second}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
    assert [type(task.result()) for task in done] == [ToolCallNotSuspendedError]
    assert runs == ["42"]
    release.set()
    outcomes = await asyncio.gather(first, second)

    assert runs == ["42"]
    assert sum(isinstance(o, ToolCallNotSuspendedError) for o in outcomes) == 1
    assert sum(isinstance(o, list) for o in outcomes) == 1


# -- 3. approval binds to the arguments shown -----------------------------------------------------------


async def test_args_changed_after_suspension_are_refused(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="c1")), reply("Refused, as expected."))

    stream = await agent.stream("Delete 42")
    approval = one(await collect(stream), "tool-call-approval")
    assert approval.payload["args"] == {"id": "42"}

    assert await tamper_args(storage, stream.run_id, "c1", {"id": "999"}) == 1
    chunks = await decide(agent.approve_tool_call(run_id=stream.run_id, tool_call_id="c1"))

    assert len(delete.calls) == 0, "the tool never runs with arguments nobody approved"
    result = one(chunks, "tool-result")
    assert result.payload["is_error"] is True
    assert "changed" in str(result.payload["result"]).lower()
    assert finish_reason(chunks) == "stop", "the loop goes on to the model"
    assert text_of(chunks) == "Refused, as expected."
    assert "changed" in tool_messages(model.chat.requests[-1])["c1"].lower()
    assert await run_status(storage, stream.run_id) in FINISHED


async def test_resume_uses_stored_args_not_new_model_output(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="c1")), reply("ok"))

    output = await agent.generate("Delete 42")
    await agent.approve_tool_call_generate(run_id=output.run_id, tool_call_id="c1")

    assert [i["id"] for i in delete.calls.inputs] == ["42"]
    assert len(model.chat.requests) == 2, "approving does not ask the model for the call again"


# -- 4. stored state finished on every terminal path --------------------------------------------------


async def test_completed_run_is_finished_and_never_listed(model, storage):
    agent = make_agent([record_tool()], storage=storage)
    model.chat.push(reply("Just text."))

    output = await agent.generate("Hi")

    assert output.finish_reason == "stop"
    assert await run_status(storage, output.run_id) == "completed"
    assert (await agent.list_suspended_runs()).total == 0


async def test_approved_and_declined_runs_are_finished(model, storage):
    agent = make_agent([record_tool()], storage=storage)
    model.chat.push(
        tool_calls(call("delete-record", {"id": "1"}, id="a")),
        tool_calls(call("delete-record", {"id": "2"}, id="b")),
        reply("approved path done"),
        reply("declined path done"),
    )
    approved = await agent.generate("Delete 1")
    declined = await agent.generate("Delete 2")
    assert (await agent.list_suspended_runs()).total == 2

    await agent.approve_tool_call_generate(run_id=approved.run_id, tool_call_id="a")
    await agent.decline_tool_call_generate(run_id=declined.run_id, tool_call_id="b", reason="no")

    assert await run_status(storage, approved.run_id) == "completed"
    assert await run_status(storage, declined.run_id) == "completed"
    assert (await agent.list_suspended_runs()).total == 0


async def test_tool_that_raises_after_approval_leaves_nothing_suspended(model, storage):
    broken = record_tool(raises=RuntimeError("disk on fire"))
    agent = make_agent([broken], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")), reply("The tool failed."))

    output = await agent.generate("Delete 1")
    chunks = await decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c1"))

    result = one(chunks, "tool-result")
    assert result.payload["is_error"] is True
    assert "disk on fire" in str(result.payload["result"])
    assert "disk on fire" in tool_messages(model.chat.requests[-1])["c1"]
    assert await run_status(storage, output.run_id) in FINISHED
    assert (await agent.list_suspended_runs()).total == 0


async def test_model_error_on_first_step_marks_run_failed(model, storage):
    agent = make_agent([record_tool()], storage=storage)
    model.chat.push(failure(500, message="upstream broke"))

    stream = await agent.stream("Hi")
    chunks = await collect(stream)

    assert finish_reason(chunks) == "error"
    assert "upstream broke" in one(chunks, "error").payload["message"]
    assert await run_status(storage, stream.run_id) == "failed"
    assert (await agent.list_suspended_runs()).total == 0


async def test_model_error_after_approval_marks_run_failed(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")), failure(500))

    output = await agent.generate("Delete 1")
    final = await agent.approve_tool_call_generate(run_id=output.run_id, tool_call_id="c1")

    assert final.finish_reason == "error"  # a failed run is an output that says so, never an exception
    assert len(delete.calls) == 1
    assert await run_status(storage, output.run_id) == "failed"
    assert (await agent.list_suspended_runs()).total == 0
    with pytest.raises(ToolCallNotSuspendedError):
        await decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c1"))


async def test_garbage_from_model_fails_run(model, storage):
    agent = make_agent([record_tool()], storage=storage)
    model.chat.push(failure("garbage"))

    output = await agent.generate("Hi")

    assert output.finish_reason == "error"
    assert await run_status(storage, output.run_id) == "failed"


@pytest.mark.parametrize(
    ("events", "says"),
    [
        ('data: {"choices": "not a list"}\n\ndata: [DONE]\n\n', "not a chat completion"),
        ("data: [1, 2]\n\ndata: [DONE]\n\n", "not a chat completion"),
        ('data: {"error": {"message": "el modelo está sobrecargado"}}\n\n', "el modelo está sobrecargado"),
    ],
    ids=["chunk-of-another-shape", "not-an-object", "error-event"],
)
async def test_a_streamed_reply_that_is_not_chunks_fails_the_run_saying_why(model, storage, events, says):
    agent = make_agent([record_tool()], storage=storage)
    model.chat.push(failure("garbage", body=events))

    stream = await agent.stream("Hi")
    chunks = [chunk async for chunk in stream.full_stream]

    errors = [chunk.payload["message"] for chunk in chunks if chunk.type == "error"]
    assert len(errors) == 1 and says in errors[0], errors
    assert chunks[-1].type == "finish" and chunks[-1].payload["finish_reason"] == "error"
    assert await run_status(storage, stream.run_id) == "failed"


# -- 5. storage cost independent of thread length ------------------------------------------------------


async def _stored_bytes_after_turns(model, storage, thread_id: str, turns: int) -> tuple[int, int]:
    delete = record_tool()
    agent = make_agent([delete], memory=Memory(storage))
    options = dict(thread_id=thread_id, resource_id="user-1", auto_resume_suspended_tools=False)
    padding = "x" * 300
    for turn in range(turns):
        model.chat.push(reply(f"answer {turn:03d} {padding}"))
        output = await agent.generate(f"question {turn:03d} {padding}", **options)
        assert output.finish_reason == "stop"
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="c_measured")), reply("Deleted 42."))
    before = await database_bytes(storage)
    output = await agent.generate("Please delete record 42", **options)
    assert output.finish_reason == "suspended"
    at_suspension = await storage.runs.stored_bytes(output.run_id)
    database_growth = await database_bytes(storage) - before
    await agent.approve_tool_call_generate(run_id=output.run_id, tool_call_id="c_measured")
    finished = await storage.runs.stored_bytes(output.run_id)
    return at_suspension, finished, database_growth


async def test_run_storage_does_not_grow_with_thread_length(model, storage):
    short_suspended, short_finished, short_growth = await _stored_bytes_after_turns(model, storage, "short-thread", 5)
    long_suspended, long_finished, long_growth = await _stored_bytes_after_turns(model, storage, "long-thread-", 50)

    assert short_suspended > 0
    # Whatever table it lands in, suspending a run in a long thread writes no more than in a short one.
    assert abs(long_growth - short_growth) <= 0.1 * short_growth, (short_growth, long_growth)
    assert abs(long_suspended - short_suspended) <= 0.1 * short_suspended, (short_suspended, long_suspended)
    assert abs(long_finished - short_finished) <= 0.1 * max(short_finished, 1), (short_finished, long_finished)
    # The model does get the history: memory is not simply switched off.
    assert any("question 049" in str(m.get("content")) for m in model.chat.requests[-2]["messages"])


# -- steps ---------------------------------------------------------------------------------------------


async def test_max_steps_finishes_with_length(model, storage):
    lookup = record_tool("get-record", require_approval=False)
    agent = make_agent([lookup], storage=storage)
    model.chat.push(*[tool_calls(call("get-record", {"id": str(n)})) for n in range(5)])

    stream = await agent.stream("Loop forever", max_steps=2)
    chunks = await collect(stream)

    assert finish_reason(chunks) == "length"
    assert len(model.chat.requests) == 2
    assert (await stream.result()).finish_reason == "length"
    assert await run_status(storage, stream.run_id) in FINISHED


async def test_default_options_max_steps(model, storage):
    lookup = record_tool("get-record", require_approval=False)
    agent = make_agent([lookup], storage=storage, default_options={"max_steps": 3})
    model.chat.push(*[tool_calls(call("get-record", {"id": str(n)})) for n in range(5)])

    output = await agent.generate("Loop forever")

    assert output.finish_reason == "length"
    assert len(model.chat.requests) == 3


async def test_step_finish_between_steps(model, storage):
    lookup = record_tool("get-record", require_approval=False)
    agent = make_agent([lookup], storage=storage)
    model.chat.push(
        tool_calls(call("get-record", {"id": "1"}), usage={"prompt_tokens": 7, "completion_tokens": 1}),
        reply("done", usage={"prompt_tokens": 9, "completion_tokens": 4}),
    )

    chunks = await collect(await agent.stream("Go"))

    assert len(of_type(chunks, "step-finish")) >= 1
    assert finish_reason(chunks) == "stop"
    usage = one(chunks, "finish").payload["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (16, 5)


# -- several calls in one step -------------------------------------------------------------------------


async def test_mixed_gated_and_ungated_calls_in_one_step(model, storage):
    delete = record_tool("delete-record", require_approval=True)
    archive = record_tool("archive-record", require_approval=True)
    lookup = record_tool("get-record", require_approval=False, result={"name": "Alice"})
    agent = make_agent([delete, archive, lookup], storage=storage)
    model.chat.push(
        tool_calls(
            call("delete-record", {"id": "1"}, id="c_del"),
            call("get-record", {"id": "2"}, id="c_get"),
            call("archive-record", {"id": "3"}, id="c_arc"),
        ),
        reply("Deleted 1, looked up 2, kept 3."),
    )

    stream = await agent.stream("Do three things")
    chunks = await collect(stream)

    assert finish_reason(chunks) == "suspended"
    assert sorted(c.payload["tool_call_id"] for c in of_type(chunks, "tool-call-approval")) == ["c_arc", "c_del"]
    assert [c.payload["tool_call_id"] for c in of_type(chunks, "tool-result")] == ["c_get"]
    assert len(lookup.calls) == 1
    page = await agent.list_suspended_runs()
    assert page.total == 1
    assert sorted(c.tool_call_id for c in page.runs[0].tool_calls) == ["c_arc", "c_del"]

    approved = await decide(agent.approve_tool_call(run_id=stream.run_id, tool_call_id="c_del"))
    assert [c.payload["tool_call_id"] for c in of_type(approved, "tool-result")] == ["c_del"]
    assert len(model.chat.requests) == 1, "the model waits until every call of the step is settled"
    assert finish_reason(approved) == "suspended"
    assert await run_status(storage, stream.run_id) == "suspended"

    declined = await decide(agent.decline_tool_call(run_id=stream.run_id, tool_call_id="c_arc", reason="keep it"))
    assert one(declined, "tool-output-denied").payload["tool_call_id"] == "c_arc"
    assert finish_reason(declined) == "stop"
    assert text_of(declined) == "Deleted 1, looked up 2, kept 3."

    assert len(delete.calls) == 1 and len(archive.calls) == 0 and len(lookup.calls) == 1
    follow_up = model.chat.requests[-1]
    answered = tool_messages(follow_up)
    assert set(answered) == {"c_del", "c_get", "c_arc"}
    assert "deleted" in answered["c_del"]
    assert "Alice" in answered["c_get"]
    assert says_not_approved(answered["c_arc"]) and "keep it" in answered["c_arc"]
    assert_every_tool_call_answered(follow_up)
    assert await run_status(storage, stream.run_id) == "completed"


async def test_each_call_of_a_step_is_decided_on_its_own(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(
        tool_calls(call("delete-record", {"id": "1"}, id="c1"), call("delete-record", {"id": "2"}, id="c2")),
        reply("both handled"),
    )

    output = await agent.generate("Delete 1 and 2")
    assert output.finish_reason == "suspended"

    await decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c2"))
    with pytest.raises(ToolCallNotSuspendedError):
        await decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c2"))
    final = await agent.approve_tool_call_generate(run_id=output.run_id, tool_call_id="c1")

    assert final.text == "both handled"
    assert sorted(i["id"] for i in delete.calls.inputs) == ["1", "2"]
    assert_every_tool_call_answered(model.chat.requests[-1])


async def test_the_last_two_calls_of_a_step_approved_at_once_continue_the_run_once(model, storage):
    """Two approvals settle the last two calls of a step at the same moment: exactly one of them goes on
    with the run (one more model request, one answer), and the run is not left parked."""
    both_started, release = asyncio.Event(), asyncio.Event()
    runs: list[str] = []

    async def delete(input, ctx):
        runs.append(input["id"])
        if len(runs) == 2:
            both_started.set()
        await release.wait()
        return {"deleted": True, "id": input["id"]}

    tool = gated_delete(delete)
    agent = make_agent([tool], storage=storage)
    model.chat.push(
        tool_calls(call("delete-record", {"id": "1"}, id="c1"), call("delete-record", {"id": "2"}, id="c2")),
        reply("both deleted"),
    )
    output = await agent.generate("Delete 1 and 2")
    assert output.finish_reason == "suspended"

    first = asyncio.create_task(decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c1")))
    second = asyncio.create_task(decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c2")))
    await asyncio.wait_for(both_started.wait(), 10)
    release.set()  # both results are stored now, side by side
    chunks = await asyncio.gather(first, second)

    assert sorted(runs) == ["1", "2"]
    assert len(model.chat.requests) == 2  # the step's continuation asked the model once
    assert sorted(text_of(c) for c in chunks) == ["", "both deleted"]
    assert await run_status(storage, output.run_id) == "completed"
    assert_every_tool_call_answered(model.chat.requests[-1])


async def test_ungated_calls_of_one_step_run_concurrently(model, storage):
    barrier = asyncio.Barrier(2)

    async def meet(input, ctx):
        await asyncio.wait_for(barrier.wait(), 5)  # only returns when both calls run at the same time
        return {"met": input["id"]}

    tool = create_tool(
        id="meet",
        description="Meet",
        input_schema={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        execute=meet,
    )
    agent = make_agent([tool], storage=storage)
    model.chat.push(tool_calls(call("meet", {"id": "a"}, id="ca"), call("meet", {"id": "b"}, id="cb")), reply("met"))

    chunks = await collect(await agent.stream("Meet"))

    results = {c.payload["tool_call_id"]: c.payload for c in of_type(chunks, "tool-result")}
    assert results["ca"]["is_error"] is False, results
    assert results["cb"]["is_error"] is False, results
    assert finish_reason(chunks) == "stop"


async def test_every_tool_call_gets_a_result_in_the_next_request(model, storage):
    delete = record_tool(require_approval=True)
    lookup = record_tool("get-record", require_approval=False)
    agent = make_agent([delete, lookup], storage=storage)
    model.chat.push(
        tool_calls(call("get-record", {"id": "1"}, id="s1"), call("get-record", {"id": 5}, id="s1_bad")),
        tool_calls(call("delete-record", {"id": "1"}, id="s2"), call("no-such-tool", {}, id="s2_unknown")),
        reply("all done"),
    )

    output = await agent.generate("Go")
    assert output.finish_reason == "suspended"  # delete-record waits for approval
    output = await agent.approve_tool_call_generate(run_id=output.run_id, tool_call_id="s2")

    assert output.finish_reason == "stop"
    assert len(model.chat.requests) == 3
    for body in model.chat.requests:
        assert_every_tool_call_answered(body)
    assert set(tool_messages(model.chat.requests[-1])) >= {"s1", "s1_bad", "s2", "s2_unknown"}
