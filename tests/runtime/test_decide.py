"""`Agent.decide`: the one entry point a decision goes through, with one typed value (`Approve`,
`Decline`, `Resume`); the contract's approve/decline/resume methods are wrappers over it."""

from __future__ import annotations

import dataclasses

import pytest

from bot.agent import (
    Approve,
    CancelQuestion,
    Decision,
    DecisionKind,
    Decline,
    DeclineQuestion,
    Resume,
    ResumeDataInvalidError,
    ToolCallNotSuspendedError,
    ToolCallState,
)
from tests.runtime.helpers import decide, finish_reason, make_agent, one, record_tool, tool_messages
from tests.support.scripted_model import call, reply, tool_calls
from tools import create_tool

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def city_tool(executions: list):
    """Asks which city, and says which city it was given once resumed."""

    async def execute(_input, ctx):
        executions.append(ctx.agent.resume_data)
        if ctx.agent.resume_data is None:
            return await ctx.agent.suspend({"question": "Which city?"})
        return {"city": ctx.agent.resume_data["city"]}

    return create_tool(id="ask-city", description="Asks for a city", resume_schema=CITY, execute=execute)


async def test_approve_with_edited_args_runs_the_edited_call_and_records_who(model, storage):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="c1")), reply("Deleted 43."))
    output = await agent.generate("Delete record 42")

    chunks = await decide(agent.decide(output.run_id, "c1", Approve(args={"id": "43"}), decided_by="U1", via="api"))

    assert [i["id"] for i in delete.calls.inputs] == ["43"]
    assert finish_reason(chunks) == "stop"
    record = await agent.get_tool_call(output.run_id, "c1")
    assert (record.state, record.decision, record.decided_by, record.args) == (
        ToolCallState.DONE,
        DecisionKind.APPROVE,
        "U1",
        {"id": "43"},
    )


@pytest.mark.parametrize("reason", ["还在使用中", "Noch in Verwendung – später", "لا تحذفه"])
async def test_decline_with_a_reason_tells_the_model_and_never_runs(model, storage, reason):
    delete = record_tool()
    agent = make_agent([delete], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="c1")), reply("Kept it."))
    output = await agent.generate("Delete record 42")

    chunks = await decide(agent.decide(output.run_id, "c1", Decline(reason=reason), decided_by="U2"))

    assert len(delete.calls) == 0
    assert one(chunks, "tool-output-denied").payload["reason"] == reason
    assert reason in tool_messages(model.chat.requests[-1])["c1"]
    record = await agent.get_tool_call(output.run_id, "c1")
    assert (record.state, record.decision, record.reason, record.outcome) == (
        ToolCallState.DECLINED,
        DecisionKind.DECLINE,
        reason,
        "declined",
    )


async def test_resume_gives_the_tool_its_data_and_decide_generate_returns_the_output(model, storage):
    executions: list = []
    agent = make_agent([city_tool(executions)], storage=storage)
    model.chat.push(tool_calls(call("ask-city", {}, id="c1")), reply("It is Zürich."))
    output = await agent.generate("Which city?")
    assert output.finish_reason == "suspended"

    final = await agent.decide_generate(output.run_id, "c1", Resume({"city": "Zürich"}), decided_by="U3")

    assert executions == [None, {"city": "Zürich"}]
    assert (final.finish_reason, final.text) == ("stop", "It is Zürich.")
    record = await agent.get_tool_call(output.run_id, "c1")
    assert (record.decision, record.resume_data, record.outcome) == (
        DecisionKind.RESUME,
        {"city": "Zürich"},
        "answered",
    )


async def test_a_decision_of_the_wrong_kind_says_which_one_the_call_waits_for(model, storage):
    executions: list = []
    agent = make_agent([record_tool(), city_tool(executions)], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c_approval")))
    approval = await agent.generate("Delete 1")
    model.chat.push(tool_calls(call("ask-city", {}, id="c_question")))
    question = await agent.generate("Which city?")

    with pytest.raises(ToolCallNotSuspendedError, match=r"waits for approval.*Approve\(\) or Decline\(\)"):
        await agent.decide(approval.run_id, "c_approval", Resume({"city": "Oslo"}))
    with pytest.raises(ToolCallNotSuspendedError, match=r"waits for resume data.*Resume\(data\)"):
        await agent.decide(question.run_id, "c_question", Approve())
    with pytest.raises(ResumeDataInvalidError):
        await agent.decide(question.run_id, "c_question", Resume({"town": "Oslo"}))
    for refusal in (DeclineQuestion(), CancelQuestion()):  # a question that is not an MCP server's
        with pytest.raises(ToolCallNotSuspendedError, match=r"only a live question.*resume it with data"):
            await agent.decide(question.run_id, "c_question", refusal)

    # nothing of that was stored: both still wait, for what they waited for
    assert (await agent.get_tool_call(approval.run_id, "c_approval")).waits_for(DecisionKind.APPROVE)
    assert (await agent.get_tool_call(question.run_id, "c_question")).waits_for(DecisionKind.RESUME)
    assert executions == [None]


async def test_the_contract_methods_decide_through_the_same_entry_point(model, storage):
    """A wrapper and `decide` store the same decision: who, through what, the audit line."""
    agent = make_agent([record_tool()], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")))
    first = await agent.generate("Delete 1")
    model.chat.push(tool_calls(call("delete-record", {"id": "2"}, id="c2")))
    second = await agent.generate("Delete 2")
    model.chat.push(reply("ok"), reply("ok"))

    await agent.decline_tool_call_generate(
        run_id=first.run_id, tool_call_id="c1", reason="no", approver="U1", via="home"
    )
    await agent.decide_generate(second.run_id, "c2", Decline(reason="no"), decided_by="U1", via="home")

    lines = []
    for output, call_id in ((first, "c1"), (second, "c2")):
        record = await agent.get_tool_call(output.run_id, call_id)
        entries = await storage.audit_log.entries(run_id=output.run_id)
        decided = [(e.action, e.actor, e.via, e.detail) for e in entries if e.action == "declined"]
        lines.append((record.decision, record.decided_by, record.reason, decided))
    assert lines[0] == lines[1] == (DecisionKind.DECLINE, "U1", "no", [("declined", "U1", "home", "no")])


def test_decisions_are_frozen_values_that_name_their_kind():
    assert [d.kind for d in (Approve(), Decline(), Resume({}))] == [
        DecisionKind.APPROVE,
        DecisionKind.DECLINE,
        DecisionKind.RESUME,
    ]
    assert all(isinstance(d, Decision) for d in (Approve(), Decline(), Resume(None)))
    assert Decline("why").reason == "why" and Approve().reason is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        Approve().args = {"id": "x"}  # type: ignore[misc]
