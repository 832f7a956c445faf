"""What the runtime hands to a front end: frozen records of tool calls and runs, never database rows.

A front end (Slack, the HTTP API, the playground) reads a call through `Agent.get_tool_call` and a run
through `Agent.get_run`; both are typed, frozen copies with what a human decides about.
"""

from __future__ import annotations

import dataclasses

import pytest

from bot.agent import Agent, Chunk, DecisionKind, RunRecord, RunStatus, ToolCallRecord, ToolCallState
from memory import Memory, PolicyChange
from tests.runtime.helpers import (
    RECORD_INPUT,
    WEATHER_RESUME,
    collect,
    decide,
    make_agent,
    one,
    record_tool,
    weather_tool,
)
from tests.support.scripted_model import call, reply, tool_calls


async def test_a_waiting_approval_is_a_frozen_record_with_what_a_human_decides_about(model, storage):
    agent = make_agent([record_tool()], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_del")), reply("Not deleted."))
    stream = await agent.stream("Delete record 42")
    await collect(stream)

    record = await agent.get_tool_call(stream.run_id, "call_del")
    assert type(record) is ToolCallRecord
    assert record.state is ToolCallState.AWAITING_APPROVAL
    assert (record.tool_name, record.args) == ("delete-record", {"id": "42"})
    assert record.description == "delete-record: act on a record by ID"
    assert record.input_schema == RECORD_INPUT  # a direct call's arguments may be edited
    assert record.requires_approval and record.decision is None and record.outcome is None
    assert record.waits_for(DecisionKind.APPROVE) and not record.waits_for(DecisionKind.RESUME)
    assert record.suspended_at is not None and not record.interrupted
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.state = ToolCallState.APPROVED  # type: ignore[misc]

    await decide(agent.decline_tool_call(run_id=stream.run_id, tool_call_id="call_del", reason="no", approver="U2"))
    decided = await agent.get_tool_call(stream.run_id, "call_del")
    assert decided.state is ToolCallState.DECLINED
    assert decided.decision is DecisionKind.DECLINE and decided.outcome == "declined"
    assert (decided.decided_by, decided.reason) == ("U2", "no") and decided.decided_at is not None
    assert record.state is ToolCallState.AWAITING_APPROVAL  # the earlier copy did not change


async def test_a_suspended_call_carries_its_resume_schema_and_then_its_answer(model, storage):
    agent = make_agent([weather_tool([])], storage=storage)
    model.chat.push(tool_calls(call("get-weather", {}, id="call_w")), reply("Sunny in Paris."))
    stream = await agent.stream("Weather?")
    await collect(stream)

    record = await agent.get_tool_call(stream.run_id, "call_w")
    assert record.state is ToolCallState.SUSPENDED and record.waits_for(DecisionKind.RESUME)
    assert record.resume_schema == WEATHER_RESUME
    assert record.suspend_payload == {"question": "Which city?"}
    assert not record.requires_approval

    await decide(agent.resume_stream({"city": "Paris"}, run_id=stream.run_id, tool_call_id="call_w", actor="U1"))
    answered = await agent.get_tool_call(stream.run_id, "call_w")
    assert answered.state is ToolCallState.DONE
    assert answered.decision is DecisionKind.RESUME and answered.outcome == "answered"
    assert answered.resume_data == {"city": "Paris"} and answered.decided_by == "U1"


async def test_a_sub_agents_call_shows_the_inner_tool_and_cannot_be_edited(model, storage):
    leaf = Agent(id="leaf", model="openai/test-model", tools=[record_tool()], description="Owns the records")
    top = make_agent([], storage=storage, agents=[leaf])
    model.chat.push(
        tool_calls(call("agent-leaf", {"prompt": "delete 3"}, id="top_1")),
        tool_calls(call("delete-record", {"id": "3"}, id="inner_1")),
    )
    stream = await top.stream("delete record 3")
    await collect(stream)

    record = await top.get_tool_call(stream.run_id, "top_1")
    assert record.state is ToolCallState.AWAITING_APPROVAL
    assert (record.tool_name, record.args) == ("delete-record", {"id": "3"})
    assert record.description == "delete-record: act on a record by ID"  # found on the sub-agent
    assert record.input_schema is None  # decided as shown
    assert record.child_run_id is not None and record.child_tool_call_id == "inner_1"
    # the inner run is the sub-agent's: the supervisor does not hand it out
    assert await top.get_tool_call(record.child_run_id, "inner_1") is None
    assert await top.get_run(record.child_run_id) is None


async def test_a_waiting_calls_chunk_carries_its_view_as_a_fresh_read_gives_it(model, storage):
    # what a front end posts at once (`Chunk.view`): the view `waiting_call_view` would read, built from what the
    # runtime held when it parked the call, and no part of the chunk's public shape
    change = PolicyChange(approvers=["U7"], self_approval=False, expires_after=3600, grant_seconds=600)
    await storage.policies.set("delete-record", change)
    await storage.policies.set("get-weather", PolicyChange(approvers=["U8"], expires_after=600))
    weather = weather_tool([], require_approval=True)
    agent = make_agent([record_tool(), weather], memory=Memory(storage))
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_del")))
    stream = await agent.stream("Delete record 42", thread_id="t1", resource_id="U1")
    approval = one(await collect(stream), "tool-call-approval")

    assert approval.view is not None
    assert approval.view == await agent.waiting_call_view(stream.run_id, "call_del")
    assert (approval.view.deciders, approval.view.grant_seconds, approval.view.policy_version) == (("U7",), 600, 1)
    assert approval == Chunk(type=approval.type, run_id=approval.run_id, payload=approval.payload)  # not compared
    assert "view=" not in repr(approval)

    # a question asked by a call that was approved first: parked by the decision's continuation
    model.chat.push(tool_calls(call("get-weather", {}, id="call_w")))
    first = await agent.stream("Weather?", thread_id="t2", resource_id="U1")
    one(await collect(first), "tool-call-approval")
    chunks = await decide(agent.approve_tool_call(run_id=first.run_id, tool_call_id="call_w", approver="U8"))
    question = one(chunks, "tool-call-suspended")
    assert question.view is not None and question.view.is_question
    assert question.view == await agent.waiting_call_view(first.run_id, "call_w")


async def test_a_supervisors_waiting_call_leaves_its_view_to_be_read(model, storage):
    # the call shows its inner tool, whose policy the supervisor's run did not read: a front end reads the view
    leaf = Agent(id="leaf", model="openai/test-model", tools=[record_tool()], description="Owns the records")
    top = make_agent([], storage=storage, agents=[leaf])
    model.chat.push(
        tool_calls(call("agent-leaf", {"prompt": "delete 3"}, id="top_1")),
        tool_calls(call("delete-record", {"id": "3"}, id="inner_1")),
    )
    stream = await top.stream("delete record 3")
    approval = one(await collect(stream), "tool-call-approval")
    assert approval.view is None
    assert await top.waiting_call_view(stream.run_id, "top_1") is not None


async def test_a_run_is_a_record_of_this_agents_runs_only(model, storage):
    agent = make_agent([record_tool()], storage=storage)
    other = make_agent([record_tool()], storage=storage, id="other-agent")
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")))
    stream = await agent.stream("Delete 1", request_context={"slack": {"user": "U1"}})
    await collect(stream)

    run = await agent.get_run(stream.run_id)
    assert type(run) is RunRecord
    assert run.status is RunStatus.SUSPENDED and run.request_context == {"slack": {"user": "U1"}}
    assert await other.get_run(stream.run_id) is None
    assert await other.get_tool_call(stream.run_id, "c1") is None
    assert await agent.get_run("no-such-run") is None
    assert await agent.get_tool_call(stream.run_id, "no-such-call") is None
