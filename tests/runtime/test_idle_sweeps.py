"""An idle replica's sweeps, on SQLite and PostgreSQL: on PostgreSQL they sleep while nothing is due and wake
when another replica creates work (`memory._notices`); on SQLite they poll. Either way, a call another replica
made wait is expired on time."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from bot.expiry import expire_forever
from bot.recovery import RecoveryLoop
from memory import PolicyChange, Storage
from tests.runtime.helpers import collect, make_agent, one, record_tool
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.statements import statements_of


async def test_a_call_another_replica_made_wait_is_expired_by_an_idle_sweep(model, storage, database_url, clock):
    tool = record_tool("delete-record")
    sweeping = make_agent([tool], storage=storage)
    sweep = asyncio.create_task(expire_forever(sweeping, every=0.2))
    other = Storage(database_url, clock=clock)
    try:
        await asyncio.sleep(1.0)  # the sweep found nothing to do: on PostgreSQL it sleeps until told
        await other.policies.set("delete-record", PolicyChange(expires_after=1))
        model.chat.push(tool_calls(call("delete-record", {"id": "3"}, id="c1")), reply("It expired."))
        asking = make_agent([tool], storage=other)
        approval = one(await collect(await asking.stream("delete 3")), "tool-call-approval")
        async with asyncio.timeout(8):
            while (await asking.get_tool_call(approval.run_id, "c1")).state != "expired":
                await asyncio.sleep(0.1)
        assert len(tool.calls) == 0  # the tool never ran
    finally:
        sweep.cancel()
        await asyncio.gather(sweep, return_exceptions=True)
        await other.close()


async def test_an_idle_replica_s_runtime_sweeps_make_no_statement_on_postgres(model, storage):
    if storage.is_sqlite:
        pytest.skip("SQLite has no notices: its sweeps poll")
    agent = make_agent([record_tool("delete-record")], storage=storage)
    expiry = asyncio.create_task(expire_forever(agent, every=0.2))
    recovery = RecoveryLoop(agent, every=0.2, stale_after=30)
    try:
        await asyncio.sleep(1.5)  # the first passes, and the one listening starts
        with statements_of(storage) as statements:
            await asyncio.sleep(2.0)  # polling every 0.2 s, two sweeps would make dozens
        assert statements == []
    finally:
        expiry.cancel()
        await asyncio.gather(expiry, return_exceptions=True)
        await recovery.stop()


async def test_a_replica_s_own_finished_run_wakes_none_of_its_sweeps_on_postgres(model, storage):
    """The replica ran the run itself: nothing of it is left to its sweeps, and a lease it wrote goes stale
    `stale_after` after it at the soonest, so its own notices wake neither sweep meanwhile."""
    if storage.is_sqlite:
        pytest.skip("SQLite has no notices: its sweeps poll")
    agent = make_agent([record_tool("delete-record")], storage=storage)
    expiry = asyncio.create_task(expire_forever(agent, every=0.2))
    recovery = RecoveryLoop(agent, every=0.2, stale_after=30)
    try:
        await asyncio.sleep(1.5)  # the first passes, and the one listening starts
        model.chat.push(reply("Hello."))
        await collect(await agent.stream("hello"))  # a run inserted, then finished: two notices of `runs`
        with statements_of(storage) as statements:
            await asyncio.sleep(2.0)  # woken by those notices, two sweeps polling every 0.2 s pass at once
        assert statements == []
    finally:
        expiry.cancel()
        await asyncio.gather(expiry, return_exceptions=True)
        await recovery.stop()


async def test_a_call_this_replica_made_wait_is_expired_on_time_by_its_own_idle_sweep(model, storage):
    """Its own notice does not wake the sweep at once, but the deadline the call got (the policy's expiry)
    is still met."""
    tool = record_tool("delete-record")
    agent = make_agent([tool], storage=storage)
    await storage.policies.set("delete-record", PolicyChange(expires_after=1))
    sweep = asyncio.create_task(expire_forever(agent, every=0.2))
    try:
        await asyncio.sleep(1.0)  # the sweep found nothing to do: on PostgreSQL it sleeps until something is due
        model.chat.push(tool_calls(call("delete-record", {"id": "3"}, id="c1")), reply("It expired."))
        approval = one(await collect(await agent.stream("delete 3")), "tool-call-approval")
        async with asyncio.timeout(5):
            while (await agent.get_tool_call(approval.run_id, "c1")).state != "expired":
                await asyncio.sleep(0.1)
        assert len(tool.calls) == 0
    finally:
        sweep.cancel()
        await asyncio.gather(sweep, return_exceptions=True)


async def test_an_idle_sweep_writes_down_a_delegation_s_end_when_it_comes_and_looks_no_sooner(model, storage, clock):
    """The expiry sweep writes down the end of a delegation whose time ran out; where notices are heard it
    writes (a transaction of three statements) only once the end it read has come."""
    agent = make_agent([record_tool("delete-record")], storage=storage)
    ends_at = clock.now() + timedelta(seconds=1.5)
    await storage.delegations.create(delegator="U1", delegate="U2", ends_at=ends_at, by="U1", via="test")
    sweep = asyncio.create_task(expire_forever(agent, every=0.2))
    try:
        with statements_of(storage) as statements:
            async with asyncio.timeout(6):
                while not [e for e in await storage.audit_log.entries() if e.action == "delegation_ended"]:
                    await asyncio.sleep(0.1)
        assert clock.now() >= ends_at
        writes = [statement for statement in statements if statement.upper().startswith("UPDATE DELEGATIONS")]
        if not storage.is_sqlite:  # the first pass, then the one at the end: not one every 0.2 s
            assert len(writes) == 2, writes
    finally:
        sweep.cancel()
        await asyncio.gather(sweep, return_exceptions=True)


async def test_a_sweep_cancelled_as_a_notice_comes_stops(model, storage):
    """A shutdown cancels the sweeps; one that is woken by a notice in the same moment must still stop (with
    Python 3.11's `asyncio.wait_for` the cancellation was lost and the sweep slept on for ever)."""
    if storage.is_sqlite:
        pytest.skip("SQLite has no notices: its sweeps sleep")
    agent = make_agent([record_tool("delete-record")], storage=storage)
    sweep = asyncio.create_task(expire_forever(agent, every=0.2))
    try:
        async with asyncio.timeout(5):
            while not storage.notices.listening:
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # the first pass done: it waits for a notice
        storage.notices._heard("tool_calls")  # another replica's notice, heard as the shutdown comes
        sweep.cancel()
        async with asyncio.timeout(5):
            await asyncio.gather(sweep, return_exceptions=True)
        assert sweep.cancelled()
    finally:
        sweep.cancel()
