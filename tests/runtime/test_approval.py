"""Approving and declining tool calls, and deciding which calls need approval.

In the spirit of Mastra's agent-approval docs: a tool with `require_approval`, an approval chunk in
the stream, `approve_tool_call`/`decline_tool_call` (stream and generate), request-level and
tool-level approval rules.
"""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from bot.agent import ToolCallNotSuspendedError
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
    text_of,
    tool_messages,
    types,
)
from tests.support.scripted_model import call, reply, tool_calls

# -- stream ----------------------------------------------------------------------------------------


async def test_stream_surfaces_approval_and_suspends(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_del")))

    stream = await agent.stream("Delete record 42")
    chunks = await collect(stream)

    assert types(chunks)[-1] == "finish"
    assert finish_reason(chunks) == "suspended"
    tool_call = one(chunks, "tool-call")
    assert tool_call.payload["tool_call_id"] == "call_del"
    assert tool_call.payload["tool_name"] == "delete-record"
    assert tool_call.payload["args"] == {"id": "42"}
    approval = one(chunks, "tool-call-approval")
    assert approval.payload["tool_call_id"] == "call_del"
    assert approval.payload["tool_name"] == "delete-record"
    assert approval.payload["args"] == {"id": "42"}
    assert "resume_schema" in approval.payload
    assert types(chunks).index("tool-call") < types(chunks).index("tool-call-approval")
    assert of_type(chunks, "tool-result") == []
    assert all(c.run_id == stream.run_id for c in chunks)
    assert len(delete.calls) == 0
    assert len(model.chat.requests) == 1
    assert await run_status(storage, stream.run_id) == "suspended"

    output = await stream.result()
    assert output.finish_reason == "suspended"
    assert output.run_id == stream.run_id
    assert output.suspend_payload.tool_call_id == "call_del"
    assert output.suspend_payload.tool_name == "delete-record"
    assert output.suspend_payload.args == {"id": "42"}
    assert output.suspend_payload.requires_approval is True
    assert output.suspend_payload.payload is None


async def test_approve_after_stream_runs_tool_and_continues(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_del")), reply("Record 42 is gone."))

    stream = await agent.stream("Delete record 42")
    await collect(stream)
    chunks = await decide(agent.approve_tool_call(run_id=stream.run_id, tool_call_id="call_del"))

    assert [i["id"] for i in delete.calls.inputs] == ["42"]
    result = one(chunks, "tool-result")
    assert result.payload == {
        "tool_call_id": "call_del",
        "tool_name": "delete-record",
        "result": {"deleted": True, "id": "42"},
        "is_error": False,
    }
    assert text_of(chunks) == "Record 42 is gone."
    assert finish_reason(chunks) == "stop"
    assert all(c.run_id == stream.run_id for c in chunks)

    follow_up = model.chat.requests[-1]
    assert len(model.chat.requests) == 2
    assert "deleted" in tool_messages(follow_up)["call_del"]
    assert_every_tool_call_answered(follow_up)
    assert await run_status(storage, stream.run_id) == "completed"


async def test_approve_with_tool_call_id_omitted_takes_latest(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "7"})), reply("done"))

    stream = await agent.stream("Delete 7")
    await collect(stream)
    chunks = await decide(agent.approve_tool_call(run_id=stream.run_id))

    assert len(delete.calls) == 1
    assert finish_reason(chunks) == "stop"


@pytest.mark.parametrize("with_storage", [True, False], ids=["storage", "no-storage"])
async def test_approve_from_inside_the_stream_loop(model, tmp_path, with_storage):
    """Mastra's canonical example: approve as soon as the approval chunk arrives, inside the loop."""
    storage = None
    if with_storage:
        from memory import Storage

        storage = Storage(f"sqlite+aiosqlite:///{tmp_path}/inside.db")
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_del")), reply("Deleted it."))

    stream = await agent.stream("Delete record 42")
    outer, inner_text = [], []
    async for chunk in stream.full_stream:
        outer.append(chunk)
        if chunk.type == "tool-call-approval":
            approved = await agent.approve_tool_call(run_id=stream.run_id, tool_call_id=chunk.payload["tool_call_id"])
            async for text in approved.text_stream:
                inner_text.append(text)
    try:
        assert finish_reason(outer) == "suspended"
        assert "".join(inner_text) == "Deleted it."
        assert len(delete.calls) == 1
        assert (await stream.result()).finish_reason == "suspended"
    finally:
        if storage is not None:
            await storage.close()


