"""The waiting calls' messages and the App Homes in as few statements as they take (issue 42): a message's row
is what was written (not read back), a message comes with its copies, a Home's digest with its opening."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import insert

from bot.slack.stores import HomeViews, SlackStores, WaitingCallMessages, prepare_slack_tables
from bot.slack.threads import SlackThread
from memory import new_grant_values
from memory.tables import GrantRow, utcnow
from tests.support.statements import statements_of

pytestmark = pytest.mark.both_databases

THREAD = SlackThread(team_id="T1", channel="C1", thread_ts="1.0")


@pytest.fixture
async def slack_storage(storage):
    await prepare_slack_tables(storage)
    return storage


async def _record(messages: WaitingCallMessages, tool_call_id: str = "call-1", **extra):
    return await messages.record(
        kind="approval", run_id="run-1", tool_call_id=tool_call_id, tool_name="delete-record", args={"id": 3},
        thread=THREAD, requester="U1", request_text="delete record 3", **extra,
    )  # fmt: skip


async def test_a_messages_row_is_what_was_written_not_read_back(slack_storage):
    messages = WaitingCallMessages(slack_storage)
    since = utcnow() - timedelta(seconds=5)
    with statements_of(slack_storage, begins=False) as seen:
        row, mine, inserted = await _record(messages, waiting_since=since)
    assert mine and inserted
    assert [statement.split(" ")[0] for statement in seen] == ["INSERT"], seen
    stored = await messages.get(row.id)
    columns = [column.key for column in stored.__table__.columns]
    assert {key: getattr(row, key) for key in columns} == {key: getattr(stored, key) for key in columns}
    again, mine, inserted = await _record(messages, waiting_since=since, claim=False)  # the same wait, by the recovery
    assert (again.id, mine, inserted) == (row.id, False, False)  # the first's row, read


async def test_a_messages_ts_and_copies_are_read_in_one_statement(slack_storage):
    messages = WaitingCallMessages(slack_storage)
    row, *_ = await _record(messages)
    await messages.set_ts(row.id, "2.0")
    await messages.set_ts(row.id, "3.0")  # a retried post's copy
    await messages.add_copy(row.id, "4.0", channel="D9", escalated_to="U9")  # an escalation's, in a DM
    assert row.ts is None  # as recorded
    with statements_of(slack_storage, begins=False) as seen:
        shown = await messages.every_message(row)
    assert len(seen) == 1, seen
    assert [tuple(message) for message in shown] == [("C1", "2.0", None), ("C1", "3.0", None), ("D9", "4.0", "U9")]
    assert row.ts == "2.0"  # brought up to the ts stored now


async def test_a_threads_open_messages_come_with_a_closed_calls_in_one_statement(slack_storage):
    messages = WaitingCallMessages(slack_storage)
    decided, *_ = await _record(messages, tool_call_id="call-1")
    waiting, *_ = await _record(messages, tool_call_id="call-2")
    for row, ts in ((decided, "2.0"), (waiting, "3.0")):
        await messages.set_ts(row.id, ts)
    await messages.set_ts(decided.id, "4.0")  # a copy
    await messages.close(decided.id)
    with statements_of(slack_storage, begins=False) as seen:
        found = await messages.open_in_thread(THREAD.thread_id, with_call=("run-1", "call-1"))
    assert len(seen) == 1, seen
    shown = {row.tool_call_id: [message.ts for message in messages_of] for row, messages_of in found}
    assert shown == {"call-1": ["2.0", "4.0"], "call-2": ["3.0"]}
    only_open = await messages.open_in_thread(THREAD.thread_id)
    assert [(row.tool_call_id, [m.ts for m in of]) for row, of in only_open] == [("call-2", ["3.0"])]


async def test_opening_the_home_says_what_was_last_published_in_one_statement(slack_storage):
    homes = HomeViews(slack_storage)
    with statements_of(slack_storage, begins=False) as seen:
        assert await homes.opened("U1") is None  # never published
    assert [statement.split(" ")[0] for statement in seen] == ["INSERT"], seen
    await homes.published("U1", "digest-1")
    assert await homes.opened("U1") == "digest-1"  # opened again: still refreshed, and its digest known
    assert await homes.digests() == {"U1": "digest-1"}


async def test_a_homes_refresh_reads_what_every_home_shows_in_one_statement(slack_storage):
    stores = SlackStores.on(slack_storage)
    await stores.home_views.opened("U1")
    await stores.home_views.opened("U2")
    await stores.home_views.published("U2", "digest-2")
    first, *_ = await _record(stores.messages, tool_call_id="call-1")
    again, *_ = await _record(stores.messages, tool_call_id="call-1")  # the same call's later message
    other, *_ = await _record(stores.messages, tool_call_id="call-2")
    decided, *_ = await _record(stores.messages, tool_call_id="call-3")
    await stores.messages.close(decided.id)
    question, *_ = await stores.messages.record(
        kind="question", run_id="run-1", tool_call_id="call-4", tool_name="get-weather", args={},
        thread=THREAD, requester="U1", request_text=None,
    )  # fmt: skip
    now = slack_storage.clock.now()
    grants = [
        _grant(slack_storage, agent_id="agent", granted_by="U2", seconds=600, now=now),
        _grant(slack_storage, agent_id="agent", granted_by="U3", seconds=60, now=now),
        _grant(slack_storage, agent_id="other-agent", granted_by="U2", seconds=600, now=now),
        _grant(slack_storage, agent_id="agent", granted_by="U4", seconds=-1, now=now),  # ended
    ]
    async with slack_storage.transaction() as connection:
        await connection.execute(insert(GrantRow), grants)
    later = await slack_storage.delegations.create(
        delegator="U1", delegate="U2", ends_at=now + timedelta(days=2), by="U1", via="slack"
    )
    sooner = await slack_storage.delegations.create(
        delegator="U3", delegate="U4", ends_at=now + timedelta(days=1), by="U3", via="slack"
    )
    ended = await slack_storage.delegations.create(
        delegator="U5", delegate="U6", ends_at=now + timedelta(days=1), by="U5", via="slack"
    )
    await slack_storage.delegations.end(ended.id, by="U5", via="slack")

    with statements_of(slack_storage, begins=False) as seen:
        read = await stores.home_read("agent", homes=True)
    assert len(seen) == 1, seen
    assert read.homes == {"U1": None, "U2": "digest-2"}
    assert [row.id for row in read.approvals] == [row.id for row in await stores.messages.open_approvals()]
    assert [row.id for row in read.approvals] == [first.id, other.id]
    assert read.approvals[0].args == {"id": 3} and read.approvals[0].created_at == first.created_at
    assert read.grants == await slack_storage.grants.live(agent_id="agent")
    assert [grant.granted_by for grant in read.grants] == ["U3", "U2"]
    assert read.delegations == await slack_storage.delegations.in_force()
    assert read.delegations == [sooner, later]

    with statements_of(slack_storage, begins=False) as seen:
        alike = await stores.home_read("agent", homes=False)
    assert len(seen) == 1, seen
    assert alike.homes == {}
    assert [row.id for row in alike.approvals] == [row.id for row in read.approvals]
    assert (alike.grants, alike.delegations) == (read.grants, read.delegations)


def _grant(storage, *, agent_id: str, granted_by: str, seconds: int, now) -> dict:
    return new_grant_values(
        agent_id=agent_id, tool_name="delete-record", thread_id="T1:C1:1.0", resource_id="U1",
        granted_by=granted_by, run_id="run-1", tool_call_id="call-1", args_fingerprint=None, policy_version=1,
        now=now, seconds=seconds,
    )  # fmt: skip
