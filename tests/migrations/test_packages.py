"""Each package owns its tables and migrations: a runtime-only user gets only the runtime's tables,
the Slack adapter creates its tables when it starts (never on the way of a call), the demo when it is used, several replicas can migrate one
database at once, and the migrated schema is exactly what the models declare."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from bot.demo.migrations import SCHEMA as DEMO
from bot.playground.migrations import SCHEMA as PLAYGROUND
from bot.slack.migrations import SCHEMA as SLACK
from bot.slack.stores import Conversations
from bot.slack.threads import SlackThread
from memory import Storage
from memory.migrations import SCHEMA as RUNTIME

ROOT = Path(__file__).resolve().parents[2]


def tables_of(schema) -> set[str]:
    """What a package's migrations create: the tables its models declare, and its version table."""
    return {*schema.metadata.tables, schema.version_table}


RUNTIME_TABLES, SLACK_TABLES, DEMO_TABLES = tables_of(RUNTIME), tables_of(SLACK), tables_of(DEMO)


async def table_names(storage: Storage) -> set[str]:
    async with storage.engine.connect() as connection:
        return set(await connection.run_sync(lambda sync: sa.inspect(sync).get_table_names()))


async def test_a_runtime_only_user_gets_only_the_runtime_tables(database_url):
    from bot.agent import Agent

    storage = Storage(database_url)
    try:
        agent = Agent(id="a", name="A", instructions="-", model="openai/m", storage=storage)
        page = await agent.list_suspended_runs()
        assert page.total == 0
        assert await table_names(storage) == RUNTIME_TABLES
    finally:
        await storage.close()


async def test_the_slack_adapter_creates_its_tables_when_it_starts(database_url):
    """Building the app creates nothing and a store does not migrate on its way; the app's start does."""
    from aiohttp import web

    from bot.agent import Agent
    from bot.slack import build_web_app, create_slack_app

    storage = Storage(database_url)
    thread = SlackThread(team_id="T1", channel="C1", thread_ts="1.0")
    try:
        await storage.migrate()
        agent = Agent(id="a", name="A", instructions="-", model="openai/m", storage=storage)
        app = create_slack_app(agent=agent, storage=storage, token="xoxb-test", signing_secret="secret")
        runner = web.AppRunner(build_web_app(app))
        with pytest.raises(sa.exc.DBAPIError):
            await Conversations(storage).get(thread)
        assert await table_names(storage) == RUNTIME_TABLES
        await runner.setup()  # the web app's startup
        try:
            assert await table_names(storage) == RUNTIME_TABLES | SLACK_TABLES
            assert await Conversations(storage).get(thread) is None
        finally:
            await runner.cleanup()
    finally:
        await storage.close()


async def test_the_demo_creates_its_tables_only_where_it_runs(database_url):
    from bot.demo import seed_demo_records

    storage = Storage(database_url)
    try:
        await storage.migrate(SLACK)
        assert not (await table_names(storage)) & DEMO_TABLES
        await seed_demo_records(storage)
        assert await table_names(storage) == RUNTIME_TABLES | SLACK_TABLES | DEMO_TABLES
    finally:
        await storage.close()


def test_each_package_has_one_chain_of_revisions_and_its_own_tables():
    from alembic.script import ScriptDirectory

    for schema in (RUNTIME, SLACK, DEMO, PLAYGROUND):  # the head read from the files' text is Alembic's
        assert [schema.head()] == ScriptDirectory.from_config(schema.config()).get_heads()
    assert len({schema.version_table for schema in (RUNTIME, SLACK, DEMO, PLAYGROUND)}) == 4
    assert {"threads", "runs", "tool_calls"} <= RUNTIME_TABLES
    assert {"slack_events", "slack_tool_call_messages"} <= SLACK_TABLES and "demo_records" in DEMO_TABLES
    assert not RUNTIME_TABLES & SLACK_TABLES and not RUNTIME_TABLES & DEMO_TABLES and not SLACK_TABLES & DEMO_TABLES


@pytest.mark.parametrize("schema", [RUNTIME, SLACK, DEMO, PLAYGROUND], ids=lambda schema: schema.name)
async def test_the_migrated_tables_are_what_the_models_declare(database_url, schema):
    """A model changed without a migration (or the reverse) fails here."""
    storage = Storage(database_url)
    try:
        await storage.migrate(schema)
        owned = set(schema.metadata.tables)

        def differences(connection) -> list:
            context = MigrationContext.configure(
                connection,
                opts={
                    "include_name": lambda name, kind, _parent: kind != "table" or name in owned,
                    "compare_type": False,  # SQLite reports its own type names; the columns are what count
                },
            )
            return compare_metadata(context, schema.metadata)

        async with storage.engine.connect() as connection:
            assert await connection.run_sync(differences) == []
    finally:
        await storage.close()


async def test_the_schema_is_checked_once_per_process_and_database(database_url):
    """A new Storage on a database this process already migrated does not ask Alembic again."""
    first = Storage(database_url)
    await first.migrate()
    await first.close()

    second = Storage(database_url)
    statements: list[str] = []
    sa.event.listen(second.engine.sync_engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    try:
        await second.runs.get_run("nope")
    finally:
        await second.close()
    assert statements and not any("alembic_version" in statement for statement in statements), statements


async def test_several_replicas_migrating_one_database_at_once_all_succeed(database_url):
    """Four processes start on one empty database together: one migrates, the others wait for it."""
    command = [sys.executable, "-m", "memory", "upgrade", database_url, "bot.slack", "bot.demo"]
    processes = [
        await asyncio.create_subprocess_exec(
            *command, cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        for _ in range(4)
    ]
    outputs = [await process.communicate() for process in processes]
    for process, (out, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err.decode()
        assert b"schema up to date (runtime, slack, demo)" in out
    storage = Storage(database_url)
    try:
        assert await table_names(storage) == RUNTIME_TABLES | SLACK_TABLES | DEMO_TABLES
        async with storage.engine.connect() as connection:
            for schema in (RUNTIME, SLACK, DEMO):
                rows = (await connection.execute(sa.text(f"SELECT version_num FROM {schema.version_table}"))).all()
                assert rows == [(schema.head(),)]
    finally:
        await storage.close()


def test_python_m_memory_upgrade_says_what_it_migrates():
    done = subprocess.run(
        [sys.executable, "-m", "memory", "upgrade", "--help"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "runtime's migrations" in done.stdout and "bot.slack" in done.stdout


async def test_a_process_on_an_up_to_date_database_starts_without_alembic(database_url):
    """Once the version tables name every head, a new process has nothing to migrate and never imports
    Alembic; the first process, which had to migrate, did."""
    script = (
        "import asyncio, sys\n"
        "from memory import Storage\n"
        "from bot.slack.migrations import SCHEMA\n"
        "async def main():\n"
        f"    storage = Storage({database_url!r})\n"
        "    await storage.migrate(SCHEMA)\n"
        "    async with storage.session():\n"
        "        pass\n"
        "    await storage.close()\n"
        "asyncio.run(main())\n"
        "print('alembic' in sys.modules)\n"
    )

    async def alembic_imported() -> str:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode == 0, stderr.decode()[-2000:]
        return stdout.decode().strip()

    assert await alembic_imported() == "True"  # an empty database: migrated
    assert await alembic_imported() == "False"  # at every head: only read