async def test_approve_inside_loop_on_both_databases(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")), reply("ok"))

    stream = await agent.stream("Delete 1")
    approved_chunks = []
    async for chunk in stream.full_stream:
        if chunk.type == "tool-call-approval":
            approved_chunks = await decide(agent.approve_tool_call(run_id=chunk.run_id, tool_call_id="c1"))
    assert finish_reason(approved_chunks) == "stop"
    assert one(approved_chunks, "tool-result").payload["is_error"] is False
    assert len(delete.calls) == 1
    assert await run_status(storage, stream.run_id) == "completed"


async def test_decline_in_stream_emits_denied_and_tells_model(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_del")), reply("Understood, I kept it."))

    stream = await agent.stream("Delete record 42")
    await collect(stream)
    chunks = await decide(
        agent.decline_tool_call(run_id=stream.run_id, tool_call_id="call_del", reason="record is still in use")
    )

    assert len(delete.calls) == 0
    denied = one(chunks, "tool-output-denied")
    assert denied.payload["tool_call_id"] == "call_del"
    assert denied.payload["tool_name"] == "delete-record"
    assert denied.payload["reason"] == "record is still in use"
    assert text_of(chunks) == "Understood, I kept it."
    assert finish_reason(chunks) == "stop"
    told = tool_messages(model.chat.requests[-1])["call_del"]
    assert says_not_approved(told)
    assert "record is still in use" in told
    assert await run_status(storage, stream.run_id) == "completed"


# -- generate --------------------------------------------------------------------------------------


async def test_generate_suspends_then_approve_generate(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_del")), reply("Deleted record 42."))

    output = await agent.generate("Delete record 42")
    assert output.finish_reason == "suspended"
    assert output.suspend_payload.tool_call_id == "call_del"
    assert output.suspend_payload.requires_approval is True
    assert output.suspend_payload.args == {"id": "42"}
    assert len(delete.calls) == 0

    final = await agent.approve_tool_call_generate(run_id=output.run_id, tool_call_id="call_del")
    assert final.finish_reason == "stop"
    assert final.text == "Deleted record 42."
    assert final.run_id == output.run_id
    assert final.suspend_payload is None
    assert len(delete.calls) == 1
    assert "deleted" in tool_messages(model.chat.requests[-1])["call_del"]
    assert await run_status(storage, output.run_id) == "completed"


async def test_generate_asks_for_whole_replies_and_stream_streams_them(model, storage):
    """Nobody reads generate's text as it comes: its model requests (the approval's too) ask for the
    reply whole; a stream's requests stream. The answers are the same."""
    agent = make_agent([record_tool()], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_1")), reply("Deleted record 42."))
    output = await agent.generate("Delete record 42")
    final = await agent.approve_tool_call_generate(run_id=output.run_id)
    assert final.text == "Deleted record 42."
    assert [bool(r.get("stream")) for r in model.chat.requests] == [False, False]

    model.chat.push(tool_calls(call("delete-record", {"id": "43"}, id="call_2")), reply("Deleted record 43."))
    stream = await agent.stream("Delete record 43")
    await collect(stream)
    chunks = await collect(await agent.approve_tool_call(run_id=stream.run_id))
    assert text_of(chunks) == "Deleted record 43."
    assert [bool(r.get("stream")) for r in model.chat.requests[2:]] == [True, True]


async def test_decline_generate_with_reason(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_del")), reply("OK, not deleting."))

    output = await agent.generate("Delete record 42")
    final = await agent.decline_tool_call_generate(
        run_id=output.run_id, tool_call_id="call_del", reason="ask the owner first"
    )

    assert len(delete.calls) == 0
    assert final.finish_reason == "stop"
    assert final.text == "OK, not deleting."
    next_request = model.chat.requests[-1]
    told = tool_messages(next_request)["call_del"]
    assert says_not_approved(told)
    assert "ask the owner first" in told
    assert_every_tool_call_answered(next_request)
    assert await run_status(storage, output.run_id) == "completed"


async def test_decline_without_reason(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_del")), reply("Fine."))

    stream = await agent.stream("Delete record 42")
    await collect(stream)
    chunks = await decide(agent.decline_tool_call(run_id=stream.run_id))

    assert len(delete.calls) == 0
    assert one(chunks, "tool-output-denied").payload["tool_call_id"] == "call_del"
    assert says_not_approved(tool_messages(model.chat.requests[-1])["call_del"])


async def test_declined_call_is_not_decided_again(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_del")), reply("Fine."))

    output = await agent.generate("Delete record 42")
    await agent.decline_tool_call_generate(run_id=output.run_id, tool_call_id="call_del")
    with pytest.raises(ToolCallNotSuspendedError):
        await decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="call_del"))
    assert len(delete.calls) == 0


async def test_unknown_tool_call_id_is_not_suspended(model, storage):
    agent = make_agent([record_tool()], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_del")))

    output = await agent.generate("Delete record 42")
    with pytest.raises(ToolCallNotSuspendedError):
        await decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="call_nope"))
    assert await run_status(storage, output.run_id) == "suspended"


# -- who needs approval ----------------------------------------------------------------------------


async def test_ungated_tool_runs_without_approval(model, storage):
    lookup = record_tool("get-record", require_approval=False, result={"name": "Alice"})
    agent = make_agent([lookup], storage=storage)
    model.chat.push(tool_calls(call("get-record", {"id": "1"}, id="c1")), reply("It is Alice."))

    output = await agent.generate("Who is 1?")

    assert output.finish_reason == "stop"
    assert output.text == "It is Alice."
    assert len(lookup.calls) == 1
    assert await run_status(storage, output.run_id) in FINISHED


async def test_request_level_true_gates_every_tool(model, storage):
    lookup = record_tool("get-record", require_approval=False)
    agent = make_agent([lookup], storage=storage)
    model.chat.push(tool_calls(call("get-record", {"id": "1"}, id="c1")))

    output = await agent.generate("Who is 1?", require_tool_approval=True)

    assert output.finish_reason == "suspended"
    assert output.suspend_payload.tool_name == "get-record"
    assert len(lookup.calls) == 0


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_request_level_callable_by_tool_name_pattern(model, storage, kind):
    delete = record_tool("delete-record", require_approval=False)
    lookup = record_tool("get-record", require_approval=False, result={"name": "Alice"})
    agent = make_agent([delete, lookup], storage=storage)
    seen = []

    def sync_rule(check):
        seen.append(check)
        return check.tool_name.startswith("delete-")

    async def async_rule(check):
        await asyncio.sleep(0)
        return sync_rule(check)

    model.chat.push(
        tool_calls(call("delete-record", {"id": "1"}, id="c_del"), call("get-record", {"id": "2"}, id="c_get"))
    )

    stream = await agent.stream(
        "Show 2 and delete 1",
        require_tool_approval=sync_rule if kind == "sync" else async_rule,
        request_context={"user": "U123", "workspace": "T42"},
    )
    chunks = await collect(stream)

    assert finish_reason(chunks) == "suspended"
    assert [c.payload["tool_call_id"] for c in of_type(chunks, "tool-call-approval")] == ["c_del"]
    assert [c.payload["tool_call_id"] for c in of_type(chunks, "tool-result")] == ["c_get"]
    assert len(lookup.calls) == 1
    assert len(delete.calls) == 0
    assert {c.tool_name for c in seen} == {"delete-record", "get-record"}
    check = next(c for c in seen if c.tool_name == "delete-record")
    assert check.args == {"id": "1"}
    assert check.request_context == {"user": "U123", "workspace": "T42"}
    assert check.workspace == "T42"


async def test_request_level_callable_that_raises_requires_approval(model, storage):
    lookup = record_tool("get-record", require_approval=False)
    agent = make_agent([lookup], storage=storage)
    model.chat.push(tool_calls(call("get-record", {"id": "1"}, id="c1")))

    def broken_rule(check):
        raise RuntimeError("policy service down")

    output = await agent.generate("Who is 1?", require_tool_approval=broken_rule)

    assert output.finish_reason == "suspended"
    assert output.suspend_payload.requires_approval is True
    assert len(lookup.calls) == 0


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_tool_level_callable_decides_alone(model, storage, kind):
    """A tool's own rule overrides the request's `require_tool_approval=True`, both ways."""

    def rule(check):
        return int(check.args["amount"]) > 100

    async def async_rule(check):
        return rule(check)

    transfer = record_tool(
        "transfer",
        require_approval=rule if kind == "sync" else async_rule,
        input_schema={"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]},
        result={"ok": True},
    )
    agent = make_agent([transfer], storage=storage)
    model.chat.push(tool_calls(call("transfer", {"amount": 5}, id="small")), reply("Sent 5."))

    small = await agent.generate("Send 5", require_tool_approval=True)
    assert small.finish_reason == "stop"
    assert len(transfer.calls) == 1

    model.chat.push(tool_calls(call("transfer", {"amount": 500}, id="big")))
    big = await agent.generate("Send 500", require_tool_approval=False)
    assert big.finish_reason == "suspended"
    assert big.suspend_payload.tool_call_id == "big"
    assert len(transfer.calls) == 1


async def test_tool_level_callable_that_raises_requires_approval(model, storage):
    def broken(check):
        raise KeyError("nope")

    tool = record_tool("get-record", require_approval=broken)
    agent = make_agent([tool], storage=storage)
    model.chat.push(tool_calls(call("get-record", {"id": "1"}, id="c1")))

    output = await agent.generate("Who is 1?")

    assert output.finish_reason == "suspended"
    assert len(tool.calls) == 0


async def test_tools_given_as_dict_use_tool_id_as_name(model, storage):
    delete = record_tool()
    agent = make_agent({"delete_tool": delete}, storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "3"}, id="c1")))

    output = await agent.generate("Delete 3")

    offered = [t["function"]["name"] for t in model.chat.requests[0]["tools"]]
    assert offered == ["delete-record"]
    assert output.suspend_payload.tool_name == "delete-record"


# -- invalid arguments -----------------------------------------------------------------------------


class DeleteInput(BaseModel):
    id: str
    hard: bool = False


@pytest.mark.parametrize("arguments", [{"id": 42}, {}, "{not json"], ids=["wrong-type", "missing", "malformed-json"])
async def test_invalid_args_become_error_result(model, storage, arguments):
    delete = record_tool(require_approval=False)
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", arguments, id="c_bad")), reply("Let me fix that."))

    stream = await agent.stream("Delete 42")
    chunks = await collect(stream)

    assert len(delete.calls) == 0
    result = one(chunks, "tool-result")
    assert result.payload["tool_call_id"] == "c_bad"
    assert result.payload["is_error"] is True
    assert finish_reason(chunks) == "stop"
    told = tool_messages(model.chat.requests[-1])["c_bad"]
    assert told, "the model is told why"
    if arguments != "{not json":
        assert "id" in told


async def test_invalid_args_of_gated_tool_are_not_offered_for_approval(model, storage):
    delete = record_tool(require_approval=True)
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": 42}, id="c_bad")), reply("Oops."))

    chunks = await collect(await agent.stream("Delete 42"))

    assert of_type(chunks, "tool-call-approval") == []
    assert one(chunks, "tool-result").payload["is_error"] is True
    assert finish_reason(chunks) == "stop"
    assert len(delete.calls) == 0


async def test_pydantic_input_schema_gives_model_instance(model, storage):
    seen = []

    async def execute(input, ctx):
        seen.append(input)
        return {"deleted": True}

    from tools import create_tool

    tool = create_tool(id="delete-record", description="Delete", input_schema=DeleteInput, execute=execute)
    agent = make_agent([tool], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "9", "hard": True})), reply("ok"))

    output = await agent.generate("Delete 9")

    assert output.finish_reason == "stop"
    assert isinstance(seen[0], DeleteInput)
    assert seen[0] == DeleteInput(id="9", hard=True)


