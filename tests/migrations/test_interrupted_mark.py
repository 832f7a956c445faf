"""0009 moves the interrupted mark out of `suspend_payload` into `tool_calls.interrupted`: a call a
recovery interrupted before the upgrade still waits as an interrupted approval after it, and the
downgrade puts the mark back where the older code reads it."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import command

from bot.agent import Agent
from memory import Storage
from memory.migrations import SCHEMA as RUNTIME

BEFORE = "0008_approval_quorum"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
ASKED = {"message": "Löschen? 削除しますか？ 삭제할까요? حذف؟", "suspended_with": {"question": "为什么?"}}


async def migrate_to(storage: Storage, revision: str, *, down: bool = False) -> None:
    step = command.downgrade if down else command.upgrade
    async with storage.engine.begin() as connection:
        await connection.run_sync(lambda sync: step(RUNTIME.config(sync), revision))


async def store_calls_as_0008_did(storage: Storage) -> None:
    """An interrupted call (the key in its payload) and a question whose payload merely names the word."""
    async with storage.engine.begin() as connection:
        runs, calls = await connection.run_sync(
            lambda sync: [sa.Table(name, sa.MetaData(), autoload_with=sync) for name in ("runs", "tool_calls")]
        )
        await connection.execute(
            runs.insert().values(
                id="r1", agent_id="a", uses_memory=False, status="suspended", step=1, max_steps=5,
                request_context={}, created_at=NOW, updated_at=NOW,
            )
        )  # fmt: skip
        common = dict(
            run_id="r1", agent_id="a", step=1, tool_name="delete-record", args={"id": "7"}, is_error=False,
            created_at=NOW, updated_at=NOW, suspended_at=NOW, approval_count=0,
        )  # fmt: skip
        await connection.execute(
            calls.insert(),
            [
                {**common, "tool_call_id": "c1", "position": 0, "state": "awaiting_approval",
                 "requires_approval": True, "suspend_payload": {"interrupted": True, **ASKED}},
                {**common, "tool_call_id": "c2", "position": 1, "state": "suspended",
                 "requires_approval": False, "suspend_payload": {"question": "was it \"interrupted\"?"}},
            ],
        )  # fmt: skip


async def stored_payloads(storage: Storage) -> dict[str, object]:
    async with storage.engine.connect() as connection:
        calls = await connection.run_sync(lambda sync: sa.Table("tool_calls", sa.MetaData(), autoload_with=sync))
        rows = await connection.execute(sa.select(calls.c.tool_call_id, calls.c.suspend_payload))
        return {row.tool_call_id: row.suspend_payload for row in rows}


async def test_an_interrupted_call_stays_interrupted_across_the_upgrade_and_back(database_url):
    storage = Storage(database_url)
    try:
        await migrate_to(storage, BEFORE)
        await store_calls_as_0008_did(storage)

        await migrate_to(storage, "head")

        assert await stored_payloads(storage) == {"c1": ASKED, "c2": {"question": 'was it "interrupted"?'}}
        agent = Agent(id="a", name="A", instructions="-", model="openai/m", storage=storage)
        interrupted, question = await agent.get_tool_call("r1", "c1"), await agent.get_tool_call("r1", "c2")
        assert interrupted.interrupted and not question.interrupted
        assert interrupted.suspend_payload == {"interrupted": True, **ASKED}  # the contract's shape, as before
        assert question.suspend_payload == {"question": 'was it "interrupted"?'}

        await migrate_to(storage, BEFORE, down=True)

        assert (await stored_payloads(storage))["c1"] == {"interrupted": True, **ASKED}
    finally:
        await storage.close()
