"""Tool policies in the runtime, and the audit trail of a whole cycle, on SQLite and PostgreSQL:
a disabled tool never runs (when proposed, or when it was disabled after approval was asked), a policy
adds an approval but never removes one, and an expiry declines a waiting call once across replicas."""

from __future__ import annotations

import asyncio

import pytest

from bot.agent import ToolCallNotSuspendedError
from memory import PolicyChange, Storage
from tests.runtime.helpers import (
    collect,
    decide,
    finish_reason,
    make_agent,
    one,
    record_tool,
    tool_messages,
)
from tests.support.scripted_model import call, reply, tool_calls


async def test_a_disabled_tool_is_not_run_and_the_model_is_told(model, storage):
    tool = record_tool("list-records", require_approval=False)
    agent = make_agent([tool], storage=storage)
    await storage.policies.set("list-records", PolicyChange(mode="disabled"))
    model.chat.push(tool_calls(call("list-records", {"id": "1"}, id="c1")), reply("That tool is disabled."))

    chunks = await collect(await agent.stream("list them"))

    assert finish_reason(chunks) == "stop" and len(tool.calls) == 0
    result = one(chunks, "tool-result")
    assert result.payload["is_error"] and "disabled by an admin" in result.payload["result"]["error"]
    assert "disabled by an admin" in tool_messages(model.chat.requests[-1])["c1"]


async def test_a_policy_adds_approval_to_a_tool_without_it(model, storage):
    tool = record_tool("list-records", require_approval=False)
    agent = make_agent([tool], storage=storage)
    await storage.policies.set("list-records", PolicyChange(mode="require_approval"))
    model.chat.push(tool_calls(call("list-records", {"id": "1"}, id="c1")), reply("Listed."))

    chunks = await collect(await agent.stream("list them"))
    assert finish_reason(chunks) == "suspended" and len(tool.calls) == 0
    approval = one(chunks, "tool-call-approval")
    assert approval.payload["tool_name"] == "list-records"

    done = await decide(agent.approve_tool_call(run_id=approval.run_id, tool_call_id="c1"))
    assert finish_reason(done) == "stop" and len(tool.calls) == 1


async def test_a_policy_never_removes_an_approval_the_code_asks_for(model, storage):
    tool = record_tool("delete-record", require_approval=True)
    agent = make_agent([tool], storage=storage)
    await storage.policies.set("delete-record", PolicyChange(mode="inherit", approvers=["U9"], expires_after=0))
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")))
    chunks = await collect(await agent.stream("delete 1"))
    assert finish_reason(chunks) == "suspended" and len(tool.calls) == 0


async def test_a_tool_disabled_after_approval_was_asked_does_not_run(model, storage):
    tool = record_tool("delete-record", require_approval=True)
    agent = make_agent([tool], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "7"}, id="c1")), reply("It is disabled now."))
    approval = one(await collect(await agent.stream("delete 7")), "tool-call-approval")

    await storage.policies.set("delete-record", PolicyChange(mode="disabled"))
    chunks = await decide(agent.approve_tool_call(run_id=approval.run_id, tool_call_id="c1", approver="U2"))

    assert len(tool.calls) == 0 and finish_reason(chunks) == "stop"
    assert "disabled by an admin" in one(chunks, "tool-result").payload["result"]["error"]
    assert "disabled by an admin" in tool_messages(model.chat.requests[-1])["c1"]
    actions = [(e.action, e.detail and "disabled" in e.detail) for e in await storage.audit_log.entries()]
    assert actions == [("requested", None), ("policy_changed", None), ("approved", None), ("blocked", True)]