# -- hooks -----------------------------------------------------------------------------------------


async def test_before_tool_call_hook_can_skip_the_tool(model, storage):
    delete = record_tool()
    seen = []

    async def before_tool_call(call):
        seen.append(call)
        return {"proceed": False, "output": {"skipped": "dry run"}}

    agent = make_agent([delete], storage=storage, hooks={"before_tool_call": before_tool_call})
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="c1")), reply("Dry run only."))

    output = await agent.generate("Delete 42", request_context={"user": "U7"})
    assert output.finish_reason == "suspended"
    assert seen == [], "the hook runs after the approval, right before execute"

    chunks = await decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c1"))

    assert len(delete.calls) == 0
    assert one(chunks, "tool-result").payload["result"] == {"skipped": "dry run"}
    assert "dry run" in tool_messages(model.chat.requests[-1])["c1"]
    hook_call = seen[0]
    assert hook_call.tool_name == "delete-record"
    assert hook_call.tool_call_id == "c1"
    assert hook_call.run_id == output.run_id
    assert hook_call.input == {"id": "42"}
    assert hook_call.context == {"user": "U7"}


async def test_before_tool_call_hook_returning_none_proceeds(model, storage):
    lookup = record_tool("get-record", require_approval=False, result={"name": "Bob"})
    names = []

    def before_tool_call(call):
        names.append(call.tool_name)

    agent = make_agent([lookup], storage=storage, hooks={"before_tool_call": before_tool_call})
    model.chat.push(tool_calls(call("get-record", {"id": "1"})), reply("Bob."))

    output = await agent.generate("Who?")

    assert output.text == "Bob."
    assert names == ["get-record"]
    assert len(lookup.calls) == 1
