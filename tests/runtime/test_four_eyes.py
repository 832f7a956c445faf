"""Four eyes in the runtime: approvals counted by two replicas (two `Storage` objects on one database) at
the same moment run the tool exactly once, on SQLite and PostgreSQL; each approval binds to the arguments."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from bot.agent import ApprovalNotCountedError, ToolCallNotSuspendedError
from memory import PolicyChange, Storage
from tests.runtime.helpers import collect, finish_reason, make_agent, one, record_tool
from tests.support.scripted_model import call, reply, tool_calls

ROUNDS = 6


async def replicas(database_url: str, count: int = 2):
    stores = [Storage(database_url) for _ in range(count)]
    tools = [record_tool("delete-record") for _ in range(count)]
    agents = [make_agent([tools[i]], storage=stores[i]) for i in range(count)]
    return stores, tools, agents


@pytest.mark.parametrize("needed", [2, 3])
async def test_the_last_two_approvals_at_once_on_two_replicas_run_the_tool_once(model, database_url, needed):
    stores, tools, agents = await replicas(database_url)
    try:
        await stores[0].policies.set("delete-record", PolicyChange(approvals_required=needed))
        for round_ in range(ROUNDS):
            call_id = f"c{round_}"
            model.chat.push(tool_calls(call("delete-record", {"id": str(round_)}, id=call_id)), reply("Done."))
            approval = one(await collect(await agents[0].stream(f"delete {round_}")), "tool-call-approval")
            run_id = approval.run_id
            for early in ["U7", "U9"][: needed - 2]:  # all but the last two
                chunks = await collect(await agents[0].approve_tool_call(run_id=run_id, approver=early))
                assert finish_reason(chunks) == "suspended"

            async def approve(agent, who, run_id=run_id, call_id=call_id):
                stream = await agent.approve_tool_call(run_id=run_id, tool_call_id=call_id, approver=who)
                return finish_reason(await collect(stream))

            outcomes = await asyncio.gather(approve(agents[0], "U2"), approve(agents[1], "U3"))
            assert sorted(outcomes) == ["stop", "suspended"]  # one counted, one was the last: neither lost
            assert len(tools[0].calls) + len(tools[1].calls) == round_ + 1  # exactly once per call
            record = await agents[1].get_tool_call(run_id, call_id)
            assert record.state == "done" and sorted(record.approvals[-2:]) == ["U2", "U3"]
            assert len(record.approvals) == needed
            with pytest.raises(ToolCallNotSuspendedError):
                await agents[1].approve_tool_call(run_id=run_id, tool_call_id=call_id, approver="U1")
        lines = [e for e in await stores[1].audit_log.entries() if e.run_id is not None]
        assert [e.action for e in lines].count("executed") == ROUNDS
        assert [e.action for e in lines].count("approved") == ROUNDS * needed
    finally:
        for store in stores:
            await store.close()


async def test_an_approval_never_counts_for_arguments_changed_after_the_earlier_ones(model, storage):
    tool = record_tool("delete-record")
    agent = make_agent([tool], storage=storage)
    await storage.policies.set("delete-record", PolicyChange(approvals_required=2))
    model.chat.push(tool_calls(call("delete-record", {"id": "3"}, id="c1")))
    approval = one(await collect(await agent.stream("delete 3")), "tool-call-approval")
    await collect(await agent.approve_tool_call(run_id=approval.run_id, approver="U2"))

    # someone rewrites the stored call (arguments and fingerprint together) after the first approval
    from bot.agent import fingerprint

    async with storage.session() as session:
        await session.execute(
            sa.text("UPDATE tool_calls SET args = :args, fingerprint = :fp WHERE tool_call_id = 'c1'"),
            {"args": '{"id": "999"}', "fp": fingerprint("delete-record", {"id": "999"})},
        )
    with pytest.raises(ApprovalNotCountedError, match="not those the earlier approvals were given for"):
        await agent.approve_tool_call(run_id=approval.run_id, approver="U3")
    assert len(tool.calls) == 0


async def test_the_runtime_refuses_the_requester_a_nameless_approval_and_an_edit(model, storage):
    tool = record_tool("delete-record")
    agent = make_agent([tool], storage=storage)
    await storage.policies.set("delete-record", PolicyChange(approvals_required=2))
    model.chat.push(tool_calls(call("delete-record", {"id": "3"}, id="c1")))
    approval = one(
        await collect(await agent.stream("delete 3", resource_id="U1", thread_id="t1")), "tool-call-approval"
    )
    for options, why in [
        ({"approver": "U1"}, "requester's own approval does not count"),
        ({}, "name the approver"),
        ({"approver": "U2", "args": {"id": "4"}}, "cannot be edited"),
    ]:
        with pytest.raises(ApprovalNotCountedError, match=why):
            await agent.approve_tool_call(run_id=approval.run_id, **options)
    record = await agent.get_tool_call(approval.run_id, "c1")
    assert record.state == "awaiting_approval" and record.approvals == () and len(tool.calls) == 0