async def test_expiry_with_two_replicas_declines_the_call_once_and_the_run_goes_on(model, database_url, clock):
    stores = [Storage(database_url, clock=clock) for _ in range(2)]
    tools = [record_tool("delete-record"), record_tool("delete-record")]
    background: list[list] = [[], []]
    replicas = [
        make_agent([tools[i]], storage=stores[i], hooks={"on_background_stream": background[i].append})
        for i in range(2)
    ]
    try:
        await stores[0].policies.set("delete-record", PolicyChange(expires_after=60))
        model.chat.push(tool_calls(call("delete-record", {"id": "3"}, id="c1")), reply("Nobody approved in time."))
        approval = one(await collect(await replicas[0].stream("delete 3")), "tool-call-approval")

        assert await asyncio.gather(*(r.expire_waiting_approvals() for r in replicas)) == [[], []]  # not yet
        clock.advance(60.5)
        expired = await asyncio.gather(*(r.expire_waiting_approvals() for r in replicas))
        assert sorted(len(e) for e in expired) == [0, 1]
        assert [x for e in expired for x in e] == [(approval.run_id, "c1")]

        (stream,) = background[0] + background[1]  # the winner handed the run's continuation on
        chunks = await collect(stream)
        assert finish_reason(chunks) == "stop"
        assert one(chunks, "tool-output-denied").payload["tool_call_id"] == "c1"
        assert "expired" in tool_messages(model.chat.requests[-1])["c1"]
        assert len(tools[0].calls) + len(tools[1].calls) == 0

        record = await replicas[1].get_tool_call(approval.run_id, "c1")
        assert (record.state, record.decision, record.outcome) == ("expired", "expire", "expired")
        with pytest.raises(ToolCallNotSuspendedError):
            await replicas[1].approve_tool_call(run_id=approval.run_id, tool_call_id="c1", approver="U2")
        assert await replicas[0].expire_waiting_approvals() == []
        entries = await stores[1].audit_log.entries()
        assert [(e.action, e.actor, e.via, e.policy_version) for e in entries] == [
            ("policy_changed", "system", "runtime", 1),
            ("requested", "system", "runtime", 1),
            ("expired", "system", "expiry", 1),
        ]
    finally:
        for store in stores:
            await store.close()


async def test_a_question_expires_with_its_tools_policy(model, storage, clock):
    """A tool's own question waits at most its tool policy's expiry, as an approval does (issue 44)."""
    from tools import create_tool

    async def ask(input, ctx):
        return await ctx.agent.suspend({"question": "Which city?"})

    tool = create_tool(id="get-weather", description="weather", input_schema={"type": "object"}, execute=ask)
    agent = make_agent([tool], storage=storage)
    await storage.policies.set("get-weather", PolicyChange(expires_after=1))
    model.chat.push(tool_calls(call("get-weather", {}, id="c1")))
    suspended = one(await collect(await agent.stream("weather?")), "tool-call-suspended")
    model.chat.push(reply("Nobody said which city."))
    clock.advance(0.5)
    assert await agent.expire_waiting_approvals() == []
    assert (await agent.get_tool_call(suspended.run_id, "c1")).state == "suspended"
    clock.advance(0.8)
    assert await agent.expire_waiting_approvals() == [(suspended.run_id, "c1")]
    record = await agent.get_tool_call(suspended.run_id, "c1")
    assert (record.state, record.outcome) == ("expired", "expired")
    assert await agent.expire_waiting_approvals() == []  # once


async def test_the_audit_rows_of_one_whole_cycle(model, storage):
    tool = record_tool("delete-record")
    agent = make_agent([tool], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "4"}, id="c1")), reply("Deleted record 5."))
    stream = await agent.stream("delete 4", request_context={"requester": "U1"})
    approval = one(await collect(stream), "tool-call-approval")
    await storage.policies.set("delete-record", PolicyChange(approvers=["U2"]))  # version 1 from now on

    await decide(
        agent.approve_tool_call(run_id=approval.run_id, tool_call_id="c1", approver="U2", args={"id": "5"}, via="home")
    )

    entries = await storage.audit_log.entries(run_id=approval.run_id)
    assert [(e.action, e.actor, e.via, e.policy_version) for e in entries] == [
        ("requested", "U1", "runtime", 0),
        ("edited", "U2", "home", 1),
        ("approved", "U2", "home", 1),
        ("executed", "system", "runtime", None),
    ]
    requested, edited, approved, executed = entries
    assert (edited.before, edited.after) == ({"id": "4"}, {"id": "5"})  # what the edit changed
    assert requested.args_fingerprint and edited.args_fingerprint != requested.args_fingerprint
    assert approved.args_fingerprint == edited.args_fingerprint == executed.args_fingerprint
    assert {e.tool_name for e in entries} == {"delete-record"}
    assert [e.at for e in entries] == sorted(e.at for e in entries)
    assert tool.calls.inputs == [{"id": "5"}]


