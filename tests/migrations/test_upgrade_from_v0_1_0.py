"""A database created by the release v0.1.0 (commit a316773) upgrades in place with the current code:
the approval that was waiting in it is still listed, and approving it runs the tool once.

The databases come from fixtures made by v0.1.0 itself, committed next to the script that made them,
so the test needs no git tags: `tests/migrations/v0_1_0/bot.sqlite` (the SQLite file) and
`tests/migrations/v0_1_0/postgres.sql` (a plain-SQL dump). To regenerate them (needs the tag
`v0.1.0`, `pg_dump` and the local PostgreSQL), run

    python tests/migrations/v0_1_0/make_fixtures.py

which extracts the release with `git archive v0.1.0` and runs `v0_1_0/create_database.py` on it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import asyncpg
import pytest
import sqlalchemy as sa

from bot.agent import Agent, ToolCallNotSuspendedError
from bot.demo.migrations import SCHEMA as DEMO
from bot.slack.migrations import SCHEMA as SLACK
from bot.slack.stores import Conversations
from bot.slack.threads import SlackThread
from memory import Memory, Storage
from memory.migrations import SCHEMA as RUNTIME
from tests.support.scripted_model import reply
from tools import create_tool

FIXTURES = Path(__file__).parent / "v0_1_0"
THREAD_ID = "slack:T1:C1:1700000000.000100"  # what v0_1_0/create_database.py wrote
TOOL_CALL_ID = "call_v010"


@pytest.fixture
async def v0_1_0_database(database_url, tmp_path):
    """`database_url`, holding what a v0.1.0 bot left in it."""
    if database_url.startswith("sqlite"):
        shutil.copy(FIXTURES / "bot.sqlite", database_url.removeprefix("sqlite+aiosqlite:///"))
    else:
        connection = await asyncpg.connect(database_url.replace("postgresql+asyncpg", "postgresql"))
        try:
            await connection.execute((FIXTURES / "postgres.sql").read_text())
        finally:
            await connection.close()
    return database_url


def upgraded_agent(storage: Storage, executed: list[dict]) -> Agent:
    async def delete_record(input, ctx):
        executed.append(input)
        return {"deleted": True, "id": input["id"]}

    delete = create_tool(
        id="delete-record",
        description="Delete a record by ID",
        input_schema={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        require_approval=True,
        execute=delete_record,
    )
    return Agent(
        id="upgrade-agent",
        name="Upgrade Agent",
        instructions="You delete records when asked.",
        model="openai/test-model",
        tools=[delete],
        memory=Memory(storage),
    )


async def test_a_waiting_approval_survives_the_upgrade_and_can_be_approved(v0_1_0_database, model):
    storage = Storage(v0_1_0_database)
    executed: list[dict] = []
    agent = upgraded_agent(storage, executed)
    try:
        page = await agent.list_suspended_runs(thread_id=THREAD_ID)
        assert page.total == 1
        (run,) = page.runs
        (waiting,) = run.tool_calls
        assert (run.resource_id, waiting.tool_call_id, waiting.tool_name, waiting.args) == (
            "U1",
            TOOL_CALL_ID,
            "delete-record",
            {"id": "42"},
        )
        assert waiting.requires_approval

        model.chat.push(reply("Record 42 is deleted."))
        output = await agent.approve_tool_call_generate(run_id=run.run_id, tool_call_id=TOOL_CALL_ID)
        assert output.finish_reason == "stop" and output.text == "Record 42 is deleted."
        assert executed == [{"id": "42"}]
        with pytest.raises(ToolCallNotSuspendedError):
            await agent.approve_tool_call_generate(run_id=run.run_id, tool_call_id=TOOL_CALL_ID)
        assert executed == [{"id": "42"}]
        assert (await agent.list_suspended_runs(thread_id=THREAD_ID)).total == 0
    finally:
        await agent.aclose()
        await storage.close()


async def test_the_slack_and_demo_tables_of_v0_1_0_are_adopted_with_their_rows(v0_1_0_database):
    storage = Storage(v0_1_0_database)
    try:
        await storage.migrate(SLACK, DEMO)
        async with storage.engine.connect() as connection:
            for schema in (RUNTIME, SLACK, DEMO):
                version = await connection.scalar(sa.text(f"SELECT version_num FROM {schema.version_table}"))
                assert version == schema.head()
            records = await connection.scalar(sa.text("SELECT count(*) FROM demo_records"))
        assert records == 5
        conversation = await Conversations(storage).get(
            SlackThread(team_id="T1", channel="C1", thread_ts="1700000000.000100")
        )
        assert conversation is not None and conversation.started_by == "U1"
    finally:
        await storage.close()
