"""Standing grants in the runtime, on SQLite and PostgreSQL: a grant holds only under the policy it was given
under. Any change to a field it rests on (mode, approvers, self-approval, approvals required, grant time),
changed and then changed back, leaves the next call in the thread asking; the grant ended with the first
change, audited `grant_revoked` by `system` once, saying what changed."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select, text, update

from bot.agent import Approve, GrantNotAllowedError, GrantRequest
from memory import Memory, PolicyChange
from memory._grants import end_grants_of_tool
from memory.tables import PolicyRow
from tests.runtime.helpers import collect, decide, finish_reason, make_agent, one, record_tool
from tests.support.scripted_model import call, reply, tool_calls

THREAD, REQUESTER = "thread-授权", "U1"

AND_BACK = {
    "mode": (PolicyChange(mode="disabled"), PolicyChange(mode="inherit"), "mode inherit -> disabled"),
    "approvers": (PolicyChange(approvers=["U7"]), PolicyChange(approvers=[]), "approvers anyone"),
    "self_approval": (
        PolicyChange(self_approval=False),
        PolicyChange(self_approval=True),
        "self-approval allowed -> refused",
    ),
    "approvals_required": (
        PolicyChange(approvals_required=2),
        PolicyChange(approvals_required=1),
        "approvals required 1 -> 2",
    ),
    "grant_seconds": (PolicyChange(grant_seconds=0), PolicyChange(grant_seconds=60), "grant time 3600 s -> 0"),
}


async def granted(agent, model, *, granter: str) -> str:
    """Ask to delete record 1 in THREAD, approve it with a standing grant by `granter`; the grant's call id."""
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")), reply("已删除 1。"))
    chunks = await collect(await agent.stream("删除 1", thread_id=THREAD, resource_id=REQUESTER))
    approval = one(chunks, "tool-call-approval")
    done = await decide(agent.decide(approval.run_id, "c1", Approve(grant=GrantRequest()), decided_by=granter))
    assert finish_reason(done) == "stop"
    return "c1"


async def next_call(agent, model) -> str:
    """Ask to delete record 2 in the same thread: how the turn finished ("suspended": it asks)."""
    model.chat.push(tool_calls(call("delete-record", {"id": "2"}, id="c2")), reply("已删除 2。"))
    return finish_reason(await collect(await agent.stream("删除 2", thread_id=THREAD, resource_id=REQUESTER)))


@pytest.mark.parametrize("field", list(AND_BACK))
async def test_a_change_and_back_of_what_a_grant_rests_on_ends_it(model, storage, field):
    tool = record_tool("delete-record", require_approval=True)
    agent = make_agent([tool], memory=Memory(storage))
    await storage.policies.set("delete-record", PolicyChange(grant_seconds=3600))
    # the requester's own grant, so that refusing self-approval is a change it rests on too
    call_id = await granted(agent, model, granter=REQUESTER if field == "self_approval" else "U2")

    change, back, reason = AND_BACK[field]
    await storage.policies.set("delete-record", change, actor="U9", via="home")
    await storage.policies.set("delete-record", back, actor="U9", via="home")

    assert await next_call(agent, model) == "suspended" and len(tool.calls.inputs) == 1
    assert await storage.grants.live() == []
    (revoked,) = [e for e in await storage.audit_log.entries() if e.action == "grant_revoked"]
    assert (revoked.actor, revoked.via, revoked.tool_call_id, revoked.policy_version) == ("system", "home", call_id, 2)
    assert "the tool's policy changed: " + reason in revoked.detail


async def test_a_change_of_what_only_waiting_calls_see_keeps_the_grant(model, storage):
    tool = record_tool("delete-record", require_approval=True)
    agent = make_agent([tool], memory=Memory(storage))
    await storage.policies.set("delete-record", PolicyChange(grant_seconds=3600))
    await granted(agent, model, granter="U2")

    await storage.policies.set("delete-record", PolicyChange(expires_after=600, escalate_to="C2", escalate_after=60))
    await storage.policies.set("delete-record", PolicyChange(grant_seconds=3600, approvers=[], mode="inherit"))

    assert await next_call(agent, model) == "stop" and len(tool.calls.inputs) == 2
    actions = [e.action for e in await storage.audit_log.entries()]
    assert "grant_used" in actions and "grant_revoked" not in actions


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_grant_whose_policy_changes_while_it_is_decided_is_refused(model, storage, database_url):
    """The decision reads the policy, then a policy change commits before the grant is stored: the grant
    would stand under a policy it was never checked against. (PostgreSQL, where the wait on the policy
    row's lock can be seen; on SQLite the same check runs under the write lock.)"""
    tool = record_tool("delete-record", require_approval=True)
    agent = make_agent([tool], memory=Memory(storage))
    await storage.policies.set("delete-record", PolicyChange(grant_seconds=3600))
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")), reply("已删除 1。"))
    approval = one(
        await collect(await agent.stream("删除 1", thread_id=THREAD, resource_id=REQUESTER)), "tool-call-approval"
    )

    # another replica's policy change, held open halfway through what PolicyStore.set does
    async with storage.session() as session:
        row = PolicyRow.tool_name == "delete-record"
        await session.execute(select(PolicyRow).where(row).with_for_update())
        await session.execute(update(PolicyRow).where(row).values(grant_seconds=7200, version=PolicyRow.version + 1))
        await end_grants_of_tool(
            session, "delete-record", now=storage.clock.now(), reason="grant time", via="home", policy_version=2
        )
        deciding = asyncio.create_task(
            decide(agent.decide(approval.run_id, "c1", Approve(grant=GrantRequest()), decided_by="U2"))
        )
        await waiting_on_a_lock(storage, deciding)

    with pytest.raises(GrantNotAllowedError, match=r"policy changed while you decided \(version 1 -> 2\)"):
        await deciding
    assert await storage.grants.live() == [] and tool.calls.inputs == []
    assert (await agent.list_suspended_runs(thread_id=THREAD)).total == 1  # it still waits, nothing decided
    assert "approved" not in [e.action for e in await storage.audit_log.entries()]

    # looked at again, under the policy in force now, the same click gives a grant of that version
    done = await decide(agent.decide(approval.run_id, "c1", Approve(grant=GrantRequest()), decided_by="U2"))
    assert finish_reason(done) == "stop"
    (grant,) = await storage.grants.live()
    assert (grant.policy_version, (grant.expires_at - grant.granted_at).total_seconds()) == (2, 7200)


async def waiting_on_a_lock(storage, task: asyncio.Task) -> None:
    """Until a session of this database waits for a row lock (or `task` ended without waiting)."""
    probe = text(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
    )
    for _ in range(500):
        async with storage.read() as connection:
            if (await connection.execute(probe)).scalar() or task.done():
                return
        await asyncio.sleep(0.02)
    raise AssertionError("nothing waited for the policy row")