async def test_the_bot_s_sweep_expires_on_its_own(model, storage):
    from bot.expiry import expire_forever

    tool = record_tool("delete-record")
    agent = make_agent([tool], storage=storage)
    await storage.policies.set("delete-record", PolicyChange(expires_after=1))
    model.chat.push(tool_calls(call("delete-record", {"id": "3"}, id="c1")), reply("It expired."))
    approval = one(await collect(await agent.stream("delete 3")), "tool-call-approval")
    sweep = asyncio.create_task(expire_forever(agent, every=0.2))
    try:
        for _ in range(100):
            if (await agent.get_tool_call(approval.run_id, "c1")).state == "expired":
                break
            await asyncio.sleep(0.05)
        assert (await agent.get_tool_call(approval.run_id, "c1")).state == "expired"
    finally:
        sweep.cancel()


async def test_a_disable_committed_after_the_approval_but_before_the_tool_starts_wins(model, storage, database_url):
    """Issue 17: the decision read the policy (not disabled), then an admin's disable committed (through
    another connection, as another replica or the CLI would), then the approved call reached its start:
    the tool does not run, the model is told, and the audit says `blocked`."""
    admin = Storage(database_url)
    tool = record_tool("delete-record", require_approval=True)

    async def disable_first(call):  # runs after the decision, right before the started mark
        await admin.policies.set("delete-record", PolicyChange(mode="disabled"), actor="UADMIN")

    agent = make_agent([tool], storage=storage, hooks={"before_tool_call": disable_first})
    model.chat.push(tool_calls(call("delete-record", {"id": "7"}, id="c1")), reply("It is disabled now."))
    try:
        approval = one(await collect(await agent.stream("delete 7")), "tool-call-approval")
        chunks = await decide(agent.approve_tool_call(run_id=approval.run_id, tool_call_id="c1", approver="U2"))
    finally:
        await admin.close()

    assert len(tool.calls) == 0 and finish_reason(chunks) == "stop"
    assert "disabled by an admin" in one(chunks, "tool-result").payload["result"]["error"]
    assert "disabled by an admin" in tool_messages(model.chat.requests[-1])["c1"]
    record = await agent.get_tool_call(approval.run_id, "c1")
    assert record.state == "failed"
    entries = await storage.audit_log.entries()
    assert [(e.action, e.policy_version) for e in entries] == [
        ("requested", 0),
        ("approved", 0),
        ("policy_changed", 1),
        ("blocked", 1),
    ]


async def test_a_disable_committed_before_a_call_without_approval_starts_wins(model, storage, database_url):
    admin = Storage(database_url)
    tool = record_tool("list-records", require_approval=False)

    async def disable_first(call):
        await admin.policies.set("list-records", PolicyChange(mode="disabled"))

    agent = make_agent([tool], storage=storage, hooks={"before_tool_call": disable_first})
    model.chat.push(tool_calls(call("list-records", {"id": "1"}, id="c1")), reply("That tool is disabled."))
    try:
        chunks = await collect(await agent.stream("list them"))
    finally:
        await admin.close()

    assert len(tool.calls) == 0 and finish_reason(chunks) == "stop"
    assert "disabled by an admin" in tool_messages(model.chat.requests[-1])["c1"]
    assert [e.action for e in await storage.audit_log.entries()] == ["policy_changed", "blocked"]
