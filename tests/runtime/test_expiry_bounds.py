"""An expiry is 1 second to 365 days (issue 17, item 4), and one bad policy row never stops the expiry
sweep for the other tools, on SQLite and PostgreSQL."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import insert

from memory import EXPIRY_LIMIT, PolicyChange, PolicyError
from memory.tables import PolicyRow, utcnow
from tests.runtime.helpers import collect, make_agent, one, record_tool
from tests.support.scripted_model import call, reply, tool_calls


@pytest.mark.parametrize("expiry", [100_000_000_000, EXPIRY_LIMIT + 1, -1, "²", "1" * 30, "1e3", " ", "+5", True])
async def test_an_expiry_outside_one_second_to_a_year_is_refused(storage, expiry):
    with pytest.raises(PolicyError) as refused:
        await storage.policies.set("delete-record", PolicyChange(expires_after=expiry))
    assert "\n" not in str(refused.value) and "365 days" in str(refused.value)
    assert (await storage.policies.get("delete-record")).version == 0  # nothing stored


async def test_the_bounds_themselves_are_accepted(storage):
    assert (await storage.policies.set("a", PolicyChange(expires_after=1))).expires_after == 1
    assert (await storage.policies.set("a", PolicyChange(expires_after=EXPIRY_LIMIT))).expires_after == EXPIRY_LIMIT
    assert (await storage.policies.set("a", PolicyChange(expires_after=0))).expires_after is None


async def test_bad_rows_already_stored_do_not_stop_the_sweep(model, storage, clock, caplog):
    """Rows an older version (or a hand) stored: an expiry too large for a date, a negative one, one over
    365 days, an unknown mode. The sweep skips each (logged once) and still expires delete-record."""
    await storage.migrate()
    too_large = 100_000_000_000 if storage.is_sqlite else 2_000_000_000  # PostgreSQL's INTEGER holds no more
    async with storage.session() as session:
        for tool, mode, expiry in [
            ("aaa-huge", "inherit", too_large),
            ("bbb-negative", "inherit", -5),
            ("ccc-unknown-mode", "sometimes", 1),
        ]:
            await session.execute(
                insert(PolicyRow).values(
                    tool_name=tool, mode=mode, approvers=[], self_approval=True, expires_after=expiry,
                    version=1, updated_at=utcnow(),
                )
            )  # fmt: skip
    tool = record_tool("delete-record")
    agent = make_agent([tool], storage=storage)
    await storage.policies.set("delete-record", PolicyChange(expires_after=1))
    model.chat.push(tool_calls(call("delete-record", {"id": "3"}, id="c1")), reply("It expired."))
    approval = one(await collect(await agent.stream("delete 3")), "tool-call-approval")
    clock.advance(1.2)

    with caplog.at_level(logging.ERROR, logger="bot.agent"):
        assert await agent.expire_waiting_approvals() == [(approval.run_id, "c1")]
        assert await agent.expire_waiting_approvals() == []
    assert (await agent.get_tool_call(approval.run_id, "c1")).state == "expired"
    skipped = [r.getMessage() for r in caplog.records if "skips the policy" in r.getMessage()]
    assert len(skipped) == 3, skipped  # once each, not once per sweep
    assert {name for name in ("aaa-huge", "bbb-negative", "ccc-unknown-mode") if any(name in m for m in skipped)} == {
        "aaa-huge",
        "bbb-negative",
        "ccc-unknown-mode",
    }
    assert len(tool.calls) == 0
