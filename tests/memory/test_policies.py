"""Tool policies and the audit trail in storage, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from memory import AuditAction, AuditVia, PolicyChange, PolicyError, PolicyMode, Storage, ToolPolicy
from memory.tables import utcnow


async def test_a_tool_without_a_stored_policy_has_the_defaults(storage: Storage):
    policy = await storage.policies.get("delete-record")
    assert policy == ToolPolicy(tool_name="delete-record")
    assert (policy.mode, policy.approvers, policy.self_approval, policy.expires_after, policy.version) == (
        PolicyMode.INHERIT,
        (),
        True,
        None,
        0,
    )


async def test_a_change_patches_and_bumps_the_version(storage: Storage):
    first = await storage.policies.set(
        "delete-record",
        PolicyChange(mode="require_approval", approvers=["U1", "S2"], self_approval=False, expires_after=300),
        actor="UADMIN",
    )
    assert (first.mode, first.approvers, first.self_approval, first.expires_after, first.version) == (
        PolicyMode.REQUIRE_APPROVAL,
        ("U1", "S2"),
        False,
        300,
        1,
    )
    assert first.users == ("U1",) and first.groups == ("S2",) and first.updated_by == "UADMIN"

    kept = await storage.policies.set("delete-record", PolicyChange(mode="disabled"))
    assert (kept.mode, kept.approvers, kept.self_approval, kept.expires_after, kept.version) == (
        PolicyMode.DISABLED,
        ("U1", "S2"),
        False,
        300,
        2,
    )

    cleared = await storage.policies.set("delete-record", PolicyChange(approvers=[], expires_after=0))
    assert (cleared.approvers, cleared.expires_after, cleared.version) == ((), None, 3)
    assert await storage.policies.get("delete-record") == cleared
    assert [p.tool_name for p in await storage.policies.all()] == ["delete-record"]
    assert await storage.policies.with_expiry() == []


async def test_concurrent_changes_each_get_their_own_version(database_url):
    stores = [Storage(database_url) for _ in range(2)]
    try:
        await stores[0].migrate()
        results = await asyncio.gather(
            *(stores[i % 2].policies.set("issue-refund", PolicyChange(expires_after=10 + i)) for i in range(6))
        )
        assert sorted(p.version for p in results) == [1, 2, 3, 4, 5, 6]
        assert (await stores[1].policies.get("issue-refund")).version == 6
    finally:
        for store in stores:
            await store.close()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (PolicyChange(mode="sometimes"), "unknown mode 'sometimes'"),
        (PolicyChange(approvers=["alice"]), "not a Slack user or user-group ID: alice"),
        (PolicyChange(expires_after=-5), "-5 is negative: an expiry is 1 second to 365 days"),
    ],
)
async def test_bad_changes_are_refused_and_change_nothing(storage: Storage, change, message):
    await storage.policies.set("delete-record", PolicyChange(approvers=["U1"]))
    with pytest.raises(PolicyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        await storage.policies.set("delete-record", change)
    policy = await storage.policies.get("delete-record")
    assert (policy.approvers, policy.version) == (("U1",), 1)


async def test_the_audit_trail_reads_oldest_first_and_filters(storage: Storage):
    for action, tool in [("requested", "delete-record"), ("approved", "delete-record"), ("requested", "issue-refund")]:
        await storage.audit_log.record(
            run_id="r1",
            tool_call_id="c1",
            tool_name=tool,
            action=action,
            actor="U1" if action == "approved" else None,
            via=AuditVia.BUTTON if action == "approved" else AuditVia.RUNTIME,
            args_fingerprint="f" * 64,
            policy_version=2,
        )
    entries = await storage.audit_log.entries()
    assert [(e.action, e.tool_name, e.actor, e.via) for e in entries] == [
        ("requested", "delete-record", "system", "runtime"),
        ("approved", "delete-record", "U1", "button"),
        ("requested", "issue-refund", "system", "runtime"),
    ]
    assert all(e.policy_version == 2 and e.args_fingerprint == "f" * 64 for e in entries)
    assert [e.action for e in await storage.audit_log.entries(tool_name="delete-record")] == [
        AuditAction.REQUESTED,
        AuditAction.APPROVED,
    ]
    assert await storage.audit_log.entries(since=utcnow() + timedelta(seconds=1)) == []
    assert len(await storage.audit_log.entries(since=utcnow() - timedelta(minutes=1))) == 3
